/**
 * Live view of a home folder: appended log lines, status changes and new checkpoints of every run become typed events
 * (docs/architecture.md, "Processes": the host watches folders, not processes, so a run started from a terminal shows up live).
 *
 * Each log is tailed from the offset where the last read stopped, complete lines only. chokidar hides a file's changes
 * for 50 ms after each one it reports (and compares mtimes, which are coarse), so each reported change also arms a
 * follow-up check just after that window, re-armed while lines keep coming: the last append of a burst is never left
 * unreported, and no file is polled while nothing happens.
 *
 * live.json (the step in flight, liveTrajectories.ts) is replaced whole by rename: each new version is sent whole, and
 * its removal (the step's records are in trajectories.jsonl) as `step: null`. labels.json counts as part of run.json.
 *
 * A large read (a run copied into the home with its whole backlog) goes out in events of at most EVENT_BATCH_BYTES of
 * JSON each, in order, rather than as one event the size of the log (a 250 MB log was one 233 MB socket message), and
 * is read TAIL_SLICE_BYTES at a time, the next slice only once the event loop turned and the consumers can take it
 * (`canTake`): a 77 MiB backlog read in one go stalled every client's requests for seconds.
 *
 * This file holds the event union and the chokidar watch; the pieces share a WatchContext (watchState.ts): what a path
 * means (pathEvents.ts), the logs' tails (logTail.ts), run.json (metaFile.ts), live.json (liveFile.ts), the batches
 * (eventBatches.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { UserError } from '../../base/userError';
import { runsDir, type LogFileName } from '../folder/home';
import type { MetricPoint } from '../summary/metricPoint';
import type { RunMeta, RunStatus } from '../folder/runFolder';
import { handlePathEvent, wanted } from './pathEvents';
import { emit, type WatchContext } from './watchState';

export type RunEvent =
  /** A run folder appeared (after the watcher started, or any at start with `fromStart`). */
  | { type: 'runCreated'; runId: string; meta: RunMeta }
  | { type: 'runStatus'; runId: string; status: RunStatus; meta: RunMeta }
  /** run.json changed without a status change (tags, notes, last checkpoint). */
  | { type: 'runMeta'; runId: string; meta: RunMeta }
  | { type: 'runRemoved'; runId: string }
  | { type: 'metrics'; runId: string; points: MetricPoint[] }
  | { type: 'trajectories'; runId: string; records: unknown[] }
  /** The records of the step in flight (live.json), whole, each time they change; step null: the step ended. */
  | { type: 'liveTrajectories'; runId: string; step: number | null; records: unknown[] }
  /** One line of events.jsonl. */
  | { type: 'event'; runId: string; record: Record<string, unknown> }
  | { type: 'checkpointAdded'; runId: string; step: number; path: string }
  | { type: 'checkpointRemoved'; runId: string; step: number }
  /** The log shrank or was replaced (a resume truncates it): what was sent before is void; its lines come again from 0. */
  | { type: 'fileReset'; runId: string; file: LogFileName }
  | { type: 'warning'; runId?: string; message: string };

export interface WatchOptions {
  /** Announce the runs already there and send their logs from the start (default: only what happens from now on). */
  fromStart?: boolean;
  /** Delay of the check that follows each change, in ms; above chokidar's 50 ms change throttle. */
  settleMs?: number;
  /**
   * Whether the events' consumers can take more of a backlog now (the host: no socket has much still to send). A
   * backlog's next slice waits until they can, so a slow client holds the reading back instead of every other
   * request, and the server's memory; default: always.
   */
  canTake?: () => boolean;
}

export interface HomeWatcher {
  close(): Promise<void>;
}

export { batchBySize, EVENT_BATCH_BYTES } from './eventBatches';

export async function watchHome(
  home: string,
  onEvent: (event: RunEvent) => void,
  opts: WatchOptions = {},
): Promise<HomeWatcher> {
  const root = path.resolve(runsDir(home));
  try {
    // The host owns the home folder; creating runs/ lets one watch cover the runs that appear later.
    fs.mkdirSync(root, { recursive: true });
  } catch (err) {
    throw new UserError(
      `cannot create ${root} (${(err as Error).message}): choose a writable home with --home or MARS_LAB_HOME`,
    );
  }
  const ctx: WatchContext = {
    root,
    settleMs: opts.settleMs ?? 60,
    fromStart: opts.fromStart ?? false,
    runs: new Map(),
    onEvent,
    canTake: opts.canTake ?? (() => true),
    ready: false,
    closed: false,
  };
  const watcher: FSWatcher = watch(root, {
    ignoreInitial: false,
    persistent: true,
    // runs/<id>/checkpoints/<step>: deeper folders (a checkpoint's files) are not watched.
    depth: 2,
    awaitWriteFinish: false,
    // Our writers replace files by rename, which needs no unlink/add pairing; pairing would delay unlinks by 100 ms.
    atomic: false,
    ignored: (p: string) => {
      const rel = path.relative(root, p);
      if (rel.startsWith('..')) return false;
      return !wanted(rel === '' ? [] : rel.split(path.sep));
    },
  });
  for (const kind of ['add', 'addDir', 'change', 'unlink', 'unlinkDir'] as const) {
    watcher.on(kind, (p: string) => {
      try {
        handlePathEvent(ctx, kind, p);
      } catch (err) {
        emit(ctx, {
          type: 'warning',
          runId: path.relative(root, p).split(path.sep)[0],
          message: `${p}: ${(err as Error).message}`,
        });
      }
    });
  }
  watcher.on('error', (err: unknown) =>
    emit(ctx, { type: 'warning', message: `watching ${root}: ${(err as Error).message}` }),
  );
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  ctx.ready = true;

  return {
    async close(): Promise<void> {
      ctx.closed = true;
      for (const s of ctx.runs.values()) {
        if (s.metaTimer) clearTimeout(s.metaTimer);
        if (s.liveTimer) clearTimeout(s.liveTimer);
        for (const timer of s.timers.values()) clearTimeout(timer);
      }
      await watcher.close();
    },
  };
}
