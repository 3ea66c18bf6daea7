/**
 * Append-only JSON Lines files: the run's metrics, trajectories and events (docs/architecture.md, "Run folder").
 *
 * A writer puts each record in one `write(2)`, so a crash leaves at most one torn line, at the end. A reader only ever
 * parses complete lines (ending in "\n") and reads from a byte offset, so a tailing reader never re-reads a file and
 * never sees half a record. Readers open through homeFile.ts: a home's files are untrusted input (issue 34).
 */
import fs from 'node:fs';
import { jsonParseProblem } from '../../base/boundedText';
import { UserError } from '../../base/userError';
import { jsonNestedDeeper, MAX_RECORD_DEPTH, openHomeFile } from './homeFile';

const NEWLINE = 0x0a;

export class JsonlAppender {
  readonly path: string;
  #fd: number | null;
  #size: number;
  #needsNewline: boolean;

  constructor(file: string) {
    this.path = file;
    // 'a+' rather than 'a': the constructor reads the last byte to notice a torn line.
    this.#fd = fs.openSync(file, 'a+');
    this.#size = fs.fstatSync(this.#fd).size;
    this.#needsNewline = this.#size > 0 && lastByte(this.#fd, this.#size) !== NEWLINE;
  }

  /** Current file size in bytes: the offset just after the last appended line. */
  get byteLength(): number {
    // Asked of the file, not only counted: a checkpoint records it, and it must be true even if someone else appended.
    if (this.#fd !== null) this.#size = fs.fstatSync(this.#fd).size;
    return this.#size;
  }

  /** Append one record as one line; returns the byte offset just after it. */
  append(record: object): number {
    const fd = this.#open();
    // A torn line left by a crash would swallow this record; ending it first turns it into one unreadable line that
    // readers skip with a warning, and keeps this record whole.
    const text = (this.#needsNewline ? '\n' : '') + JSON.stringify(record) + '\n';
    const bytes = Buffer.from(text, 'utf8');
    try {
      let written = fs.writeSync(fd, bytes);
      // Regular files take the whole buffer in one write unless the disk is full; finish the line rather than leave a
      // torn one in the middle of the file.
      while (written < bytes.length) written += fs.writeSync(fd, bytes, written);
    } catch (err) {
      // A partial line may be on disk now; the next append ends it first, and readers skip it with a warning.
      this.#needsNewline = true;
      throw namingFile(err, this.path);
    }
    this.#needsNewline = false;
    this.#size += bytes.length;
    return this.#size;
  }

  sync(): void {
    try {
      fs.fsyncSync(this.#open());
    } catch (err) {
      throw namingFile(err, this.path);
    }
  }

  close(): void {
    if (this.#fd === null) return;
    fs.closeSync(this.#fd);
    this.#fd = null;
  }

  #open(): number {
    if (this.#fd === null) throw new Error(`${this.path}: appender is closed`);
    return this.#fd;
  }
}

/** A failed write(2) or fsync(2) does not say which file it was; the CLI's one-line message names it from `path`. */
function namingFile(err: unknown, file: string): unknown {
  const e = err as NodeJS.ErrnoException;
  if (e instanceof Error && typeof e.code === 'string' && e.path === undefined) e.path = file;
  return err;
}

function lastByte(fd: number, size: number): number {
  const b = Buffer.alloc(1);
  fs.readSync(fd, b, 0, 1, size - 1);
  return b[0]!;
}

export interface JsonlReadOptions {
  /** Byte offset to start at; must be the start of a line (0, or an `end` returned before). */
  from?: number;
  /**
   * Line number of the line at `from` (1-based), so warnings name the right line when tailing. Unknown when reading
   * from an offset without it: warnings then name the line's byte offset.
   */
  firstLine?: number;
  /**
   * The file is still being written: an unfinished last line is left for the next read, without a warning. Without
   * it (a final read), an unfinished last line is a torn write from a crash and is reported.
   */
  tail?: boolean;
  /** Reject parsed lines that are valid JSON but not a record of this file: return the reason, or undefined. */
  validate?: (value: unknown) => string | undefined;
  /**
   * Stop after about this many bytes (at the end of the 1 MiB chunk that passes it, once a line is complete), so a
   * caller on an event loop can read a large backlog a slice at a time; `more` then says there is more to read.
   */
  maxBytes?: number;
}

export interface JsonlRead<T> {
  records: T[];
  /** Offset just after the last complete line read: where the next read starts. */
  end: number;
  /** Line number of the line at `end`, when the line numbers are known. */
  nextLine: number | undefined;
  /** Bytes after `end` that do not yet form a complete line. */
  partial: number;
  /** The file is shorter than `from`: it was truncated or replaced, so the caller should read again from 0. */
  shrunk: boolean;
  /** The read stopped at maxBytes before the size it saw: read again from `end`. */
  more: boolean;
  warnings: string[];
}

const CHUNK = 1 << 20;

/**
 * The longest line a reader parses: the engine's longest records (a MARTI step's trees) are a few MB. A longer line is
 * skipped with a warning instead of being held whole (a line of gigabytes would exhaust memory, or V8's string limit).
 */
export const MAX_LINE_BYTES = 64 << 20;

/** Warnings one read reports one by one; past them, one line counts the rest (a hostile file has millions of lines). */
export const MAX_READ_WARNINGS = 20;

/**
 * Read the complete lines of a JSON Lines file from `from`. A missing file reads as empty; one that is not a regular
 * file, or a symbolic link out of its folder, is refused (HomeFileError) without blocking. A line nested deeper than
 * MAX_RECORD_DEPTH or longer than MAX_LINE_BYTES is skipped with a warning that quotes nothing of it.
 */
export function readJsonl<T = unknown>(file: string, opts: JsonlReadOptions = {}): JsonlRead<T> {
  const from = opts.from ?? 0;
  const firstLine = opts.firstLine ?? (from === 0 ? 1 : undefined);
  const out: JsonlRead<T> = {
    records: [],
    end: from,
    nextLine: firstLine,
    partial: 0,
    shrunk: false,
    more: false,
    warnings: [],
  };
  const fd = openHomeFile(file);
  if (fd === null) return out;
  const warn = boundedWarnings(out.warnings, file);
  try {
    // Reading up to the size seen now, not to EOF: a line being appended meanwhile is left for the next read.
    const size = fs.fstatSync(fd).size;
    if (size < from) {
      out.shrunk = true;
      return out;
    }
    let pos = from;
    let line = firstLine;
    let carry: Buffer | null = null;
    // Inside a line longer than MAX_LINE_BYTES: its bytes are dropped until its newline.
    let skipping = false;
    const buf = Buffer.allocUnsafe(Math.min(CHUNK, Math.max(size - from, 1)));
    while (pos < size) {
      const n = fs.readSync(fd, buf, 0, Math.min(buf.length, size - pos), pos);
      if (n === 0) break;
      const chunkStart = pos - (carry ? carry.length : 0);
      pos += n;
      const chunk: Buffer = carry ? Buffer.concat([carry, buf.subarray(0, n)]) : buf.subarray(0, n);
      let start = 0;
      for (let nl = chunk.indexOf(NEWLINE, start); nl !== -1; nl = chunk.indexOf(NEWLINE, start)) {
        const where = line === undefined ? `the line at byte ${out.end}` : `line ${line}`;
        if (skipping) {
          warn(`${where} is longer than ${MAX_LINE_BYTES >> 20} MiB; skipped it`);
          skipping = false;
        } else parseLine(chunk.subarray(start, nl), where, opts.validate, out, warn);
        if (line !== undefined) line++;
        out.end = chunkStart + nl + 1;
        start = nl + 1;
      }
      // Copy the unfinished tail: `buf` is reused by the next read.
      carry = start < chunk.length && !skipping ? Buffer.from(chunk.subarray(start)) : null;
      if (carry && carry.length > MAX_LINE_BYTES) {
        skipping = true;
        carry = null;
      }
      if (opts.maxBytes !== undefined && pos < size && pos - from >= opts.maxBytes && out.end > from) {
        out.more = true;
        break;
      }
    }
    out.nextLine = line;
    out.partial = out.more ? 0 : size - out.end;
    if (out.partial > 0 && !opts.tail) {
      warn(`skipped a torn last line (${out.partial} bytes), probably from a crash`);
    }
    warn.finish();
    return out;
  } finally {
    fs.closeSync(fd);
  }
}

/** A warning sink that keeps the first MAX_READ_WARNINGS (each prefixed with the file) and counts the rest. */
function boundedWarnings(into: string[], file: string): ((message: string) => void) & { finish(): void } {
  let dropped = 0;
  const warn = (message: string): void => {
    if (into.length < MAX_READ_WARNINGS) into.push(`${file}: ${message}`);
    else dropped++;
  };
  return Object.assign(warn, {
    finish(): void {
      if (dropped > 0) into.push(`${file}: and ${dropped} more lines skipped for the same kinds of reasons`);
    },
  });
}

function parseLine<T>(
  bytes: Buffer,
  where: string,
  validate: ((value: unknown) => string | undefined) | undefined,
  out: JsonlRead<T>,
  warn: (message: string) => void,
): void {
  if (jsonNestedDeeper(bytes)) {
    warn(`${where} is nested more than ${MAX_RECORD_DEPTH} levels deep, deeper than any record; skipped it`);
    return;
  }
  const text = bytes.toString('utf8').trim();
  if (text === '') return;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    // By position only: Node's message quotes the line's first bytes, which may be any file's content.
    warn(`${where} is not valid JSON (${jsonParseProblem(err)}); skipped it`);
    return;
  }
  const reason = validate?.(value);
  if (reason !== undefined) {
    warn(`${where} ${reason}; skipped it`);
    return;
  }
  out.records.push(value as T);
}

/**
 * Offset just after the last complete line, reading backwards from the end: where a reader that joins a file being
 * written starts, without reading what came before.
 */
export function lastLineEnd(file: string): number {
  const fd = openHomeFile(file);
  if (fd === null) return 0;
  try {
    const buf = Buffer.allocUnsafe(64 * 1024);
    let pos = fs.fstatSync(fd).size;
    while (pos > 0) {
      const len = Math.min(buf.length, pos);
      pos -= len;
      const n = fs.readSync(fd, buf, 0, len, pos);
      const nl = buf.subarray(0, n).lastIndexOf(NEWLINE);
      if (nl !== -1) return pos + nl + 1;
    }
    return 0;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Cut a log back to `offset` bytes (resuming from a checkpoint drops the lines written after it). The offset must be
 * a line boundary inside the file; anything else means the file changed after the offset was recorded.
 */
export function truncateTo(file: string, offset: number): void {
  if (!Number.isInteger(offset) || offset < 0) throw new Error(`truncateTo(${file}): bad offset ${offset}`);
  const fd = fs.openSync(file, 'r+');
  try {
    const size = fs.fstatSync(fd).size;
    if (offset > size) {
      throw new UserError(
        `${file} is ${size} bytes, shorter than the ${offset} bytes recorded at the checkpoint: it was changed or ` +
          'replaced after that checkpoint was written; resume from an earlier checkpoint or start a new run',
      );
    }
    if (offset > 0 && lastByte(fd, offset) !== NEWLINE) {
      throw new UserError(
        `${file}: the offset ${offset} recorded at the checkpoint is not the end of a line: the file was changed after ` +
          'that checkpoint was written; resume from an earlier checkpoint or start a new run',
      );
    }
    fs.ftruncateSync(fd, offset);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}
