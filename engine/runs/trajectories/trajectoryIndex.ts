/**
 * The host's index of one run's trajectories.jsonl (issue 19 "Finding the bad trajectory"): the byte range and the
 * training step of every complete line, built by a streaming scan (1 MiB at a time, so memory stays bounded by the
 * line count, not the file size) and extended incrementally as the run appends. It lives in the host's memory, one per
 * run, never on disk: the run folder is written only by the run's own process (docs/architecture.md "Run folder").
 *
 * With it any step opens directly (no paging from the newest lines), and filtered queries (step range, reward,
 * family, agent, outcome, malformed, text) scan only the lines of the steps asked for, newest first, with a byte
 * budget per request; an answer says where to continue.
 *
 * The step of a line is read from its first bytes (the run loop writes `{"step":N,…}`, runLoop.ts); a line of another
 * shape is parsed whole, and a line that is not JSON gets step -1 (it is sent as { unreadable, line }). An unfinished
 * last line (the writer mid-line, or a torn end after a crash) is not indexed until its newline arrives. A file that
 * shrank, was replaced (another inode) or whose indexed part changed (the byte before the scanned end is no longer a
 * newline: a resume cut it and wrote past the old end) is indexed again from the start.
 */
import fs from 'node:fs';
import { openExistingHomeFile } from '../folder/homeFile';

/** Byte ranges [start, end) and steps of the complete lines of one trajectories.jsonl, found so far. */
export interface TrajectoryIndex {
  file: string;
  ino: number;
  /** Bytes scanned: the start of the first line not yet complete. */
  scanned: number;
  starts: number[];
  ends: number[];
  /** Step of each line; -1 where the line had none (not JSON, or no numeric step). */
  steps: number[];
  /** Whether `steps` never decreases (a run's file does: then a step is found by binary search). */
  ordered: boolean;
  /** stepSpan's answer for the first `lines` lines. */
  span?: { lines: number; value: { first: number | null; last: number | null; count: number } };
}

const CHUNK = 1 << 20;
const STEP_PREFIX = /^\{"step":(-?\d+)[,}]/;

function emptyIndex(file: string, ino: number): TrajectoryIndex {
  return { file, ino, scanned: 0, starts: [], ends: [], steps: [], ordered: true };
}

/** The step of one line: from its prefix when the run loop wrote it, else by parsing it; -1 when it has none. */
export function stepOfLine(text: string): number {
  const m = STEP_PREFIX.exec(text);
  if (m) return Number(m[1]);
  try {
    const v = JSON.parse(text) as { step?: unknown } | null;
    return v && typeof v === 'object' && typeof v.step === 'number' && Number.isFinite(v.step) ? v.step : -1;
  } catch {
    return -1;
  }
}

/** Whether the byte before `scanned` is still the newline that ended the last indexed line. */
function stillEndsAt(fd: number, scanned: number): boolean {
  if (scanned === 0) return true;
  const b = Buffer.alloc(1);
  return fs.readSync(fd, b, 0, 1, scanned - 1) === 1 && b[0] === 0x0a;
}

/**
 * Brings `index` (or a new one) up to date with the file: scans only what was appended since, or everything again when
 * the file was cut, replaced or rewritten. Returns the index to keep (possibly a new object).
 */
