/**
 * The run index's summary of a metrics.jsonl (last step; last/min/max of every metric; the number of lines) read
 * without JSON.parse of every line: a home of 1,000 runs, 20 of them with 10^5 lines, took ~7 s to index when each line
 * became an object with every metric (tests/bench/appScaleBench.ts).
 *
 * A line as the run loop writes it (JSON.stringify of numbers or null: `{"step":1,"time":…,"reward":0.5}`) is read by
 * one pass over its characters; any other shape (a string or nested value, a key with an escape, spaces, a repeated key,
 * a number JSON would refuse, a torn line) is JSON.parsed and summarised as before (readJsonl, metricLineProblem,
 * toMetricPoint), so the summary is the same as parsing every line. Only complete lines count (tail reading).
 */
import fs from 'node:fs';
import { HomeFileError, openExistingHomeFile } from '../folder/homeFile';
import { metricLineProblem, metricNames, ownEntry, toMetricPoint } from './metricPoint';

export interface MetricStats {
  /** The last value written; null when it was not finite (NaN is stored as null in JSON). */
  last: number | null;
  /** Over finite values only; null when there were none. */
  min: number | null;
  max: number | null;
}

/** What a summary holds of the log; extended in place by scanMetricStats. */
export interface MetricsSummary {
  /** Step of the last metrics line; null before the first. */
  steps: number | null;
  metrics: Record<string, MetricStats>;
  /** Metrics lines read (valid records), for getRun's metricPoints. */
  lines: number;
}

/**
 * Receives every metrics record a scan reads, in order: its step, its time (NaN when absent or not a number), and its
 * metrics as `names[i]` = `values[i]` for i < n (null read as NaN). The arrays are reused from line to line.
 */
export type RowSink = (
  step: number,
  time: number,
  names: readonly string[],
  values: readonly number[],
  n: number,
) => void;

export interface ScanEnd {
  /** Offset just after the last complete line read. */
  end: number;
  /** Line number of the line at `end`. */
  nextLine: number;
}

const CHUNK = 8 << 20;
const NEWLINE = 0x0a;

/** fs.readSync's positional form: how the scan reads (a test passes one that counts the bytes read). */
export type ReadAt = (fd: number, buffer: Buffer, offset: number, length: number, position: number) => number;
export const readAt: ReadAt = (fd, buffer, offset, length, position) =>
  fs.readSync(fd, buffer, offset, length, position);

/** A key seen in this scan: its name, its stats entry (made when first needed), the last line it was seen on. */
interface Slot {
  name: string;
  /** 1 for step, 2 for time (not metrics), 0 for a metric. */
  kind: number;
  stats: MetricStats | null;
  line: number;
}

/** A member as the previous line had it at the same place: its key's text `"name":`, and the key's slot. */
interface Member {
  needle: string;
  slot: Slot;
}

function add(stats: MetricStats, v: number): void {
  if (Number.isFinite(v)) {
    stats.last = v;
    stats.min = stats.min === null ? v : Math.min(stats.min, v);
    stats.max = stats.max === null ? v : Math.max(stats.max, v);
  } else {
    stats.last = null;
  }
}

const newStats = (): MetricStats => ({ last: null, min: null, max: null });

/** The summary of one parsed record, as the index always did it (toMetricPoint, then every metric name). */
export function addRecord(summary: MetricsSummary, record: Record<string, unknown>): void {
  const point = toMetricPoint(record);
  summary.steps = point.step;
  summary.lines++;
  for (const name of metricNames(point)) add(ownEntry(summary.metrics, name, newStats), point[name]!);
}

const POW10 = [
  1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20,
  1e21, 1e22,
];
const EXACT = 2 ** 53;

/** Where the last parseNumber ended (-1: not a JSON number). */
let numberEnd = -1;

/** Where the last parseNumber call's number ended, or -1 when there was no JSON number there. */
export function parsedNumberEnd(): number {
  return numberEnd;
}

/**
 * The JSON number at s[at…] (strict JSON grammar; numberEnd set after it), or NaN with numberEnd -1. Its digits as an
 * integer below 2^53 and a power of ten up to 10^22 are both exact, so one multiplication or division rounds it
 * correctly (Clinger's fast path), as Number() does; other numbers go to Number().
 */
