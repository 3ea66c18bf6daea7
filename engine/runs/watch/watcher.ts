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
 * JSON each, in order, rather than as one event the size of the log (a 250 MB log was one 233 MB socket message).
 */
import fs from 'node:fs';
import path from 'node:path';
import { watch, type FSWatcher } from 'chokidar';
import { UserError } from '../../base/userError';
import { LOG_FILES, RUN_FILES, runsDir, type LogFileName } from '../folder/home';
import { lastLineEnd, readJsonl } from '../folder/jsonl';
import { readLiveTrajectories } from '../folder/liveTrajectories';
import { metricLineProblem, toMetricPoint, type MetricPoint } from '../summary/metricPoint';
import { isCompleteCheckpoint, isRunFolderName, readRunMeta, type RunMeta, type RunStatus } from '../folder/runFolder';

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
}

export interface HomeWatcher {
  close(): Promise<void>;
}

interface Tail {
  offset: number;
  nextLine: number | undefined;
  ino: number;
  /** The bytes just before `offset`, to notice a file rewritten to at least its old length. */
  fingerprint: Buffer;
  partial: number;
}

interface RunState {
  meta: RunMeta | null;
  lastProblem: string | null;
  /** Logs that changed before run.json could be read: tailed once it can. */
  pending: Set<LogFileName>;
  tails: Map<LogFileName, Tail>;
  /** The follow-up check of each log (see the top of this file). */
  timers: Map<LogFileName, NodeJS.Timeout>;
  checkpoints: Set<number>;
  metaTimer: NodeJS.Timeout | null;
  /** Which version of live.json was last read (inode, size, mtime), null when there is none. */
  live: string | null;
  liveTimer: NodeJS.Timeout | null;
}

/** The most JSON one metrics or trajectories event carries, unless a single record is larger on its own. */
export const EVENT_BATCH_BYTES = 1 << 20;

/**
 * Consecutive runs of `items`, each at most EVENT_BATCH_BYTES of JSON (a larger single item alone). `readBytes` is
 * what the items were read from: a read that small is one batch without measuring anything.
 */
