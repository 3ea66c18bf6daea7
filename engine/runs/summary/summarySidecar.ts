/**
 * A run's metrics summary sidecar, `metrics.summary.json` in its folder: what the run index shows of metrics.jsonl
 * (last step; last/min/max of every metric; the number of lines) and the part of the file it covers (byte offset,
 * next line number, the first and the last bytes before the offset). A cold listing of a home (no index.json yet, or
 * an index of an earlier version) reads it and scans metrics.jsonl only past the covered offset, instead of reading
 * every run's whole log (1,000 runs with 340 MB of metrics took 1.6–2.4 s; tests/bench/appScaleBench.ts).
 *
 * It is a cache, never the truth: a sidecar that does not parse, whose offset is past the file's end, or whose
 * recorded bytes differ from the file's (the log was cut by a resume, or replaced) is ignored and the log read from
 * its start. The run loop writes it (SummaryKeeper) at checkpoints, every few seconds and when it ends; the index
 * writes it once for a run that has none (an earlier version's run) or a broken one, never while the run's writer may
 * be alive. Written whole under a temporary name and renamed over, so a reader sees the old file or the new one.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { RUN_FILES } from '../folder/home';
import { jsonTextNestedDeeper, openExistingHomeFile, readHomeText } from '../folder/homeFile';
import { isRowsFile, newRowsFile, readRowColumns, removeOtherRows, RowsBuilder, type RowColumn } from './metricRows';
import { readAt, scanMetricStats, type MetricsSummary, type ReadAt, type RowSink, type ScanEnd } from './metricStats';
import { metricsByNameSchema } from './runSummary';
import { checkWriter, readLockClaim } from '../folder/writerProcess';

export const SUMMARY_SIDECAR = 'metrics.summary.json';
const SIDECAR_VERSION = 1;
/** Bytes of the log recorded at its start and just before the covered offset, to notice a log cut or replaced. */
const PRINT_BYTES = 64;
/** The largest summary sidecar read: one entry per metric name, a few KB (a crafted one is refused unread). */
const MAX_SIDECAR_BYTES = 16 << 20;
/** A run with no sidecar gets one from the index when this much of its log was read (smaller logs are read as fast). */
export const SIDECAR_MIN_SCAN = 256 << 10;

/** A summary of metrics.jsonl and the part of the file it covers. */
export interface MetricsCover extends MetricsSummary, ScanEnd {
  /** Base64 of the file's first min(64, end) bytes. */
  head: string;
  /** Base64 of the PRINT_BYTES bytes before `end` (fewer at the start of the file). */
  tail: string;
  /** The pre-parsed rows (metricRows.ts) of metrics.jsonl's lines before `rows.end`, where the run loop keeps them. */
  rows?: RowsCover;
}

export interface RowsCover {
  /** The log offset the rows cover up to, and the bytes before it (as `tail`). */
  end: number;
  tail: string;
  /** The rows file (metrics.rows.<gen>.bin) and its valid bytes. */
  file: string;
  bytes: number;
  /** Metric names by id. */
  names: string[];
}

const sidecarSchema = z.object({
  version: z.literal(SIDECAR_VERSION),
  end: z.number().int().nonnegative(),
  nextLine: z.number().int().positive(),
  lines: z.number().int().nonnegative(),
  steps: z.number().nullable(),
  head: z.string().max(200),
  tail: z.string().max(200),
  metrics: metricsByNameSchema,
  rows: z
    .object({
      end: z.number().int().nonnegative(),
      tail: z.string().max(200),
      // a name in this folder of the rows' own form, never a path
      file: z.string().refine(isRowsFile),
      bytes: z.number().int().nonnegative(),
      names: z.array(z.string()),
    })
    .optional(),
});

export function emptyCover(): MetricsCover {
  return { steps: null, metrics: {}, lines: 0, end: 0, nextLine: 1, head: '', tail: '' };
}

/** Base64 of the `length` bytes of an open file at `position` (fewer where the file is shorter). */
function bytesAt(fd: number, position: number, length: number, read: ReadAt): string {
  if (length <= 0) return '';
  const buf = Buffer.alloc(length);
  const got = read(fd, buf, 0, length, position);
  return buf.subarray(0, got).toString('base64');
}

/** The head and tail prints of a file for a cover ending at `end`. */
export function printsAt(fd: number, end: number, read: ReadAt = readAt): { head: string; tail: string } {
  const n = Math.min(end, PRINT_BYTES);
  return { head: bytesAt(fd, 0, n, read), tail: bytesAt(fd, end - n, n, read) };
}