export function parseNumber(s: string, at: number, end: number): number {
  let i = at;
  numberEnd = -1;
  const negative = i < end && s.charCodeAt(i) === 45; /* - */
  if (negative) i++;
  if (i >= end) return NaN;
  let c = s.charCodeAt(i);
  let w = 0;
  let e10 = 0;
  if (c === 48 /* 0 */) i++;
  else if (c >= 49 && c <= 57) {
    while (i < end && (c = s.charCodeAt(i)) >= 48 && c <= 57) {
      w = w * 10 + (c - 48);
      i++;
    }
  } else return NaN;
  if (i < end && s.charCodeAt(i) === 46 /* . */) {
    i++;
    const d = i;
    while (i < end && (c = s.charCodeAt(i)) >= 48 && c <= 57) {
      w = w * 10 + (c - 48);
      i++;
    }
    if (i === d) return NaN;
    e10 = d - i;
  }
  if (i < end && ((c = s.charCodeAt(i)) === 101 || c === 69) /* e E */) {
    i++;
    let sign = 1;
    if (i < end && ((c = s.charCodeAt(i)) === 43 || c === 45)) {
      if (c === 45) sign = -1;
      i++;
    }
    const d = i;
    let x = 0;
    while (i < end && (c = s.charCodeAt(i)) >= 48 && c <= 57) {
      if (x < 1e6) x = x * 10 + (c - 48);
      i++;
    }
    if (i === d) return NaN;
    e10 += sign * x;
  }
  numberEnd = i;
  if (w < EXACT && e10 >= -22 && e10 <= 22) {
    const v = e10 < 0 ? w / POW10[-e10]! : w * POW10[e10]!;
    return negative ? -v : v;
  }
  return Number(s.slice(at, i));
}

/**
 * Scanner state kept across lines: keys by name, the previous line's members (lines of one run mostly have the same
 * keys in the same order: a key is then matched by its text, not read again), the current line's values.
 */
class LineScanner {
  readonly slots = new Map<string, Slot>();
  readonly shape: Member[] = [];
  readonly slotsOf: Slot[] = [];
  readonly values: number[] = [];
  readonly names: string[] = [];
  line = 0;

  constructor(
    readonly summary: MetricsSummary,
    readonly onRow?: RowSink,
  ) {}

  /** The slot of the key at s[pos] (a `"`), its text checked: no escape or control character. */
  private key(s: string, pos: number, end: number, k: number): Member | undefined {
    const keyStart = pos + 1;
    const q = s.indexOf('"', keyStart);
    if (q < 0 || q >= end - 1 || s.charCodeAt(q + 1) !== 58 /* : */) return undefined;
    for (let i = keyStart; i < q; i++) {
      const c = s.charCodeAt(i);
      if (c === 92 /* \ */ || c < 32) return undefined;
    }
    const name = s.slice(keyStart, q);
    let slot = this.slots.get(name);
    if (slot === undefined) {
      slot = { name, kind: name === 'step' ? 1 : name === 'time' ? 2 : 0, stats: null, line: 0 };
      this.slots.set(name, slot);
    }
    const member = { needle: s.slice(pos, q + 2), slot };
    this.shape[k] = member;
    return member;
  }

  /**
   * Summarises s[start, end) if it is a line as the run loop writes it; false (nothing added) when it is not, for the
   * caller to parse it in full.
   */
  fast(s: string, start: number, end: number): boolean {
    if (end - start < 2 || s.charCodeAt(start) !== 123 /* { */ || s.charCodeAt(end - 1) !== 125 /* } */) return false;
    const line = ++this.line;
    const shape = this.shape;
    let n = 0;
    let step = NaN;
    let time = NaN;
    let pos = start + 1;
    for (let k = 0; ; k++) {
      if (s.charCodeAt(pos) !== 34 /* " */) return false;
      let member = k < shape.length ? shape[k]! : undefined;
      if (member === undefined || !s.startsWith(member.needle, pos)) member = this.key(s, pos, end, k);
      if (member === undefined) return false;
      const at = pos + member.needle.length;
      let value: number;
      let next: number;
      if (s.startsWith('null', at)) {
        value = NaN;
        next = at + 4;
      } else {
        value = parseNumber(s, at, end);
        next = numberEnd;
        if (next < 0) return false;
      }
      const slot = member.slot;
      // A repeated key: JSON.parse keeps the last value at the first one's place; the full parse says which.
      if (slot.line === line) return false;
      slot.line = line;
      if (slot.kind === 1) step = value;
      else if (slot.kind === 2) time = value;
      else if (slot.kind === 0) {
        this.slotsOf[n] = slot;
        this.values[n] = value;
        n++;
      }
      const c = s.charCodeAt(next);
      if (c === 44 /* , */) {
        pos = next + 1;
        continue;
      }
      if (c === 125 /* } */ && next === end - 1) break;
      return false;
    }
    // No finite step: not a metrics record (metricLineProblem); the full parse skips it.
    if (!Number.isFinite(step)) return false;
    const summary = this.summary;
    summary.steps = step;
    summary.lines++;
    for (let i = 0; i < n; i++) {
      const slot = this.slotsOf[i]!;
      add((slot.stats ??= ownEntry(summary.metrics, slot.name, newStats)), this.values[i]!);
    }
    if (this.onRow) {
      for (let i = 0; i < n; i++) this.names[i] = this.slotsOf[i]!.name;
      this.onRow(step, time, this.names, this.values, n);
    }
    return true;
  }

