/**
 * What the home watcher's pieces share (watcher.ts): the runs folder, the options, each run's state (its meta, its
 * logs' tails, its pending follow-up checks) and the one way events leave, which drops them once the watcher closed
 * and keeps a failing listener from breaking chokidar's bookkeeping.
 */
import type { LogFileName } from '../folder/home';
import type { RunMeta } from '../folder/runFolder';
import type { RunEvent } from './watcher';

/** Where the last read of one log stopped. */
export interface Tail {
  offset: number;
  nextLine: number | undefined;
  ino: number;
  /** The bytes just before `offset`, to notice a file rewritten to at least its old length. */
  fingerprint: Buffer;
  partial: number;
  /** A backlog is being read a slice at a time (logTail.ts): its next slice is scheduled, other reads wait for it. */
  continuing?: boolean;
}

export interface RunState {
  meta: RunMeta | null;
  lastProblem: string | null;
  /** Logs that changed before run.json could be read: tailed once it can. */
  pending: Set<LogFileName>;
  tails: Map<LogFileName, Tail>;
  /** The follow-up check of each log (see the top of watcher.ts). */
  timers: Map<LogFileName, NodeJS.Timeout>;
  checkpoints: Set<number>;
  metaTimer: NodeJS.Timeout | null;
  /** Which version of live.json was last read (inode, size, mtime), null when there is none. */
  live: string | null;
  liveTimer: NodeJS.Timeout | null;
}

/** One watcher's shared state: fixed at start but for `ready` (chokidar's first scan is over) and `closed`. */
export interface WatchContext {
  /** The home's runs/ folder, absolute. */
  readonly root: string;
  readonly settleMs: number;
  readonly fromStart: boolean;
  readonly runs: Map<string, RunState>;
  readonly onEvent: (event: RunEvent) => void;
  /** Whether the events' consumers can take a backlog's next slice now (WatchOptions.canTake). */
  readonly canTake: () => boolean;
  ready: boolean;
  closed: boolean;
}

export function emit(ctx: WatchContext, event: RunEvent): void {
  if (ctx.closed) return;
  try {
    ctx.onEvent(event);
  } catch (err) {
    // A failing listener must not break chokidar's bookkeeping; it still surfaces, as an uncaught error.
    setImmediate(() => {
      throw err;
    });
  }
}

/** The state of a run, made empty the first time the run is seen. */
export function stateOf(ctx: WatchContext, runId: string): RunState {
  let s = ctx.runs.get(runId);
  if (!s) {
    s = {
      meta: null,
      lastProblem: null,
      pending: new Set(),
      tails: new Map(),
      timers: new Map(),
      checkpoints: new Set(),
      metaTimer: null,
      live: null,
      liveTimer: null,
    };
    ctx.runs.set(runId, s);
  }
  return s;
}

/** A warning about a run, sent once until the problem changes or goes away. */
export function problem(ctx: WatchContext, runId: string, s: RunState, message: string): void {
  if (s.lastProblem === message) return;
  s.lastProblem = message;
  emit(ctx, { type: 'warning', runId, message });
}