export function batchBySize<T>(items: T[], readBytes: number, limit = EVENT_BATCH_BYTES): T[][] {
  if (readBytes <= limit) return [items];
  const batches: T[][] = [];
  let batch: T[] = [];
  let bytes = 2; // the array's brackets
  for (const item of items) {
    const size = Buffer.byteLength(JSON.stringify(item) ?? 'null') + 1;
    if (batch.length > 0 && bytes + size > limit) {
      batches.push(batch);
      batch = [];
      bytes = 2;
    }
    batch.push(item);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

const FINGERPRINT_BYTES = 32;
const STEP_NAME = /^\d+$/;
const CHECKPOINT_RETRIES = 10;
const CHECKPOINT_RETRY_MS = 200;
const SETTLED: ReadonlySet<RunStatus> = new Set(['stopped', 'finished', 'failed', 'interrupted']);

function isLogFile(name: string): name is LogFileName {
  return (LOG_FILES as readonly string[]).includes(name);
}

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

/** Relative parts of a path under runs/, and whether chokidar should look at it at all. */
function wanted(parts: string[]): boolean {
  if (parts.length === 0) return true;
  if (!isRunFolderName(parts[0]!)) return false;
  if (parts.length === 1) return true;
  if (parts.length === 2) {
    const name = parts[1]!;
    return (
      name === RUN_FILES.meta ||
      name === RUN_FILES.labels ||
      name === RUN_FILES.live ||
      name === RUN_FILES.checkpoints ||
      isLogFile(name)
    );
  }
  return parts.length === 3 && parts[1] === RUN_FILES.checkpoints && STEP_NAME.test(parts[2]!);
}

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
  const settleMs = opts.settleMs ?? 60;
  const fromStart = opts.fromStart ?? false;
  const runs = new Map<string, RunState>();
  let ready = false;
  let closed = false;

  const emit = (event: RunEvent): void => {
    if (closed) return;
    try {
      onEvent(event);
    } catch (err) {
      // A failing listener must not break chokidar's bookkeeping; it still surfaces, as an uncaught error.
      setImmediate(() => {
        throw err;
      });
    }
  };

  const stateOf = (runId: string): RunState => {
    let s = runs.get(runId);
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
      runs.set(runId, s);
    }
    return s;
  };

  const problem = (runId: string, s: RunState, message: string): void => {
    if (s.lastProblem === message) return;
    s.lastProblem = message;
    emit({ type: 'warning', runId, message });
  };

  /** Read run.json; announce the run the first time, its status changes after. Returns whether the run is known. */
  const loadMeta = (runId: string, s: RunState): boolean => {
    let meta: RunMeta;
    try {
      meta = readRunMeta(path.join(root, runId));
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      // A folder without run.json yet is a run being created by hand or by an older writer: wait for it quietly.
      if (s.meta !== null || fs.existsSync(path.join(root, runId, RUN_FILES.meta))) problem(runId, s, err.message);
      return s.meta !== null;
    }
    s.lastProblem = null;
    const before = s.meta;
    s.meta = meta;
    if (before === null) {
      if (ready || fromStart) emit({ type: 'runCreated', runId, meta });
      for (const log of s.pending) {
        tail(runId, s, log);
        scheduleCheck(runId, s, log);
      }
      s.pending.clear();
    } else if (before.status !== meta.status || before.statusAt !== meta.statusAt) {
      // Lines written before the status changed are sent before it ("finished" comes after the last metrics).
      for (const log of s.tails.keys()) tail(runId, s, log);
      emit({ type: 'runStatus', runId, status: meta.status, meta });
      if (SETTLED.has(meta.status)) reportTornEnds(runId, s);
    } else if (JSON.stringify(before) !== JSON.stringify(meta)) {
      emit({ type: 'runMeta', runId, meta });
    }
    return true;
  };

  /** A run that stopped for good will not finish its half-written last line: that line was torn by a crash. */
  const reportTornEnds = (runId: string, s: RunState): void => {
    for (const [log, t] of s.tails) {
      if (t.partial > 0) {
        emit({
          type: 'warning',
          runId,
          message: `${path.join(root, runId, log)}: skipped a torn last line (${t.partial} bytes), probably from a crash`,
        });
      }
    }
  };

  const freshTail = (ino: number): Tail => ({ offset: 0, nextLine: 1, ino, fingerprint: Buffer.alloc(0), partial: 0 });

  /** Send the lines appended to one log since the last read; returns whether there were any. */
  const tail = (runId: string, s: RunState, log: LogFileName): boolean => {
    const file = path.join(root, runId, log);
    let t = s.tails.get(log);
    for (let attempt = 0; attempt < 2; attempt++) {
      let st: fs.Stats;
      try {
        st = fs.statSync(file);
      } catch {
        return false;
      }
      if (!t) {
        t = freshTail(st.ino);
        if (!ready && !fromStart) {
          // Joining a run mid-way: start after its last complete line; line numbers before it are unknown.
          t.offset = lastLineEnd(file);
          t.nextLine = t.offset === 0 ? 1 : undefined;
          t.fingerprint = bytesBefore(file, t.offset);
        }
        s.tails.set(log, t);
      } else if (st.ino !== t.ino || st.size < t.offset || !bytesBefore(file, t.offset).equals(t.fingerprint)) {
        t = freshTail(st.ino);
        s.tails.set(log, t);
        emit({ type: 'fileReset', runId, file: log });
      }
      if (st.size === t.offset) {
        t.partial = 0;
        return false;
      }
      const read = readJsonl(file, {
        from: t.offset,
        firstLine: t.nextLine,
        tail: true,
        validate:
          log === RUN_FILES.metrics ? metricLineProblem : log === RUN_FILES.events ? eventLineProblem : undefined,
      });
      // Truncated between the stat and the read: stat again, which resets the tail.
      if (read.shrunk) continue;
      const grew = read.end > t.offset;
      const readBytes = read.end - t.offset;
      t.offset = read.end;
      t.nextLine = read.nextLine;
      t.partial = read.partial;
      if (grew) t.fingerprint = bytesBefore(file, t.offset);
      for (const message of read.warnings) emit({ type: 'warning', runId, message });
      if (read.records.length > 0) {
        if (log === RUN_FILES.metrics) {
          const points = (read.records as Record<string, unknown>[]).map(toMetricPoint);
          for (const batch of batchBySize(points, readBytes)) emit({ type: 'metrics', runId, points: batch });
        } else if (log === RUN_FILES.trajectories) {
          for (const batch of batchBySize(read.records, readBytes)) {
            emit({ type: 'trajectories', runId, records: batch });
          }
        } else {
          for (const record of read.records as Record<string, unknown>[]) emit({ type: 'event', runId, record });
        }
      }
      return grew;
    }
    return false;
  };

  /**
   * (Re)arm the follow-up check settleMs after the latest change chokidar reported: its throttle hides changes for
   * 50 ms after each one it reports, so a check armed by an earlier change could fire before that window closes.
   */
  const scheduleCheck = (runId: string, s: RunState, log: LogFileName): void => {
    if (closed) return;
    clearTimeout(s.timers.get(log));
    s.timers.set(
      log,
      setTimeout(() => {
        s.timers.delete(log);
        if (closed || runs.get(runId) !== s) return;
        if (tail(runId, s, log)) scheduleCheck(runId, s, log);
      }, settleMs),
    );
  };

  /** run.json is replaced by rename; two replacements within chokidar's throttle would otherwise hide the second. */
  const scheduleMetaCheck = (runId: string): void => {
    const s = runs.get(runId);
    if (!s || closed) return;
    if (s.metaTimer) clearTimeout(s.metaTimer);
    s.metaTimer = setTimeout(() => {
      s.metaTimer = null;
      if (closed || runs.get(runId) !== s) return;
      const before = JSON.stringify(s.meta);
      loadMeta(runId, s);
      if (JSON.stringify(s.meta) !== before) scheduleMetaCheck(runId);
    }, settleMs);
  };

  /** Send live.json if it changed since the last read (or say it is gone); returns whether anything was sent. */
  const readLive = (runId: string, s: RunState): boolean => {
    const file = path.join(root, runId, RUN_FILES.live);
    let st: fs.Stats;
    try {
      st = fs.statSync(file);
    } catch {
      if (s.live === null) return false;
      s.live = null;
      emit({ type: 'liveTrajectories', runId, step: null, records: [] });
      return true;
    }
    const version = `${st.ino}:${st.size}:${st.mtimeMs}`;
    if (version === s.live) return false;
    const live = readLiveTrajectories(file);
    // Removed or replaced between the stat and the read: the change that did it arms another check.
    if (!live) return false;
    s.live = version;
    if (ready || fromStart) emit({ type: 'liveTrajectories', runId, step: live.step, records: live.records });
    return true;
  };

  /** live.json is replaced by rename, as run.json is: a replacement within chokidar's throttle is read by this check. */
  const scheduleLiveCheck = (runId: string, s: RunState): void => {
    if (closed) return;
    if (s.liveTimer) clearTimeout(s.liveTimer);
    s.liveTimer = setTimeout(() => {
      s.liveTimer = null;
      if (closed || runs.get(runId) !== s) return;
      if (readLive(runId, s)) scheduleLiveCheck(runId, s);
    }, settleMs);
  };

  const onLive = (runId: string): void => {
    const s = stateOf(runId);
    if (s.meta === null && !loadMeta(runId, s)) return;
    readLive(runId, s);
    scheduleLiveCheck(runId, s);
  };

  const onLog = (runId: string, log: LogFileName): void => {
    const s = stateOf(runId);
    if (s.meta === null && !loadMeta(runId, s)) {
      s.pending.add(log);
      return;
    }
    tail(runId, s, log);
    scheduleCheck(runId, s, log);
  };

  const onCheckpointDir = (runId: string, stepName: string, folder: string, attempt = 0): void => {
    const s = runs.get(runId);
    if (!s || closed) return;
    if (!isCompleteCheckpoint(folder)) {
      // A folder copied in by hand fills up after it appears; our own writer renames complete ones into place.
      if (attempt < CHECKPOINT_RETRIES) {
        setTimeout(() => onCheckpointDir(runId, stepName, folder, attempt + 1), CHECKPOINT_RETRY_MS);
      }
      return;
    }
    const step = Number(stepName);
    s.checkpoints.add(step);
    if (ready || fromStart) emit({ type: 'checkpointAdded', runId, step, path: folder });
  };

  const handle = (kind: 'add' | 'addDir' | 'change' | 'unlink' | 'unlinkDir', abs: string): void => {
    if (closed) return;
    const rel = path.relative(root, abs);
    if (rel === '' || rel.startsWith('..')) return;
    const parts = rel.split(path.sep);
    const runId = parts[0]!;
    if (parts.length === 1) {
      if (kind === 'unlinkDir' && runs.has(runId)) {
        const s = runs.get(runId)!;
        for (const timer of s.timers.values()) clearTimeout(timer);
        if (s.metaTimer) clearTimeout(s.metaTimer);
        if (s.liveTimer) clearTimeout(s.liveTimer);
        runs.delete(runId);
        if (s.meta !== null) emit({ type: 'runRemoved', runId });
      }
      return;
    }
    if (parts.length === 2) {
      const name = parts[1]!;
      if (name === RUN_FILES.live) {
        if (kind === 'add' || kind === 'change') onLive(runId);
        else if (kind === 'unlink' && runs.get(runId)?.meta) readLive(runId, runs.get(runId)!);
        return;
      }
      if (kind === 'unlink' && name === RUN_FILES.labels) {
        if (runs.has(runId)) loadMeta(runId, runs.get(runId)!);
        return;
      }
      if (kind === 'unlink') {
        const s = runs.get(runId);
        clearTimeout(s?.timers.get(name as LogFileName));
        s?.timers.delete(name as LogFileName);
        s?.tails.delete(name as LogFileName);
        return;
      }
      if (kind !== 'add' && kind !== 'change') return;
      if (name === RUN_FILES.meta || name === RUN_FILES.labels) {
        loadMeta(runId, stateOf(runId));
        scheduleMetaCheck(runId);
      } else if (isLogFile(name)) {
        onLog(runId, name);
      }
      return;
    }
    if (parts.length === 3) {
      const s = runs.get(runId) ?? (kind === 'addDir' ? stateOf(runId) : undefined);
      if (!s) return;
      if (kind === 'addDir') {
        if (s.meta === null) loadMeta(runId, s);
        onCheckpointDir(runId, parts[2]!, abs);
      } else if (kind === 'unlinkDir') {
        const step = Number(parts[2]);
        if (s.checkpoints.delete(step)) emit({ type: 'checkpointRemoved', runId, step });
      }
    }
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
        handle(kind, p);
      } catch (err) {
        emit({
          type: 'warning',
          runId: path.relative(root, p).split(path.sep)[0],
          message: `${p}: ${(err as Error).message}`,
        });
      }
    });
  }
  watcher.on('error', (err: unknown) =>
    emit({ type: 'warning', message: `watching ${root}: ${(err as Error).message}` }),
  );
  await new Promise<void>((resolve) => watcher.once('ready', () => resolve()));
  ready = true;

  return {
    async close(): Promise<void> {
      closed = true;
      for (const s of runs.values()) {
        if (s.metaTimer) clearTimeout(s.metaTimer);
        if (s.liveTimer) clearTimeout(s.liveTimer);
        for (const timer of s.timers.values()) clearTimeout(timer);
      }
      await watcher.close();
    },
  };
}