  /** A line of any other shape: parsed in full, as readJsonl and the index did. */
  slow(s: string, start: number, end: number): void {
    const text = s.slice(start, end).trim();
    if (text === '') return;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      return;
    }
    if (metricLineProblem(value) !== undefined) return;
    addRecord(this.summary, value as Record<string, unknown>);
    if (this.onRow) {
      const point = toMetricPoint(value as Record<string, unknown>);
      const names = metricNames(point);
      const time = (value as Record<string, unknown>).time;
      this.onRow(
        point.step,
        typeof time === 'number' ? time : NaN,
        names,
        names.map((name) => point[name]!),
        names.length,
      );
    }
  }
}

/**
 * Adds the complete lines of `file` from byte `from` (a line start; `firstLine` its number) to `summary`; a line still
 * being written is left for the next scan. A missing file, or one shorter than `from`, adds nothing. `chunkBytes`: the
 * read size (a test's small chunks cross lines); `read`: how bytes are read (a test counts them); `onRow`: given every
 * record read (the run loop's pre-parsed rows, metricRows.ts).
 */
export function scanMetricStats(
  file: string,
  from: number,
  firstLine: number,
  summary: MetricsSummary,
  chunkBytes = CHUNK,
  read: ReadAt = readAt,
  onRow?: RowSink,
): ScanEnd {
  const out: ScanEnd = { end: from, nextLine: firstLine };
  let fd: number;
  try {
    fd = openExistingHomeFile(file);
  } catch (err) {
    // Missing, or not a regular file (a FIFO would block in open(); homeFile.ts): nothing to summarise.
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || err instanceof HomeFileError) return out;
    throw err;
  }
  try {
    const size = fs.fstatSync(fd).size;
    if (size <= from) return out;
    const scanner = new LineScanner(summary, onRow);
    const buf = Buffer.allocUnsafe(Math.max(1, Math.min(chunkBytes, size - from)));
    let pos = from;
    let carry = 0; // bytes at the start of buf: the unfinished line of the previous read
    while (pos < size) {
      const n = read(fd, buf, carry, Math.min(buf.length - carry, size - pos), pos);
      if (n === 0) break;
      pos += n;
      const filled = carry + n;
      const last = buf.lastIndexOf(NEWLINE, filled - 1);
      if (last < 0) {
        if (filled === buf.length) {
          // One line longer than the buffer: read it by itself, then go on after it.
          const lineEnd = lineEndFrom(fd, pos, size, read);
          if (lineEnd < 0) break;
          const whole = Buffer.alloc(lineEnd - out.end);
          read(fd, whole, 0, whole.length, out.end);
          const text = whole.toString('utf8');
          if (!scanner.fast(text, 0, text.length)) scanner.slow(text, 0, text.length);
          out.end = lineEnd + 1;
          out.nextLine++;
          pos = out.end;
          carry = 0;
          continue;
        }
        carry = filled;
        continue;
      }
      const text = buf.toString('utf8', 0, last);
      let start = 0;
      while (start <= text.length) {
        let nl = text.indexOf('\n', start);
        if (nl < 0) nl = text.length;
        if (!scanner.fast(text, start, nl)) scanner.slow(text, start, nl);
        out.nextLine++;
        start = nl + 1;
      }
      out.end += last + 1;
      carry = filled - (last + 1);
      buf.copy(buf, 0, last + 1, filled);
    }
    return out;
  } finally {
    fs.closeSync(fd);
  }
}

/** Offset of the next newline at or after `from`, or -1 before `size`. */
function lineEndFrom(fd: number, from: number, size: number, read: ReadAt): number {
  const buf = Buffer.allocUnsafe(1 << 16);
  for (let pos = from; pos < size;) {
    const n = read(fd, buf, 0, Math.min(buf.length, size - pos), pos);
    if (n === 0) return -1;
    const nl = buf.subarray(0, n).indexOf(NEWLINE);
    if (nl >= 0) return pos + nl;
    pos += n;
  }
  return -1;
}
