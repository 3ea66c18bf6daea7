/**
 * A study on this machine started from the app (issue 18: the launch form's "where: this machine" with variants ×
 * seeds): its runs' `mars-lab train … --json` processes go through the host's RunLauncher (runLauncher.ts), the path
 * single runs take, so in Electron they are utility processes (process.execPath there is the Electron binary, not
 * Node.js), and they take the host's worker slots (hostGuards.ts WorkerSlots): a study never runs more processes at once
 * than the host allows, counting the runs and evaluations started from the windows. A run whose turn has come waits
 * for a free slot (looked at every SLOT_POLL_MS) rather than fail; the study's stop ends that wait.
 *
 * The run folders are written by the processes themselves, so the runs show in the Runs view live through the home
 * watcher, and each one's end is told to the windows as a 'runProcessExit' event, as for a single run.
 */
import type { StudyLauncher } from '../../cluster/studies/localStudy';
import type { StudyRun } from '../../cluster/studies/studyRecord';
import { UserError } from '../../base/userError';
import type { ApiEvent } from '../contract/contract';
import type { RunLauncher } from '../workers/runLauncher';

/** The host's worker limit (hostGuards.ts WorkerSlots). */
export interface StudySlots {
  readonly max: number;
  /** Takes a slot or throws a UserError naming the limit; returns the release. */
  take(what: string): () => void;
}

export const SLOT_POLL_MS = 500;
const STDERR_KEEP = 4000;

/** Resolves after `ms`, or at once when `signal` aborts. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** The run id a `train … --run-id ID` command line names. */
function runIdOf(args: readonly string[]): string | undefined {
  const at = args.indexOf('--run-id');
  return at >= 0 ? args[at + 1] : undefined;
}

export function hostStudyLauncher(
  launcher: RunLauncher,
  slots: StudySlots,
  broadcast: (event: ApiEvent) => void,
): StudyLauncher {
  return {
    what: 'a run process',
    async launch(args, handlers, signal) {
      let release: () => void;
      for (;;) {
        if (signal.aborted) return null;
        try {
          release = slots.take('start a study run');
          break;
        } catch (err) {
          if (!(err instanceof UserError)) throw err;
          await pause(SLOT_POLL_MS, signal); // every slot is busy: wait for one
        }
      }
      const runId = runIdOf(args);
      let stderr = '';
      try {
        const started = launcher.launch(args, {
          onStdoutLine: (line) => handlers.onStdoutLine(line),
          onStderr(text) {
            stderr = (stderr + text).slice(-STDERR_KEEP);
            handlers.onStderr(text);
          },
          onExit(code) {
            release();
            if (runId !== undefined) {
              const error = code === 0 ? undefined : stderr.trim().split('\n').slice(-8).join('\n') || undefined;
              broadcast({
                type: 'runProcessExit',
                runId,
                code,
                ...(error ? { error } : code === 0 ? {} : { error: `the process ended with code ${code}` }),
              });
            }
            handlers.onExit(code);
          },
        });
        return { terminate: () => started.terminate() };
      } catch (err) {
        release();
        throw err;
      }
    },
  };
}

/**
 * stopClusterJob for a study this host runs here: one run (running: checkpoint and stop; waiting: never starts), or
 * every run still going (`going`: the runs not ended).
 */
export function stopStudyHere(
  live: { stop: () => void; stopRun?: (runId: string) => boolean },
  going: readonly StudyRun[],
  runId: string | undefined,
): { stopping: boolean; message: string } {
  const waiting = going.filter((r) => r.state === 'pending').length;
  if (runId !== undefined) {
    const asked = live.stopRun?.(runId) ?? false;
    return {
      stopping: asked,
      message: !asked
        ? `run ${runId} has ended`
        : waiting
          ? `run ${runId} will not start`
          : `stopping run ${runId} after its current step (a checkpoint is written first)`,
    };
  }
  live.stop();
  const runningNow = going.length - waiting;
  return {
    stopping: true,
    message: `stopping ${runningNow} run${runningNow === 1 ? '' : 's'} after the current step (each checkpoints first)${waiting ? `; ${waiting} waiting will not start` : ''}`,
  };
}
