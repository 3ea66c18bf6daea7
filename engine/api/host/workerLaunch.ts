/**
 * How the host starts a `run-worker` process (a run, a resume, an evaluation, a comparison) within its worker slots:
 * it answers with the first stdout line the caller accepts, or fails with the end of the worker's stderr when the
 * process exits first. The host never trains or evaluates itself (docs/architecture.md "Processes").
 */
import type { ApiEvent } from '../contract/contract';
import type { RunLauncher, RunProcess } from '../workers/runLauncher';
import type { WorkerJob } from '../workers/runWorker';
import type { WorkerSlots } from './hostGuards';
import { isRecord } from './jsonValues';
import { withoutJsonQuotes } from '../../base/boundedText';

/** A run process this host started, with the end of its stderr. */
export interface Launched {
  process: RunProcess;
  stderr: string;
}

/** Start a worker; resolves with the first line satisfying `until`, or rejects with its stderr when it exits first. */
export type LaunchWorker = <T>(
  job: WorkerJob,
  until: (line: Record<string, unknown>) => T | undefined,
  onRunKnown?: (runId: string, launched: Launched) => void,
) => Promise<T>;

export interface WorkerLaunchOptions {
  launcher: RunLauncher;
  slots: WorkerSlots;
  /** Run processes this host started, by run id, while they live: kept up to date here. */
  running: Map<string, Launched>;
  broadcast: (event: ApiEvent) => void;
}

const STDERR_KEEP = 4000;

/**
 * The end of a worker's stderr, as a window gets it (runProcessExit's error, a failed start): its last lines, without a
 * JSON parser's quotation of a file should anything in the worker have printed one.
 */
function lastLines(text: string): string {
  return withoutJsonQuotes(text.trim()).split('\n').slice(-8).join('\n');
}

export function createLaunchWorker({ launcher, slots, running, broadcast }: WorkerLaunchOptions): LaunchWorker {
  return <T>(
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
        launched.process = launcher.launch(launchArgs, handlers);
      } catch (err) {
        release();
        throw err;
      }
    });
}
