/**
 * One metric of one run as two plain columns (x, y), read straight from metrics.jsonl for getRunsMetricSeries: a
 * 20-run overlay of runs with 10^5 lines each must not parse 2·10^6 lines into objects with every metric (the host's
 * getMetricSeries cache holds whole lines; 20 such runs took ~30 s and ~900 MB, tests/bench/appScaleBench.ts).
 *
 * Lines as the run loop writes them (JSON.stringify of numbers, `{"step":…` first) are read by looking up the key's
 * text; any other line is JSON.parsed as before, so the result is the same as parsing every line. A value that is not a
 * finite number (null, as NaN is written) is NaN, as toMetricPoint reads it. Only complete lines count (a line being
 * written is read next time). Columns are cached by run and metric, extended from the byte offset read so far while the
 * file grows, and read again when it was replaced or cut (a resume); at most MAX_COLUMNS are kept (least recently used
 * dropped), so the host's memory stays bounded however many runs are overlaid over a session. Several metrics of one
 * run are read in one pass over the file (metricColumns: a run page's getMetricSeries asks for all of them). A column
 * not read yet may start from a `seed` (the run's pre-parsed rows) and read the log only past it.
 */
import { isAscii } from 'node:buffer';
import fs from 'node:fs';
import { openExistingHomeFile } from '../../runs/folder/homeFile';
import { parseNumber, parsedNumberEnd } from '../../runs/summary/metricStats';

export interface Column {
  x: number[];
  y: number[];
}

interface Cached extends Column {
  ino: number;
  /** Bytes of the file consumed (up to the end of the last complete line). */
  offset: number;
  /** The first bytes of the file when read, to notice a file rewritten to at least the same length. */
  head: string;
}

/** About 1.6 MB each for a run of 10^5 lines: at most ~200 MB held. */
export const MAX_COLUMNS = 120;
const HEAD_BYTES = 64;
const CHUNK = 8 << 20;
const NEWLINE = 0x0a;

const cache = new Map<string, Cached>();

export function clearMetricColumns(): void {
  cache.clear();
}

/**
 * The number after `"key":` in a fast-path line (NaN for null), or undefined when the line does not log the key. The
 * key must begin a member (after `{` or `,`): `"x\"reward":` does not log `reward`.
 */
function fastValue(line: string, needle: string): number | undefined {
  // The key's last member: JSON.parse keeps a repeated key's last value.
  let at = -1;
  for (let k = nextKey(line, needle, 0); k > 0; k = nextKey(line, needle, k + needle.length)) at = k;
  if (at <= 0) return undefined;
  const from = at + needle.length;
  let end = from;
  while (end < line.length && line.charCodeAt(end) !== 44 /* , */ && line.charCodeAt(end) !== 125 /* } */) end++;
  const text = line.slice(from, end);
  if (text === 'null') return NaN;
  const value = Number(text);
  return text.length > 0 && !Number.isNaN(value) ? value : undefined;
}

/** Whether a line is as the run loop writes it: an object of numbers (or null) with `step` first and no strings. */
function fastLine(line: string): boolean {
  return line.startsWith('{"step":') && line.endsWith('}') && !/:\s*"|[[{]/.test(line.slice(1));
}

/** Occurrences of `needle` in `text`. */
function count(text: string, needle: string): number {
  let n = 0;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) n++;
  return n;
}

/**
 * Whether every line of a chunk (complete lines, '\n'-separated) is as the run loop writes them: each starts with
 * `{"step":` and holds one flat object (one `{`, no array) that ends the line with its only `}`. Then a key's text is
 * found by searching the chunk for it, line by line only where it occurs. A torn line (a crash mid-write, then the
 * next line after it) has no `}` of its own, so a chunk holding one is read line by line and the torn line skipped.
 * Keys are taken to be unique in a line, as JSON.stringify writes them (checking costs a sixth of a cold overlay); a
 * line not written so is read by JSON.parse where the chunk is not all run-loop lines.
 */
