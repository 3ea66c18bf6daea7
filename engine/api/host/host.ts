/**
 * The host side of the contract (contract.ts) over one home folder: Electron main and `mars-lab serve` both create one
 * and differ only in transport and in how they start processes (runLauncher.ts).
 *
 * The host never trains or evaluates (docs/architecture.md "Processes"): runs and evaluations go to `run-worker` processes, and
 * what windows see of runs comes from the folders, through the home watcher, so runs started from a terminal show up
 * exactly like the host's own.
 *
 * This file builds the state the methods share (hostContext.ts) and composes the methods, one set per resource of the
 * contract: the host itself (systemMethods.ts), presets and configs (presetMethods.ts), run processes
 * (runProcessMethods.ts), runs (runMethods.ts), metric series (metricMethods.ts), trajectories (trajectoryMethods.ts),
 * checkpoints (checkpointMethods.ts), code-tree folders (codeTreeMethods.ts), a launch's time probe
 * (stepProbeMethods.ts), rollouts (views/rolloutCompare.ts),
 * studies (cluster/clusterMethods.ts) and evaluations with endpoints (endpointEval/endpointEvalMethods.ts).
 */
import path from 'node:path';
import type { ConfigIssue } from '../../runs/config/configSchema';
import { PRESETS_DIR } from '../../runs/presets/presets';
import { openRunIndex } from '../../runs/summary/runIndex';
import { watchHome, type HomeWatcher } from '../../runs/watch/watcher';
import type { ApiEvent, ApiMethod, ApiParsedRequest, ApiResponse } from '../contract/contract';
import { createClusterHost } from '../cluster/clusterMethods';
import { createEndpointEvalHost } from '../endpointEval/endpointEvalMethods';
import { createRolloutCompare } from '../views/rolloutCompare';
import type { RunLauncher } from '../workers/runLauncher';
import { createChatHost } from './chatMethods';
import { createCheckpointMethods } from './checkpointMethods';
import { createCodeTreeMethods } from './codeTreeMethods';
import { runDirOf, type HostContext } from './hostContext';
import { allowedRoots, defaultMaxWorkers, WorkerSlots } from './hostGuards';
import { toApiEvent } from './jsonValues';
import { resolveLaunch } from './launchResolve';
import { createMetricMethods } from './metricMethods';
import { createModelMethods } from './modelMethods';
import { createPresetMethods } from './presetMethods';
import { createRunMethods } from './runMethods';
import { createRunProcessMethods } from './runProcessMethods';
import { createStepProbeMethods } from './stepProbeMethods';
import { createSystemMethods } from './systemMethods';
import { keptTrajectoryLines } from './trajectoryLines';
import { createTrajectoryMethods } from './trajectoryMethods';
import { createLaunchWorker, type Launched } from './workerLaunch';

export { LaunchRefusedError } from './runProcessMethods';

export interface HostOptions {
  home: string;
  launcher: RunLauncher;
  transport: 'electron' | 'web';
  presetsDir?: string;
  /** Most worker processes (runs, evaluations) at once; default one per core (hostGuards.ts). */
  maxWorkers?: number;
}

export type ApiHandlers = { [M in ApiMethod]: (request: ApiParsedRequest<M>) => Promise<ApiResponse<M>> };

export interface Host {
  readonly home: string;
  readonly handlers: ApiHandlers;
  /**
   * Every event for every window; returns the unsubscribe function. `queued`, when the transport can tell, is how many
   * bytes of events this listener has yet to send: a backlog is read no faster than the slowest listener sends it.
   */
  subscribe(listener: (event: ApiEvent) => void, queued?: () => number): () => void;
  /** Stops watching; run processes keep running (they belong to their run folders, not to the window). */
  close(): Promise<void>;
}

/**
 * A listener with more than this still to send holds a backlog's next slice back (watcher.ts canTake): a copied-in run's
 * 77 MiB of logs queued in front of every answer on every socket.
 */
const BACKLOG_QUEUE_BYTES = 2 << 20;