/** The tail print of `file` before `end` (the run index's cursor fingerprint); '' where the file cannot be opened. */
export function tailPrint(file: string, end: number, read: ReadAt = readAt): string {
  let fd: number;
  try {
    fd = openExistingHomeFile(file);
  } catch {
    return '';
  }
  try {
    const n = Math.min(end, PRINT_BYTES);
    return bytesAt(fd, end - n, n, read);
  } finally {
    fs.closeSync(fd);
  }
}

export type SidecarRead = { cover: MetricsCover } | { problem: string };

/**
 * The sidecar of run folder `dir` if it still describes the start of its metrics.jsonl; else why not ('absent' when
 * there is no sidecar).
 */
export function readSummarySidecar(dir: string, read: ReadAt = readAt): SidecarRead {
  let text: string;
  try {
    const read = readHomeText(path.join(dir, SUMMARY_SIDECAR), MAX_SIDECAR_BYTES);
    if (read === null) return { problem: 'absent' };
    text = read;
  } catch (err) {
    return { problem: (err as Error).message };
  }
  if (jsonTextNestedDeeper(text)) return { problem: 'nested too deeply' };
  let parsed;
  try {
    parsed = sidecarSchema.safeParse(JSON.parse(text));
  } catch {
    return { problem: 'not JSON' };
  }
  if (!parsed.success) return { problem: 'not a summary of this version' };
  const { rows, ...rest } = parsed.data;
  const cover: MetricsCover = { ...rest };
  if (rows && rows.end <= cover.end) cover.rows = rows;
  let fd: number;
  try {
    fd = openExistingHomeFile(path.join(dir, RUN_FILES.metrics));
  } catch {
    return { problem: 'metrics.jsonl cannot be read' };
  }
  try {
    if (fs.fstatSync(fd).size < cover.end) return { problem: 'metrics.jsonl is shorter than the part summarised' };
    const prints = printsAt(fd, cover.end, read);
    if (prints.head !== cover.head || prints.tail !== cover.tail) {
      return { problem: 'metrics.jsonl is not the file summarised' };
    }
  } finally {
    fs.closeSync(fd);
  }
  return { cover };
}

/**
 * `from` (not changed) extended by the complete lines of `file` past its end; `scanned`: the bytes read past it. With
 * no `from`, the whole file is read.
 */
export function extendCover(
  file: string,
  from: MetricsCover | null,
  read: ReadAt = readAt,
  onRow?: RowSink,
): { cover: MetricsCover; scanned: number } {
  const start = from ?? emptyCover();
  const summary: MetricsSummary = { steps: start.steps, metrics: structuredClone(start.metrics), lines: start.lines };
  const end = scanMetricStats(file, start.end, start.nextLine, summary, undefined, read, onRow);
  const cover: MetricsCover = { ...summary, ...end, head: start.head, tail: start.tail };
  if (start.rows) cover.rows = start.rows;
  // The head is read when the cover starts near the file's start, else kept (the index's own cursor has none: a
  // cover with no head is never taken from a sidecar); the tail where the end moved.
  const head = start.end < PRINT_BYTES;
  if (head || end.end !== start.end) {
    let fd: number | undefined;
    try {
      fd = openExistingHomeFile(file);
      const n = Math.min(end.end, PRINT_BYTES);
      if (head) cover.head = bytesAt(fd, 0, n, read);
      if (end.end !== start.end) cover.tail = bytesAt(fd, end.end - n, n, read);
    } catch {
      // no file: nothing covered
    } finally {
      if (fd !== undefined) fs.closeSync(fd);
    }
  }
  return { cover, scanned: end.end - start.end };
}

/** Writes the sidecar of `dir` (temporary name, then rename); false when it cannot be written (read-only folder). */
export function writeSummarySidecar(dir: string, cover: MetricsCover): boolean {
  const file = path.join(dir, SUMMARY_SIDECAR);
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  const { steps, metrics, lines, end, nextLine, head, tail, rows } = cover;
  try {
    fs.writeFileSync(
      tmp,
      JSON.stringify({
        version: SIDECAR_VERSION,
        end,
        nextLine,
        lines,
        steps,
        head,
        tail,
        metrics,
        ...(rows ? { rows } : {}),
      }) + '\n',
    );
    fs.renameSync(tmp, file);
    return true;
  } catch {
    fs.rmSync(tmp, { force: true });
    return false;
  }
}

