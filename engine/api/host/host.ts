/**
 * The host side of the contract (contract.ts) over one home folder: Electron main and `mars-lab serve` both create one
 * and differ only in transport and in how they start processes (runLauncher.ts).
 *
 * The host never trains or evaluates (docs/architecture.md "Processes"): runs and evaluations go to `run-worker` processes, and
 * what windows see of runs comes from the folders, through the home watcher, so runs started from a terminal show up
 * exactly like the host's own.
 */
import fs from 'node:fs';
import path from 'node:path';
import { applySets } from '../../runs/config/configOverrides';
import { runConfigJsonSchema } from '../../runs/config/configJsonSchema';
import {
  checkRunConfig,
  ConfigValidationError,
  type Checked,
  type ConfigIssue,
  type RunConfig,
} from '../../runs/config/configSchema';
import { decimate } from '../../runs/summary/decimate';
import { RUN_FILES, runDir } from '../../runs/folder/home';
import { readJsonl } from '../../runs/folder/jsonl';
import { type MetricPoint } from '../../runs/summary/metricPoint';
import { listPresets, loadPreset, PRESETS_DIR } from '../../runs/presets/presets';
import { readLiveTrajectories } from '../../runs/folder/liveTrajectories';
import { updateTrajectoryIndex, type TrajectoryIndex } from '../../runs/trajectories/trajectoryIndex';
import { marsPagesOf, withCapacities } from '../../runs/trajectories/trajectoryPages';
import { queryTrajectories } from '../../runs/trajectories/trajectoryQuery';
import { isCompleteCheckpoint, listCheckpoints, readRunMeta, writeRunLabels } from '../../runs/folder/runFolder';
import { openRunIndex } from '../../runs/summary/runIndex';
import { watchHome, type HomeWatcher, type RunEvent } from '../../runs/watch/watcher';
import { configSizeProblem } from '../../base/boundedText';
import { runWriter, shownStatus } from '../../runs/folder/writerProcess';
import { setOwn } from '../../runs/summary/metricPoint';
import { UserError } from '../../base/userError';
import { ENGINE_VERSION } from '../../base/version';
import type { ApiEvent, ApiMethod, ApiMetricPoint, ApiParsedRequest, ApiResponse } from '../contract/contract';
import { createClusterHost } from '../cluster/clusterMethods';
import { createEndpointEvalHost } from '../endpointEval/endpointEvalMethods';
import {
  allowedRoots,
  checkCheckpointDir,
  configPathIssues,
  defaultMaxWorkers,
  verifiedWriterPid,
  WorkerSlots,
} from './hostGuards';
import { metricColumns } from '../views/metricColumns';
import { createRolloutCompare } from '../views/rolloutCompare';
import { runsMetricSeries } from '../views/runsSeries';
import {
  workerComparisonSchema,
  workerEvalSchema,
  workerResult,
  type RunLauncher,
  type RunProcess,
} from '../workers/runLauncher';
import type { WorkerJob } from '../workers/runWorker';

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
  /** Every event for every window; returns the unsubscribe function. */
  subscribe(listener: (event: ApiEvent) => void): () => void;
  /** Stops watching; run processes keep running (they belong to their run folders, not to the window). */
  close(): Promise<void>;
}

/** A launch the contract refuses: the config's issues travel with it (the form shows them by field). */
export class LaunchRefusedError extends ConfigValidationError {}

// Compile-time tie between the watcher's events and the contract's: every RunEvent, with its metrics made JSON-safe,
// is an ApiEvent. If the watcher grows a member, this fails until contract.ts describes it.
type JsonSafe<E> = E extends { type: 'metrics'; points: MetricPoint[] }
  ? Omit<E, 'points'> & { points: ApiMetricPoint[] }
  : E;
const runEventFits: (event: JsonSafe<RunEvent>) => ApiEvent = (event) => event;
void runEventFits;

/** NaN and infinities become null, as JSON would make them, so IPC and the socket carry the same values. */
function jsonSafePoint(point: MetricPoint): ApiMetricPoint {
  const out: ApiMetricPoint = { step: point.step, time: Number.isFinite(point.time) ? point.time : null };
  for (const [name, value] of Object.entries(point)) {
    if (name !== 'step' && name !== 'time') out[name] = Number.isFinite(value) ? value : null;
  }
  return out;
}