function fastChunk(text: string): boolean {
  const lines = count(text, '\n') + 1;
  // (String values need no check: inside a string every quote is escaped, so a key's text `"k":` after `,` or `{`
  // cannot occur there; a string where a number should be reads as no value, as toMetricPoint skips it.)
  return (
    text.startsWith('{"step":') &&
    text.endsWith('}') &&
    count(text, '}\n{"step":') === lines - 1 &&
    // step once a line (a repeated key follows a comma): JSON.parse would keep a repeated step's last value
    count(text, '{') === lines &&
    count(text, '}') === lines &&
    text.indexOf('[') < 0
  );
}

/** The next `"key":` at or after `from` that begins a member (after `{` or `,`), or -1. */
function nextKey(text: string, needle: string, from: number): number {
  let at = text.indexOf(needle, from);
  while (at > 0 && text.charCodeAt(at - 1) !== 44 /* , */ && text.charCodeAt(at - 1) !== 123 /* { */) {
    at = text.indexOf(needle, at + 1);
  }
  return at;
}

/** The number written at text[from…] up to `,` or `}` (NaN for null), or undefined when it is not a number. */
function numberAt(text: string, from: number): number | undefined {
  // A JSON number ending the member is read without a slice (the same value as Number() of its text).
  const fast = parseNumber(text, from, text.length);
  const after = parsedNumberEnd();
  if (after >= 0 && (text.charCodeAt(after) === 44 || text.charCodeAt(after) === 125)) return fast;
  let end = from;
  while (end < text.length && text.charCodeAt(end) !== 44 && text.charCodeAt(end) !== 125) end++;
  const word = text.slice(from, end);
  if (word === 'null') return NaN;
  const value = Number(word);
  return word.length > 0 && !Number.isNaN(value) ? value : undefined;
}

function readFastChunk(text: string, key: string, xKey: 'step' | 'time', into: Column): void {
  const needle = `${JSON.stringify(key)}:`;
  const xNeedle = `"${xKey}":`;
  const STEP = '{"step":'.length;
  for (let at = nextKey(text, needle, 0); at >= 0;) {
    const start = text.lastIndexOf('\n', at) + 1;
    let end = text.indexOf('\n', at);
    if (end < 0) end = text.length;
    const step = numberAt(text, start + STEP);
    const y = numberAt(text, at + needle.length);
    if (step !== undefined && Number.isFinite(step) && y !== undefined) {
      let x: number | undefined = step;
      if (xKey !== 'step') {
        const xAt = nextKey(text, xNeedle, start);
        x = xAt >= 0 && xAt < end ? numberAt(text, xAt + xNeedle.length) : NaN;
      }
      into.x.push(x ?? NaN);
      into.y.push(y);
    }
    at = nextKey(text, needle, end);
  }
}

function readLines(text: string, fast: boolean, key: string, xKey: 'step' | 'time', into: Column): void {
  // (step and time asked as metrics are read line by line: the chunk search assumes they are not the key.)
  if (fast && key !== 'step' && key !== 'time') return readFastChunk(text, key, xKey, into);
  const needle = `${JSON.stringify(key)}:`;
  const xNeedle = `"${xKey}":`;
  let start = 0;
  while (start < text.length) {
    let end = text.indexOf('\n', start);
    if (end < 0) end = text.length;
    const line = text.slice(start, end).trim();
    start = end + 1;
    if (!line) continue;
    let x: number | undefined;
    let y: number | undefined;
    if (fastLine(line)) {
      const step = fastValue(line, '"step":');
      if (step === undefined || !Number.isFinite(step)) continue;
      y = fastValue(line, needle);
      if (y === undefined) continue;
      x = xKey === 'step' ? step : fastValue(line, xNeedle);
    } else {
      let record: unknown;
      try {
        record = JSON.parse(line);
      } catch {
        continue;
      }
      if (typeof record !== 'object' || record === null || Array.isArray(record)) continue;
      const r = record as Record<string, unknown>;
      if (typeof r.step !== 'number' || !Number.isFinite(r.step) || !Object.hasOwn(r, key)) continue;
      const v = r[key];
      if (typeof v !== 'number' && v !== null) continue;
      y = v === null ? NaN : v;
      const xv = r[xKey];
      x = typeof xv === 'number' ? xv : NaN;
    }
    if (x === undefined) x = NaN;
    into.x.push(x);
    into.y.push(y);
  }
}

/**
 * Columns of the keys asked (in their order; null for a key it does not hold) read elsewhere than the log, up to the
 * log offset `end` (the run's pre-parsed rows, engine/runs/summary/metricRows.ts); null when there are none.
 */
