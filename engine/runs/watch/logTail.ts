/**
 * Tailing a run's append-only logs (watcher.ts): each read starts where the last stopped and takes complete lines
 * only; a log that shrank, changed inode or was rewritten under its fingerprint is reset and read again from 0; each
 * reported change arms a follow-up check just after chokidar's change throttle, re-armed while lines keep coming.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RUN_FILES, type LogFileName } from '../folder/home';
import { lastLineEnd, readJsonl } from '../folder/jsonl';
import { metricLineProblem, toMetricPoint } from '../summary/metricPoint';
import { batchBySize } from './eventBatches';
import { emit, type RunState, type Tail, type WatchContext } from './watchState';

const FINGERPRINT_BYTES = 32;

/**
 * The most of a log one tail reads before it lets the event loop turn: a run copied into the home with 77 MiB of logs
 * was read and sent in one go, and every client's ping waited 3–5 s (issue 34). The rest follows on the next turn.
 */
export const TAIL_SLICE_BYTES = 2 << 20;

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function eventLineProblem(value: unknown): string | undefined {
  return isRecord(value) ? undefined : 'is not a JSON object';
}

function bytesBefore(file: string, offset: number): Buffer {
  const n = Math.min(offset, FINGERPRINT_BYTES);
  const buf = Buffer.alloc(n);
  if (n === 0) return buf;
  const fd = fs.openSync(file, 'r');
  try {
    const got = fs.readSync(fd, buf, 0, n, offset - n);
    return buf.subarray(0, got);
  } finally {
    fs.closeSync(fd);
  }
}

const freshTail = (ino: number): Tail => ({ offset: 0, nextLine: 1, ino, fingerprint: Buffer.alloc(0), partial: 0 });

/** Send the records one read of a log got, as the events of that log's kind. */
function emitRecords(ctx: WatchContext, runId: string, log: LogFileName, records: unknown[], readBytes: number): void {
  if (log === RUN_FILES.metrics) {
    const points = (records as Record<string, unknown>[]).map(toMetricPoint);
    for (const batch of batchBySize(points, readBytes)) emit(ctx, { type: 'metrics', runId, points: batch });
  } else if (log === RUN_FILES.trajectories) {
    for (const batch of batchBySize(records, readBytes)) {
      emit(ctx, { type: 'trajectories', runId, records: batch });
    }
  } else {
    for (const record of records as Record<string, unknown>[]) emit(ctx, { type: 'event', runId, record });
  }
}

/** Send the lines appended to one log since the last read; returns whether there were any. */
export function tail(ctx: WatchContext, runId: string, s: RunState, log: LogFileName): boolean {
  const file = path.join(ctx.root, runId, log);
  let t = s.tails.get(log);
  if (t?.continuing) return false; // a backlog's next slice is on its way and reads what is there
  for (let attempt = 0; attempt < 2; attempt++) {
    let st: fs.Stats;
    try {
      st = fs.statSync(file);
    } catch {
      return false;
    }
    if (!t) {
      t = freshTail(st.ino);
      if (!ctx.ready && !ctx.fromStart) {
        // Joining a run mid-way: start after its last complete line; line numbers before it are unknown.
        t.offset = lastLineEnd(file);
        t.nextLine = t.offset === 0 ? 1 : undefined;
        t.fingerprint = bytesBefore(file, t.offset);
      }
      s.tails.set(log, t);
    } else if (st.ino !== t.ino || st.size < t.offset || !bytesBefore(file, t.offset).equals(t.fingerprint)) {
      t = freshTail(st.ino);
      s.tails.set(log, t);
      emit(ctx, { type: 'fileReset', runId, file: log });
    }
    if (st.size === t.offset) {
      t.partial = 0;
      return false;
    }
    const read = readJsonl(file, {
      from: t.offset,
      firstLine: t.nextLine,
      tail: true,
      validate: log === RUN_FILES.metrics ? metricLineProblem : log === RUN_FILES.events ? eventLineProblem : undefined,
      maxBytes: TAIL_SLICE_BYTES,
    });
    // Truncated between the stat and the read: stat again, which resets the tail.
    if (read.shrunk) continue;
    const grew = read.end > t.offset;
    const readBytes = read.end - t.offset;
    t.offset = read.end;
    t.nextLine = read.nextLine;
    t.partial = read.partial;
    if (grew) t.fingerprint = bytesBefore(file, t.offset);
    for (const message of read.warnings) emit(ctx, { type: 'warning', runId, message });
    if (read.records.length > 0) emitRecords(ctx, runId, log, read.records, readBytes);
    if (read.more) continueTail(ctx, runId, s, log);
    return grew;
  }
  return false;
}

/**
 * The next slice of a backlog, once the event loop has served what waits and the consumers can take more (polled every
 * 20 ms while they cannot). Until then the log's other reads return at once, so slices are never read twice over.
 */
function continueTail(ctx: WatchContext, runId: string, s: RunState, log: LogFileName): void {
  const t = s.tails.get(log);
  if (!t) return;
  t.continuing = true;
  const next = (): void => {
    if (ctx.closed || ctx.runs.get(runId) !== s || s.tails.get(log) !== t) return;
    if (!ctx.canTake()) return void setTimeout(next, 20);
    t.continuing = false;
    tail(ctx, runId, s, log);
  };
  setImmediate(next);
}

/**
 * (Re)arm the follow-up check settleMs after the latest change chokidar reported: its throttle hides changes for
 * 50 ms after each one it reports, so a check armed by an earlier change could fire before that window closes.
 */
export function scheduleCheck(ctx: WatchContext, runId: string, s: RunState, log: LogFileName): void {
  if (ctx.closed) return;
  clearTimeout(s.timers.get(log));
  s.timers.set(
    log,
    setTimeout(() => {
      s.timers.delete(log);
      if (ctx.closed || ctx.runs.get(runId) !== s) return;
      if (tail(ctx, runId, s, log)) scheduleCheck(ctx, runId, s, log);
    }, ctx.settleMs),
  );
}

/** A run that stopped for good will not finish its half-written last line: that line was torn by a crash. */
export function reportTornEnds(ctx: WatchContext, runId: string, s: RunState): void {
  for (const [log, t] of s.tails) {
    if (t.partial > 0) {
      emit(ctx, {
        type: 'warning',
        runId,
        message: `${path.join(ctx.root, runId, log)}: skipped a torn last line (${t.partial} bytes), probably from a crash`,
      });
    }
  }
}