function jsonSafeNumbers<T extends Record<string, number>>(record: T): Record<string, number | null> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, Number.isFinite(v) ? v : null]));
}

function toApiEvent(event: RunEvent): ApiEvent {
  if (event.type === 'metrics') return { ...event, points: event.points.map(jsonSafePoint) };
  return event;
}

interface Launched {
  process: RunProcess;
  stderr: string;
}

const STDERR_KEEP = 4000;
/** Runs whose trajectories.jsonl index the host keeps in memory (engine/runs/trajectories/trajectoryIndex.ts). */
const TRAJECTORY_INDEXES_KEPT = 16;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function lastLines(text: string): string {
  return text.trim().split('\n').slice(-8).join('\n');
}

export async function createHost(opts: HostOptions): Promise<Host> {
  const home = path.resolve(opts.home);
  const presetsDir = opts.presetsDir ?? PRESETS_DIR;
  const listeners = new Set<(event: ApiEvent) => void>();
  /** Per run, the byte offsets and steps of trajectories.jsonl's lines (engine/runs/trajectories/trajectoryIndex.ts). */
  const trajectoryIndexes = new Map<string, TrajectoryIndex>();
  const broadcast = (event: ApiEvent): void => {
    for (const listener of listeners) {
      try {
        listener(event);
      } catch {
        // One window failing to take an event (closed socket) must not keep it from the others.
      }
    }
  };
  const watcher: HomeWatcher = await watchHome(home, (event) => {
    // A resume cut trajectories.jsonl back: its index is built again on the next request.
    if (event.type === 'fileReset' && event.file === 'trajectories.jsonl') trajectoryIndexes.delete(event.runId);
    broadcast(toApiEvent(event));
  });
  const index = openRunIndex(home);
  /** Run processes this host started, by run id, while they live. */
  const running = new Map<string, Launched>();
  const slots = new WorkerSlots(opts.maxWorkers ?? defaultMaxWorkers());
  const roots = allowedRoots(home);
  // Studies (clusterMethods.ts): on a Ray cluster, its jobs' logs followed; here, its runs through this launcher and slots.
  const cluster = createClusterHost({ home, presetsDir, roots, broadcast, launcher: opts.launcher, slots });

  const dirOf = (runId: string): string => {
    const dir = runDir(home, runId);
    if (!fs.existsSync(path.join(dir, RUN_FILES.meta))) {
      throw new UserError(`no run '${runId}' in ${path.dirname(dir)}`);
    }
    return dir;
  };

  const rollouts = createRolloutCompare({ dirOf });

  const trajectoryLines = (runId: string): TrajectoryIndex => {
    const index = updateTrajectoryIndex(path.join(dirOf(runId), RUN_FILES.trajectories), trajectoryIndexes.get(runId));
    // the most recently read runs' indexes are kept (a few MB each for a file of gigabytes)
    trajectoryIndexes.delete(runId);
    trajectoryIndexes.set(runId, index);
    if (trajectoryIndexes.size > TRAJECTORY_INDEXES_KEPT) {
      trajectoryIndexes.delete(trajectoryIndexes.keys().next().value!);
    }
    return index;
  };

  /** The config a launch request describes, validated; never throws for a user's mistake. */
  const resolveLaunch = (req: ApiParsedRequest<'validateConfig'>): Checked<RunConfig> => {
    let base: object;
    // Before any work: a config of megabytes (or nested thousands deep) would hold the host for minutes.
    const tooBig = req.config ? configSizeProblem(req.config) : undefined;
    if (tooBig) return { success: false, issues: [{ path: '', message: `the config ${tooBig}` }] };
    if (req.config) base = req.config;
    else if (req.preset) {
      try {
        base = loadPreset(req.preset, presetsDir).config;
      } catch (err) {
        if (err instanceof UserError) return { success: false, issues: [{ path: '', message: err.message }] };
        throw err;
      }
    } else return { success: false, issues: [{ path: '', message: 'give a preset or a config to launch' }] };
    if (req.preset && req.config) {
      try {
        loadPreset(req.preset, presetsDir);
      } catch (err) {
        if (err instanceof UserError) return { success: false, issues: [{ path: '', message: err.message }] };
        throw err;
      }
    }
    let withSets: object;
    try {
      withSets = applySets(base, req.sets ?? []);
    } catch (err) {
      if (err instanceof UserError) return { success: false, issues: [{ path: '', message: err.message }] };
      throw err;
    }
    const checked = checkRunConfig(withSets);
    if (!checked.success) return checked;
    // A window names files only inside the home, resources/ or the allow-list (a terminal user is not restricted).
    const issues = configPathIssues(checked.data, roots);
    return issues.length > 0 ? { success: false, issues } : checked;
  };

  /** Start a worker; resolves with the first line satisfying `until`, or rejects with its stderr when it exits first. */
  const launchWorker = <T>(
    job: WorkerJob,
    until: (line: Record<string, unknown>) => T | undefined,
    onRunKnown?: (runId: string, launched: Launched) => void,
  ): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const release = slots.take(
        job.kind === 'start' || job.kind === 'resume'
          ? `${job.kind} a run`
          : job.kind === 'endpointEval'
            ? 'start an evaluation with endpoints'
            : `${job.kind} checkpoints`,
      );
      let settled = false;
      let runId: string | undefined;
      const launched: Launched = { process: undefined as unknown as RunProcess, stderr: '' };
      // Each worker's BLAS threads default to its share of the cores: threads × slots never exceeds them.
      const launchArgs = ['run-worker', JSON.stringify(job), '--worker-slots', String(slots.max)];
      const handlers: Parameters<RunLauncher['launch']>[1] = {
        onStdoutLine(line) {
          let parsed: unknown;
          try {
            parsed = JSON.parse(line);
          } catch {
            return; // something else printed to stdout (a library's notice)
          }
          if (!isRecord(parsed)) return;
          if (parsed.type === 'created' && typeof parsed.runId === 'string' && runId === undefined) {
            runId = parsed.runId;
            running.set(runId, launched);
            onRunKnown?.(runId, launched);
          }
          const value = settled ? undefined : until(parsed);
          if (value !== undefined) {
            settled = true;
            resolve(value);
          }
        },
        onStderr(text) {
          launched.stderr = (launched.stderr + text).slice(-STDERR_KEEP);
        },
        onExit(code) {
          release();
          if (runId !== undefined && running.get(runId) === launched) running.delete(runId);
          const error = code === 0 ? undefined : lastLines(launched.stderr) || `the process ended with code ${code}`;
          if (runId !== undefined) broadcast({ type: 'runProcessExit', runId, code, ...(error ? { error } : {}) });
          if (!settled) {
            settled = true;
            reject(new Error(error ?? 'the process ended without answering'));
          }
        },
      };
      try {
        launched.process = opts.launcher.launch(launchArgs, handlers);
      } catch (err) {
        release();
        throw err;
      }
    });

  // Evaluations with endpoint agents launched from the app: run folders written by a worker (endpointEvalMethods.ts).
  const endpointEvals = createEndpointEvalHost({ home, roots, resolveLaunch, launchWorker });

  const checkpointDir = (ref: { runId: string; step: number }): string => {
    const dir = path.join(dirOf(ref.runId), RUN_FILES.checkpoints, String(ref.step));
    if (!isCompleteCheckpoint(dir)) {
      const have = listCheckpoints(dirOf(ref.runId)).map((c) => c.step);
      throw new UserError(
        `run ${ref.runId} has no checkpoint at step ${ref.step} (it has: ${have.join(', ') || 'none'})`,
      );
    }
    // checkpoints/<step> may be a symbolic link out of the home (a copied-in run): follow it before a worker reads it.
    checkCheckpointDir(dir, roots, `run ${ref.runId} step ${ref.step}`);
    return dir;
  };

  const evalOut = (value: unknown, ref: { runId: string; step: number }): ApiResponse<'evaluateCheckpoint'> => {
    const r = value as {
      checkpoint: string;
      identity: Record<string, string | number | boolean>;
      metrics: Record<string, number>;
      items: ApiResponse<'evaluateCheckpoint'>['items'];
      cached: boolean;
    };
    return {
      checkpoint: r.checkpoint,
      runId: ref.runId,
      step: ref.step,
      identity: r.identity,
      metrics: jsonSafeNumbers(r.metrics),
      items: r.items,
      cached: r.cached,
    };
  };

  const handlers: ApiHandlers = {
    async ping() {
      return { engineVersion: ENGINE_VERSION, home, transport: opts.transport };
    },

    async listPresets() {
      return {
        presets: listPresets(presetsDir).map((p) => ({
          name: p.name,
          description: p.description,
          algorithm: presetAlgorithm(p.config),
          expectedRuntime: p.expectedRuntime,
          config: p.config,
          ...(p.recommended ? { recommended: true } : {}),
          ...(p.gpuOnly ? { gpuOnly: true } : {}),
        })),
      };
    },

    async configSchema() {
      return { schema: runConfigJsonSchema() };
    },

    async validateConfig(req) {
      const checked = resolveLaunch(req);
      return checked.success ? { ok: true, config: checked.data } : { ok: false, issues: checked.issues };
    },

    async startRun(req) {
      const checked = resolveLaunch(req);
      if (!checked.success) {
        throw new LaunchRefusedError(checked.issues, req.preset ? `preset '${req.preset}'` : 'the config');
      }
      const job: WorkerJob = {
        kind: 'start',
        home,
        config: checked.data,
        ...(req.preset ? { preset: req.preset } : {}),
      };
      const runId = await launchWorker(job, (line) =>
        line.type === 'created' && typeof line.runId === 'string' ? line.runId : undefined,
      );
      return { runId };
    },

    async stopRun({ runId }) {
      const ours = running.get(runId);
      if (ours) {
        ours.process.terminate();
        return { stopping: true, message: 'stopping after the current step (a checkpoint is written first)' };
      }
      const dir = dirOf(runId);
      const meta = readRunMeta(dir);
      if (meta.status !== 'running') return { stopping: false, message: `run ${runId} is ${meta.status}, not running` };
      // Never signal a pid that is not this run's writer: after a crash it may be any process (hostGuards.ts).
      const pid = verifiedWriterPid(runId, dir, meta);
      // A run started from a terminal: SIGTERM is its Ctrl-C (engine/commands/runCommands.ts).
      process.kill(pid, 'SIGTERM');
      return { stopping: true, message: `asked process ${pid} to stop after its current step` };
    },

    async resumeRun({ runId }) {
      const dir = dirOf(runId);
      if (running.has(runId)) throw new UserError(`run ${runId} is already running in a process this app started`);
      const meta = readRunMeta(dir);
      const writer = meta.status === 'running' ? runWriter(dir, meta) : undefined;
      if (writer?.state === 'alive') {
        throw new UserError(`run ${runId} is running in process ${writer.pid}; stop it before resuming`);
      }
      await launchWorker({ kind: 'resume', runDir: dir }, (line) => (line.type === 'created' ? true : undefined));
      return { runId };
    },

    async listRuns() {
      return { home, runs: index.list() };
    },

    async getRun({ runId, eventsLimit }) {
      const dir = dirOf(runId);
      const written = readRunMeta(dir);
      // 'running' whose writer is gone (killed, out of memory) is shown interrupted; run.json stays the run's.
      const meta = { ...written, status: shownStatus(dir, written) };
      // This run's entry of the run index alone, its metrics summarised incrementally (runIndex.ts): names, lines and
      // the last step without reading the whole log.
      const indexed = index.get(runId);
      const summary = indexed?.summary;
      const events = readJsonl<Record<string, unknown>>(path.join(dir, RUN_FILES.events), {
        tail: true,
        validate: (v) => (isRecord(v) ? undefined : 'is not a JSON object'),
      }).records;
      const limit = eventsLimit ?? 200;
      return {
        meta,
        ...(summary ? { summary } : {}),
        checkpoints: listCheckpoints(dir).map((c) => ({ step: c.step })),
        events: limit === 0 ? [] : events.slice(-limit),
        eventsTotal: events.length,
        metricNames: Object.keys(summary?.metrics ?? {}).sort(),
        metricPoints: indexed?.metricLines ?? 0,
        lastStep: summary?.steps ?? null,
        trajectories: trajectoryLines(runId).starts.length,
        hostProcess: running.has(runId),
      };
    },

    async getMetricSeries({ runId, names, x, width, xMin, xMax }) {
      const file = path.join(dirOf(runId), RUN_FILES.metrics);
      // The index gives the names, lines and last step; the series are columns of only those metrics (metricColumns.ts).
      const indexed = index.get(runId);
      const wanted = names ?? Object.keys(indexed?.summary.metrics ?? {});
      const columns = metricColumns(runId, file, wanted, x);
      const series: ApiResponse<'getMetricSeries'>['series'] = {};
      wanted.forEach((name, i) => {
        const { x: xs, y: ys } = columns[i]!;
        const buckets = decimate(
          xs.map((xv, j) => ({ x: xv, y: ys[j]! })),
          width,
          { xMin, xMax },
        );
        setOwn(series, name, {
          x: buckets.map((b) => b.x),
          min: buckets.map((b) => b.min),
          max: buckets.map((b) => b.max),
          last: buckets.map((b) => b.last),
        });
      });
      return { points: indexed?.metricLines ?? 0, lastStep: indexed?.summary.steps ?? null, series };
    },

    async getRunsMetricSeries(req) {
      return runsMetricSeries(req, { dirOf });
    },

    async getTrajectories({ runId, ...req }) {
      const answer = queryTrajectories(trajectoryLines(runId), req);
      const { config } = readRunMeta(dirOf(runId));
      const records = withCapacities(answer.records, config);
      const pages = marsPagesOf(records, config);
      return Object.keys(pages).length ? { ...answer, records, pages } : { ...answer, records };
    },

    async getLiveTrajectories({ runId }) {
      const live = readLiveTrajectories(path.join(dirOf(runId), RUN_FILES.live));
      return live ? { step: live.step, records: live.records } : { step: null, records: [] };
    },

    async setRunLabels({ runId, tags, notes }) {
      // Into labels.json, not run.json: the run's process rewrites run.json (status, checkpoints) at any moment, and
      // a read-modify-write of it here could undo its change, or it ours (engine/runs/folder/runFolder.ts readRunMeta).
      const meta = writeRunLabels(dirOf(runId), {
        ...(tags ? { tags: [...new Set(tags)] } : {}),
        ...(notes !== undefined ? { notes } : {}),
      });
      return { meta };
    },

    async evaluateCheckpoint(ref) {
      const read = await launchWorker(
        { kind: 'evaluate', home, checkpoint: checkpointDir(ref) },
        workerResult(home, workerEvalSchema),
      );
      return evalOut(read(), ref);
    },

    async compareCheckpoints({ a, b }) {
      const read = await launchWorker(
        { kind: 'compare', home, a: checkpointDir(a), b: checkpointDir(b) },
        workerResult(home, workerComparisonSchema),
      );
      const c = read() as Omit<ApiResponse<'compareCheckpoints'>, 'a' | 'b' | 'metrics'> & {
        a: unknown;
        b: unknown;
        metrics: { name: string; a: number; b: number; diff: number }[];
      };
      const finite = (v: number): number | null => (Number.isFinite(v) ? v : null);
      return {
        identity: c.identity,
        a: evalOut(c.a, a),
        b: evalOut(c.b, b),
        metrics: c.metrics.map((m) => ({ name: m.name, a: finite(m.a), b: finite(m.b), diff: finite(m.diff) })),
        flippedToWrong: c.flippedToWrong,
        flippedToRight: c.flippedToRight,
        mcnemar: c.mcnemar,
        scoreDiff: c.scoreDiff,
      };
    },

    // Rollouts compared by prompt, without evaluating (imported runs have no checkpoints): rolloutCompare.ts.
    ...rollouts.handlers,
    ...cluster.handlers,
    ...endpointEvals.handlers,
  };

  return {
    home,
    handlers,
    subscribe(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
    async close() {
      listeners.clear();
      await cluster.close();
      await watcher.close();
    },
  };
}

export type { ConfigIssue };

/** A preset's algorithm name ('' when its config names none: the listing still shows the preset). */
function presetAlgorithm(config: unknown): string {
  const a = (config as { algorithm?: unknown }).algorithm;
  return typeof a === 'string' ? a : '';
}