/** Whether a process may be writing the run now: a lock whose holder is alive, or one that cannot be checked. */
export function writerMayBeAlive(dir: string): boolean {
  if (!fs.existsSync(path.join(dir, RUN_FILES.lock))) return false;
  const claim = readLockClaim(dir);
  return claim === null || checkWriter(claim).state !== 'gone';
}

/** How often the run loop rewrites the sidecar between checkpoints. */
const KEEP_EVERY_MS = 5000;

/**
 * The run loop's side: the summary of its own metrics.jsonl kept in memory and extended from the file at each flush
 * (only the lines appended since the last one are read), then written as the sidecar, with the lines' pre-parsed
 * rows appended to metrics.rows.<gen>.bin (metricRows.ts). The lines it covers are on disk before it names them: a flush
 * reads them back from the file; rows are appended before the sidecar that counts them is written.
 */
export class SummaryKeeper {
  private cover: MetricsCover | null = null;
  private rows: RowsBuilder | null = null;
  private rowsFile = '';
  private lastWrite = 0;

  constructor(private readonly dir: string) {}

  /** Brings the sidecar up to date with metrics.jsonl; never throws (a sidecar is a cache). */
  flush(): void {
    try {
      const file = path.join(this.dir, RUN_FILES.metrics);
      let fresh = false;
      if (this.cover === null) {
        // Continue an earlier process's summary and rows only where both still describe the log; else (a resume that
        // cut the log back, rows behind the summary) both are read again from the log's start, into a new rows file.
        const old = readSummarySidecar(this.dir);
        const kept = 'cover' in old && old.cover.rows?.end === old.cover.end ? old.cover.rows : undefined;
        const usable = kept !== undefined && fileSize(path.join(this.dir, kept.file)) >= kept.bytes;
        this.cover = usable ? (old as { cover: MetricsCover }).cover : null;
        this.rows = new RowsBuilder(usable ? [...kept.names] : []);
        this.rowsFile = usable ? kept.file : newRowsFile();
        fresh = !usable;
        const fd = fs.openSync(path.join(this.dir, this.rowsFile), 'a');
        try {
          fs.ftruncateSync(fd, usable ? kept.bytes : 0);
        } finally {
          fs.closeSync(fd);
        }
      }
      const rows = this.rows!;
      const { cover } = extendCover(file, this.cover, readAt, rows.ok ? rows.sink : undefined);
      if (rows.ok) {
        const bytes = rows.take();
        if (bytes.length > 0) fs.appendFileSync(path.join(this.dir, this.rowsFile), bytes);
        const before = this.cover?.rows?.bytes ?? 0;
        cover.rows = {
          end: cover.end,
          tail: cover.tail,
          file: this.rowsFile,
          bytes: before + bytes.length,
          names: [...rows.names],
        };
      } else delete cover.rows;
      this.cover = cover;
      const written = writeSummarySidecar(this.dir, cover);
      // The old generation goes once the sidecar names the new one (a reader holding the old sidecar reads none).
      if (fresh && written) removeOtherRows(this.dir, rows.ok ? this.rowsFile : null);
      this.lastWrite = Date.now();
    } catch {
      // the listing and the overlay read the log instead
      this.cover = null;
    }
  }

  /** Flushes when the last write is KEEP_EVERY_MS old (called after each step). */
  maybeFlush(): void {
    if (Date.now() - this.lastWrite >= KEEP_EVERY_MS) this.flush();
  }
}

function fileSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return -1;
  }
}

/**
 * The columns of `keys` from a run's pre-parsed rows, with the log offset they cover (the caller parses metrics.jsonl
 * past it), or null where the run has no rows that still describe its log. A `step` or `time` key gets null.
 */
export function rowColumns(
  dir: string,
  keys: readonly string[],
  xKey: 'step' | 'time',
): { end: number; columns: (RowColumn | null)[] } | null {
  const sidecar = readSummarySidecar(dir);
  if (!('cover' in sidecar) || !sidecar.cover.rows) return null;
  const rows = sidecar.cover.rows;
  if (rows.end !== sidecar.cover.end && tailPrint(path.join(dir, RUN_FILES.metrics), rows.end) !== rows.tail) {
    return null;
  }
  const columns = readRowColumns(dir, rows.file, rows.bytes, rows.names, keys, xKey);
  return columns ? { end: rows.end, columns } : null;
}
