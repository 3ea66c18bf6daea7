/**
 * The host's methods for run processes: start a run, stop one (the host's own process, or a terminal's by its verified
 * writer pid), resume one. Each run trains in its own `run-worker` process (workerLaunch.ts), never in the host.
 */
import { ConfigValidationError, parseRunConfig } from '../../runs/config/configSchema';
import { readRunMeta } from '../../runs/folder/runFolder';
import { runWriter } from '../../runs/folder/writerProcess';
import { UserError } from '../../base/userError';
import type { WorkerJob } from '../workers/runWorker';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';
import { endpointEvalIssues } from '../endpointEval/endpointEvalChecks';
import { usesEndpoints } from '../../runs/config/configuredSources';
import { configPathIssues, verifiedWriterPid } from './hostGuards';

/** A launch the contract refuses: the config's issues travel with it (the form shows them by field). */
export class LaunchRefusedError extends ConfigValidationError {}

export function createRunProcessMethods(ctx: HostContext): Pick<ApiHandlers, 'startRun' | 'stopRun' | 'resumeRun'> {
  const { home, running, dirOf, launchWorker } = ctx;
  return {
    async startRun(req) {
      const checked = ctx.resolveLaunch(req);
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
      // the config comes from the run folder, which whoever can write the home can craft: held to what a start from
      // a window is held to (its files inside the allowed folders; an evaluation's keys declared for their hosts)
      const config = parseRunConfig(meta.config, `run ${runId}'s run.json`);
      const issues = usesEndpoints(config) // an evaluation with endpoints (endpointEvalRun.ts isEndpointEvalRun)
        ? endpointEvalIssues(config, { roots: ctx.roots })
        : configPathIssues(config, ctx.roots);
      if (issues.length) throw new LaunchRefusedError(issues, `run ${runId}`);
      await launchWorker({ kind: 'resume', runDir: dir }, (line) => (line.type === 'created' ? true : undefined));
      return { runId };
    },
  };
}
