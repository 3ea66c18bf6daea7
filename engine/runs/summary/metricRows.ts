/**
 * A run's metrics as pre-parsed binary rows, `metrics.rows.<gen>.bin` beside metrics.jsonl, so a cold 20-run overlay reads
 * numbers instead of parsing 2·10^6 lines of text (engine/api/views/runsSeries.ts; tests/bench/appScaleBench.ts). The run
 * loop's summary keeper (summarySidecar.ts) appends the rows of the lines it summarises; the summary sidecar records
 * how many bytes of the file are valid, the metric names by id, and the part of metrics.jsonl they cover (its end
 * offset and the bytes before it), so a reader takes the rows, checks them against the log, and parses the log only
 * past them. The log stays the truth: rows that do not match it are ignored. A writer that starts the rows over (a
 * resume cut the log back) writes a file of a new generation and removes the old one once the sidecar names the new:
 * a reader that took the old sidecar reads the old file or none, never the new rows under the old names.
 *
 * One row per metrics record (the lines summarised: a finite step, as metricLineProblem/toMetricPoint read them):
 * u16 n, f64 step, f64 time (NaN when absent), then n × (u16 name id, f64 value; NaN for null). Little-endian.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { openExistingHomeFile } from '../folder/homeFile';
import type { RowSink } from './metricStats';

const ROWS_NAME = /^metrics\.rows\.[0-9a-f]{8}\.bin$/;

/** A new generation's file name. */
export function newRowsFile(): string {
  return `metrics.rows.${randomBytes(4).toString('hex')}.bin`;
}

/** Whether `name` is a rows file's name (the only names a sidecar may point at). */
export function isRowsFile(name: string): boolean {
  return ROWS_NAME.test(name);
}

/** Removes the run's rows files other than `keep`. */
export function removeOtherRows(dir: string, keep: string | null): void {
  for (const name of fs.readdirSync(dir)) {
    if (isRowsFile(name) && name !== keep) fs.rmSync(path.join(dir, name), { force: true });
  }
}
/** Ids are u16: a run with more metric names than this keeps no rows. */
const MAX_NAMES = 0xffff;

/** A metric's (x, y) column, as engine/api/views/metricColumns.ts holds it. */
export interface RowColumn {
  x: number[];
  y: number[];
}

/** Encodes rows as a scan reads them; `bytes()` is what to append to the file since the last take. */
export class RowsBuilder {
  private buf = Buffer.allocUnsafe(1 << 16);
  private used = 0;
  private readonly ids = new Map<string, number>();
  /** False once a name could not get an id: the rows are then abandoned. */
  ok = true;

  constructor(readonly names: string[] = []) {
    names.forEach((name, i) => this.ids.set(name, i));
  }

  private room(n: number): void {
    if (this.used + n <= this.buf.length) return;
    const next = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.used + n));
    this.buf.copy(next, 0, 0, this.used);
    this.buf = next;
  }

  private id(name: string): number {
    let id = this.ids.get(name);
    if (id === undefined) {
      if (this.names.length >= MAX_NAMES) {
        this.ok = false;
        return 0;
      }
      id = this.names.length;
      this.names.push(name);
      this.ids.set(name, id);
    }
    return id;
  }

  readonly sink: RowSink = (step, time, names, values, n) => {
    this.room(18 + n * 10);
    const b = this.buf;
    let at = b.writeUInt16LE(n, this.used);
    at = b.writeDoubleLE(step, at);
    at = b.writeDoubleLE(time, at);
    for (let i = 0; i < n; i++) {
      at = b.writeUInt16LE(this.id(names[i]!), at);
      at = b.writeDoubleLE(values[i]!, at);
    }
    this.used = at;
  };

  /** The bytes encoded since the last call. */
  take(): Buffer {
    const out = Buffer.from(this.buf.subarray(0, this.used));
    this.used = 0;
    // A first flush of a long log grew the buffer; the flushes after it carry a few seconds of lines.
    if (this.buf.length > 1 << 20) this.buf = Buffer.allocUnsafe(1 << 16);
    return out;
  }
}

/**
 * The columns of `keys` (x the step or the time) from the first `bytes` bytes of rows file `file` of run folder `dir`, or
 * null when they cannot be read (missing, shorter, malformed). A key named `step` or `time` gets no column (null in the
 * array): those are read from the log.
 */
export function readRowColumns(
  dir: string,
  file: string,
  bytes: number,
  names: readonly string[],
  keys: readonly string[],
  xKey: 'step' | 'time',
): (RowColumn | null)[] | null {
  if (!isRowsFile(file)) return null;
  let buf: Buffer;
  try {
    const fd = openExistingHomeFile(path.join(dir, file));
    try {
      buf = Buffer.allocUnsafe(bytes);
      if (fs.readSync(fd, buf, 0, bytes, 0) !== bytes) return null;
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    return null;
  }
  // The column of each name id asked (ids past the names are no name: malformed rows).
  const byId = new Map<number, RowColumn>();
  const out = keys.map((key) => {
    if (key === 'step' || key === 'time') return null;
    const id = names.indexOf(key);
    const asked = byId.get(id); // a key asked twice: one column
    if (asked) return asked;
    const column: RowColumn = { x: [], y: [] };
    if (id >= 0) byId.set(id, column);
    return column;
  });
  const byTime = xKey === 'time';
  let at = 0;
  while (at < bytes) {
    if (at + 18 > bytes) return null;
    const n = buf.readUInt16LE(at);
    const end = at + 18 + n * 10;
    if (end > bytes) return null;
    const x = buf.readDoubleLE(byTime ? at + 10 : at + 2);
    for (let m = at + 18; m < end; m += 10) {
      const column = byId.get(buf.readUInt16LE(m));
      if (column === undefined) continue;
      column.x.push(x);
      column.y.push(buf.readDoubleLE(m + 2));
    }
    at = end;
  }
  return out;
}