export type ColumnSeed = () => { end: number; columns: (Column | null)[] } | null;

/** The (x, y) column of metric `key` in `file` (metrics.jsonl), x the step or the time; empty when there is no file. */
export function metricColumn(runId: string, file: string, key: string, xKey: 'step' | 'time'): Column {
  return metricColumns(runId, file, [key], xKey)[0]!;
}

/**
 * The columns of several metrics of one file, in the order asked, reading the file once for all of them (a run page
 * asks for every metric of a run).
 */
export function metricColumns(
  runId: string,
  file: string,
  keys: readonly string[],
  xKey: 'step' | 'time',
  seed?: ColumnSeed,
): Column[] {
  const ids = keys.map((key) => `${runId}\n${xKey}\n${key}`);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch {
    for (const id of ids) cache.delete(id);
    return keys.map(() => ({ x: [], y: [] }));
  }
  const columns: Cached[] = [];
  const fd = openExistingHomeFile(file);
  try {
    const head = headOf(fd, HEAD_BYTES);
    let seeded: ReturnType<ColumnSeed> | undefined;
    for (const [i, id] of ids.entries()) {
      const seen = ids.indexOf(id);
      if (seen < columns.length) {
        columns.push(columns[seen]!);
        continue;
      }
      let c = cache.get(id);
      if (c && (c.ino !== stat.ino || stat.size < c.offset || head.slice(0, c.head.length) !== c.head)) c = undefined;
      if (!c && seed) {
        // Not read yet in this process: from the run's pre-parsed rows where it has them, then the log past them.
        if (seeded === undefined) seeded = seed();
        const s = seeded?.columns[i];
        if (s && seeded!.end <= stat.size) c = { ino: stat.ino, offset: seeded!.end, head, x: s.x, y: s.y };
      }
      columns.push(c ?? { ino: stat.ino, offset: 0, head, x: [], y: [] });
    }
    // Columns read up to the same offset are extended by one read of the file (usually all of them).
    const byOffset = new Map<number, number[]>();
    columns.forEach((c, i) => {
      if (ids.indexOf(ids[i]!) !== i) return; // a key asked twice is read once
      const group = byOffset.get(c.offset);
      if (group) group.push(i);
      else byOffset.set(c.offset, [i]);
    });
    for (const [offset, group] of byOffset) {
      // Whole lines only: the bytes after a chunk's last newline are moved to the buffer's start and read again with
      // the next chunk (as bytes, so a character cut by the chunk's end is decoded whole).
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(1, stat.size - offset)));
      let pos = offset;
      let carry = 0;
      let consumed = offset;
      while (pos < stat.size) {
        if (carry === buf.length) break; // one line longer than CHUNK: a log the run loop never writes (read no further)
        const n = fs.readSync(fd, buf, carry, Math.min(buf.length - carry, stat.size - pos), pos);
        if (n === 0) break;
        pos += n;
        const filled = carry + n;
        const last = buf.lastIndexOf(NEWLINE, filled - 1);
        if (last < 0) {
          carry = filled;
          continue;
        }
        const bytes = buf.subarray(0, last);
        // ASCII (every run-loop line with ASCII names) decodes as latin1, a plain copy; utf8 checks every byte.
        const lines = bytes.toString(isAscii(bytes) ? 'latin1' : 'utf8');
        const fast = fastChunk(lines);
        consumed += last + 1;
        for (const i of group) {
          readLines(lines, fast, keys[i]!, xKey, columns[i]!);
          columns[i]!.offset = consumed;
        }
        carry = filled - (last + 1);
        buf.copy(buf, 0, last + 1, filled);
      }
    }
    for (const c of columns) if (c.head.length < HEAD_BYTES) c.head = head;
  } finally {
    fs.closeSync(fd);
  }
  ids.forEach((id, i) => {
    cache.delete(id);
    cache.set(id, columns[i]!);
  });
  while (cache.size > MAX_COLUMNS) cache.delete(cache.keys().next().value!);
  return columns;
}

function headOf(fd: number, bytes: number): string {
  const buf = Buffer.alloc(bytes);
  const n = fs.readSync(fd, buf, 0, bytes, 0);
  return buf.toString('latin1', 0, n);
}