export function updateTrajectoryIndex(file: string, index?: TrajectoryIndex): TrajectoryIndex {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    return emptyIndex(file, 0);
  }
  let fd: number;
  try {
    fd = openExistingHomeFile(file); // never a FIFO nor a link out of the run's folder (homeFile.ts)
  } catch {
    return emptyIndex(file, 0);
  }
  try {
    if (
      !index ||
      index.file !== file ||
      index.ino !== stat.ino ||
      stat.size < index.scanned ||
      !stillEndsAt(fd, index.scanned)
    ) {
      index = emptyIndex(file, stat.ino);
    }
    if (stat.size <= index.scanned) return index;
    const buf = Buffer.allocUnsafe(CHUNK);
    // A line longer than a chunk is carried over in pieces until its newline arrives.
    let carry: Buffer[] = [];
    let lineStart = index.scanned;
    let pos = index.scanned;
    while (pos < stat.size) {
      const n = fs.readSync(fd, buf, 0, Math.min(buf.length, stat.size - pos), pos);
      if (n === 0) break;
      let from = 0;
      for (let i = buf.indexOf(0x0a, 0); i !== -1 && i < n; i = buf.indexOf(0x0a, i + 1)) {
        const end = pos + i;
        if (end > lineStart) {
          // Only the head of the line is needed for its step (the prefix), unless it has another shape.
          const headEnd = Math.min(i, from + 64);
          let head = buf.toString('utf8', from, headEnd);
          if (carry.length) head = Buffer.concat([...carry, buf.subarray(from, headEnd)]).toString('utf8', 0, 64);
          let step: number;
          const m = STEP_PREFIX.exec(head);
          if (m) step = Number(m[1]);
          else {
            const whole = carry.length ? Buffer.concat([...carry, buf.subarray(from, i)]) : buf.subarray(from, i);
            step = stepOfLine(whole.toString('utf8'));
          }
          if (index.steps.length > 0 && step < index.steps[index.steps.length - 1]!) index.ordered = false;
          index.starts.push(lineStart);
          index.ends.push(end);
          index.steps.push(step);
        }
        carry = [];
        lineStart = end + 1;
        from = i + 1;
      }
      // The rest of the chunk belongs to a line not finished in it: keep its head (and all of it for the rare line
      // without the step prefix, which needs a parse; bounded by the file's longest line).
      if (from < n) carry.push(Buffer.from(buf.subarray(from, n)));
      pos += n;
    }
    // An unfinished last line is scanned again next time.
    index.scanned = lineStart;
    return index;
  } finally {
    fs.closeSync(fd);
  }
}

/** Reads and parses the lines at `positions` (ascending), grouping neighbours into one read; bad JSON becomes { unreadable, line }. */
export function readTrajectoryLines(index: TrajectoryIndex, positions: readonly number[]): unknown[] {
  const out: unknown[] = [];
  if (positions.length === 0) return out;
  const fd = openExistingHomeFile(index.file);
  try {
    let i = 0;
    while (i < positions.length) {
      // a run of consecutive lines, up to 8 MiB (or one line, however long)
      let j = i + 1;
      while (
        j < positions.length &&
        positions[j] === positions[j - 1]! + 1 &&
        index.ends[positions[j]!]! - index.starts[positions[i]!]! <= 8 << 20
      ) {
        j++;
      }
      const from = index.starts[positions[i]!]!;
      const to = index.ends[positions[j - 1]!]!;
      const buf = Buffer.alloc(to - from);
      fs.readSync(fd, buf, 0, buf.length, from);
      for (let k = i; k < j; k++) {
        const p = positions[k]!;
        const text = buf.toString('utf8', index.starts[p]! - from, index.ends[p]! - from);
        try {
          out.push(JSON.parse(text));
        } catch {
          out.push({ unreadable: true, line: p + 1 });
        }
      }
      i = j;
    }
  } finally {
    fs.closeSync(fd);
  }
  return out;
}

/** Positions [first, end) of the lines of one step, or of the first step after it when it has none; null past the last. */
export function linesOfStep(index: TrajectoryIndex, step: number): { step: number; first: number; end: number } | null {
  let best = -1;
  if (index.ordered) {
    // the first line whose step is ≥ step
    let lo = 0;
    let hi = index.steps.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (index.steps[mid]! < step) lo = mid + 1;
      else hi = mid;
    }
    best = lo < index.steps.length ? lo : -1;
  } else {
    for (let i = 0; i < index.steps.length; i++) {
      const s = index.steps[i]!;
      if (s >= step && (best === -1 || s < index.steps[best]!)) {
        best = i;
        if (s === step) break;
      }
    }
  }
  if (best === -1) return null;
  const found = index.steps[best]!;
  let end = best;
  while (end < index.steps.length && index.steps[end] === found) end++;
  return { step: found, first: best, end };
}

/** The steps the file holds: first, last and how many distinct. */
export function stepSpan(index: TrajectoryIndex): { first: number | null; last: number | null; count: number } {
  if (index.span?.lines === index.steps.length) return index.span.value;
  let first: number | null = null;
  let last: number | null = null;
  const seen = new Set<number>();
  for (const s of index.steps) {
    if (s < 0) continue;
    seen.add(s);
    if (first === null || s < first) first = s;
    if (last === null || s > last) last = s;
  }
  const value = { first, last, count: seen.size };
  index.span = { lines: index.steps.length, value };
  return value;
}