export async function createHost(opts: HostOptions): Promise<Host> {
  const home = path.resolve(opts.home);
  const presetsDir = opts.presetsDir ?? PRESETS_DIR;
  const listeners = new Set<(event: ApiEvent) => void>();
  const queues = new Set<() => number>();
  const dirOf = runDirOf(home);
  /** Per run, the byte offsets and steps of trajectories.jsonl's lines (engine/runs/trajectories/trajectoryIndex.ts). */
  const trajectories = keptTrajectoryLines(dirOf);
  const broadcast = (event: ApiEvent): void => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // One window failing to take an event (closed socket) must not keep it from the others.
      }
    }
  };
  const watcher: HomeWatcher = await watchHome(
    home,
    (event) => {
      // A resume cut trajectories.jsonl back: its index is built again on the next request.
      if (event.type === 'fileReset' && event.file === 'trajectories.jsonl') trajectories.forget(event.runId);
      broadcast(toApiEvent(event));
    },
    { canTake: () => [...queues].every((queued) => queued() < BACKLOG_QUEUE_BYTES) },
  );
  const index = openRunIndex(home);
  /** Run processes this host started, by run id, while they live. */
  const running = new Map<string, Launched>();
  const slots = new WorkerSlots(opts.maxWorkers ?? defaultMaxWorkers());
  const roots = allowedRoots(home);
  // Studies (clusterMethods.ts): on a Ray cluster, its jobs' logs followed; here, its runs through this launcher and slots.
  const cluster = createClusterHost({ home, presetsDir, roots, broadcast, launcher: opts.launcher, slots });
  const rollouts = createRolloutCompare({ dirOf });

  const ctx: HostContext = {
    home,
    presetsDir,
    transport: opts.transport,
    index,
    running,
    roots,
    broadcast,
    dirOf,
    trajectoryLines: (runId) => trajectories.lines(runId),
    resolveLaunch: (req) => resolveLaunch(req, presetsDir, roots),
    launchWorker: createLaunchWorker({ launcher: opts.launcher, slots, running, broadcast }),
  };

  // Evaluations with endpoint agents launched from the app: run folders written by a worker (endpointEvalMethods.ts).
  const endpointEvals = createEndpointEvalHost({
    home,
    roots,
    resolveLaunch: ctx.resolveLaunch,
    launchWorker: ctx.launchWorker,
  });

  // The chat playground: a serve-model child per model talked to (chatMethods.ts).
  const chats = createChatHost(ctx, opts.launcher);
  // Code trees: the folders code tree --out wrote, and growing one from the app (codeTreeMethods.ts).
  const codeTrees = createCodeTreeMethods(ctx, opts.launcher, slots);
  // A launch's time a step, measured by `mars-lab probe` in a worker (stepProbeMethods.ts).
  const probes = createStepProbeMethods(ctx, opts.launcher, slots);

  const handlers: ApiHandlers = {
    ...createSystemMethods(ctx),
    ...createPresetMethods(ctx),
    ...createRunProcessMethods(ctx),
    ...createRunMethods(ctx),
    ...createMetricMethods(ctx),
    ...createTrajectoryMethods(ctx),
    ...createCheckpointMethods(ctx),
    ...createModelMethods(ctx),
    ...codeTrees.handlers,
    ...probes.handlers,
    ...chats.handlers,
    // Rollouts compared by prompt, without evaluating (imported runs have no checkpoints): rolloutCompare.ts.
    ...rollouts.handlers,
    ...cluster.handlers,
    ...endpointEvals.handlers,
  };

  return {
    home,
    handlers,
    subscribe(listener, queued) {
      listeners.add(listener);
      if (queued) queues.add(queued);
      return () => {
        listeners.delete(listener);
        if (queued) queues.delete(queued);
      };
    },
    async close() {
      listeners.clear();
      queues.clear();
      chats.close();
      codeTrees.close();
      probes.close();
      await cluster.close();
      await watcher.close();
    },
  };
}

export type { ConfigIssue };
