/**
 * Where runs live: the home folder (`--home DIR`, else `MARS_LAB_HOME`, else `~/mars-lab`) holds `runs/<runId>/` and
 * the run index cache `index.json`.
 */
import os from 'node:os';
import path from 'node:path';
import { UserError } from '../../base/userError';

/** Names inside a run folder (docs/architecture.md, "Run folder"). */
export const RUN_FILES = {
  meta: 'run.json',
  metrics: 'metrics.jsonl',
  trajectories: 'trajectories.jsonl',
  events: 'events.jsonl',
  checkpoints: 'checkpoints',
  lock: 'lock',
  /** The trajectories of the step in flight (MARTI's partial trees), replaced as they grow; gone between steps. */
  live: 'live.json',
  /** Tags and notes edited after launch (they override run.json's): the window writes them, never the run. */
  labels: 'labels.json',
} as const;

export type RunFileName = (typeof RUN_FILES)[keyof typeof RUN_FILES];

/** The append-only logs of a run, by role. */
export const LOG_FILES = [RUN_FILES.metrics, RUN_FILES.trajectories, RUN_FILES.events] as const;
export type LogFileName = (typeof LOG_FILES)[number];

export { CHECKPOINT_REQUIRED_FILES } from '../../model/formats/checkpointFiles';

export const INDEX_FILE = 'index.json';
export const HOME_ENV = 'MARS_LAB_HOME';

function expandTilde(p: string): string {
  // A quoted `MARS_LAB_HOME="~/x"` reaches us unexpanded; the shell only expands an unquoted tilde.
  if (p === '~') return os.homedir();
  if (p.startsWith('~/') || p.startsWith(`~${path.sep}`)) return path.join(os.homedir(), p.slice(2));
  return p;
}

export function resolveHome(opts: { home?: string; env?: NodeJS.ProcessEnv } = {}): string {
  const env = opts.env ?? process.env;
  const chosen = opts.home?.trim() || env[HOME_ENV]?.trim() || path.join(os.homedir(), 'mars-lab');
  return path.resolve(expandTilde(chosen));
}

export function runsDir(home: string): string {
  return path.join(home, 'runs');
}

const RUN_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The folder of one run; the id comes from users (`show RUN`), so it may not climb out of `runs/`. */
export function runDir(home: string, runId: string): string {
  if (!RUN_ID.test(runId) || runId.includes('..')) {
    throw new UserError(
      `"${runId}" is not a run id: run ids are folder names under ${runsDir(home)} (letters, digits, ".", "_", "-"); ` +
        'list the runs to see their ids',
    );
  }
  return path.join(runsDir(home), runId);
}
