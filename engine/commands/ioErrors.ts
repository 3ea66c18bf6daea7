/**
 * Failures of the machine rather than of the code, said in one line at the CLI boundary (engine/commands/cli.ts): errors of the
 * operating system (a full disk, a read-only file system, a folder where a file was expected, too many open files…)
 * name the file and the next step, and an input nested too deeply to process names the file instead of a stack trace.
 * The run's data is already safe when these reach the boundary (logs are appended line by line, checkpoints written
 * aside and renamed), so the next step is to fix the cause and resume.
 *
 * Node's errno errors name the file for `open`, but not for `write`: a full disk while appending to metrics.jsonl says
 * only "ENOSPC: no space left on device, write". `withFilePath` adds the file where the code knows it, and the
 * commands note the run they work on, so the message can say which run to resume.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../base/userError';
import { terminalText } from './terminalText';
import { isJsonParseError, jsonParseProblem, withoutJsonQuotes } from '../base/boundedText';

/** What the boundary prints and the code it exits with. */
export interface CliFailure {
  message: string;
  exitCode: number;
}

/** Exit code of a failure the user can fix (the same as UserError's). */
export const USER_FIX_EXIT = 2;

/** The run a command is writing (train, resume), for "free space, then mars-lab resume ID". */
const context: { runId: string | null; runDir: string | null; inputs: string[] } = {
  runId: null,
  runDir: null,
  inputs: [],
};

export function noteRun(runId: string, dir?: string): void {
  context.runId = runId;
  if (dir !== undefined) context.runDir = dir;
}

/** A file the command reads, named if an input turns out to be nested too deeply for the code that processes it. */
export function noteInput(file: string): void {
  if (!context.inputs.includes(file)) context.inputs.push(file);
}

/** For tests: forget the noted run and inputs. */
export function resetCliContext(): void {
  context.runId = null;
  context.runDir = null;
  context.inputs = [];
}

export function isErrnoError(err: unknown): err is NodeJS.ErrnoException & { code: string } {
  if (!(err instanceof Error)) return false;
  const e = err as NodeJS.ErrnoException;
  return (
    typeof e.code === 'string' &&
    /^E[A-Z0-9]+$/.test(e.code) &&
    (typeof e.errno === 'number' || typeof e.syscall === 'string')
  );
}

/** Gives an errno error that lacks one (a failed `write`, `fsync`) the file it was about; returns the error. */
export function attachPath(err: unknown, file: string): unknown {
  if (isErrnoError(err) && err.path === undefined) {
    try {
      err.path = file;
    } catch {
      // A frozen error keeps its message as is.
    }
  }
  return err;
}

/** Runs `fn`, naming `file` in any errno error it throws without one. */
export function withFilePath<T>(file: string, fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw attachPath(err, file);
  }
}

const WRITE_SYSCALLS = new Set([
  'write',
  'writev',
  'fsync',
  'fdatasync',
  'ftruncate',
  'rename',
  'mkdir',
  'copyfile',
  'symlink',
  'link',
  'unlink',
  'rmdir',
  'utime',
  'futime',
  'chmod',
]);

/** The run folder and id a path lies in (`…/runs/<id>/…`), if any. */
function runOfPath(file: string | undefined): string | null {
  if (!file) return null;
  const parts = path.resolve(file).split(path.sep);
  const i = parts.lastIndexOf('runs');
  return i >= 0 && i + 2 < parts.length ? parts[i + 1]! : null;
}

/**
 * The one-line description of an errno error (without the "mars-lab: " prefix), or null for an error that is not one
 * (a bug keeps its stack trace). `runId` is the run to resume afterwards, when the command was writing one.
 */
export function describeIoError(
  err: unknown,
  opts: { runId?: string | null; runDir?: string | null } = {},
): string | null {
  if (!isErrnoError(err)) return null;
  const file = typeof err.path === 'string' ? err.path : undefined;
  const runId = opts.runId ?? runOfPath(file) ?? null;
  const where = file ?? (opts.runDir ? `a file in ${opts.runDir}` : 'a file (the system did not say which)');
  const writing = err.syscall !== undefined && WRITE_SYSCALLS.has(err.syscall);
  const again = runId ? `, then continue with: mars-lab resume ${runId}` : ', then run the command again';
  switch (err.code) {
    case 'ENOSPC':
      return `no space left on device writing ${where}: free space${again}`;
    case 'EDQUOT':
      return `disk quota exceeded writing ${where}: free space or raise the quota${again}`;
    case 'EFBIG':
      return `${where} grew past the largest file this file system allows: write to another file system${again}`;
    case 'EROFS':
      return `${where} is on a read-only file system: ${runId ? 'choose a writable home (--home DIR or MARS_LAB_HOME)' : 'write to a writable place (another --out, --home DIR or MARS_LAB_HOME)'}`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied ${writing ? 'writing' : 'on'} ${where}: check the permissions of ${file ?? 'the file'} and its folder (ls -ld), or use another place`;
    case 'EISDIR':
      return `${where} is a folder, expected a file: name a file`;
    case 'ENOTDIR':
      return `${where}: part of this path is a file, expected a folder: check the path`;
    case 'ENOENT':
      return `${where} does not exist: check the path${writing || err.syscall === 'open' ? ' (its folder must exist)' : ''}`;
    case 'EMFILE':
    case 'ENFILE':
      return `too many open files${file ? ` (opening ${file})` : ''}: raise the limit (ulimit -n 4096)${again}`;
    case 'EIO':
      return `input/output error on ${where}: the disk or file system reported a fault; check it (dmesg)${again}`;
    case 'ENAMETOOLONG':
      return `${where}: a name in this path is too long: use a shorter path`;
    case 'ELOOP':
      return `${where}: too many symbolic links (a loop?): check the path`;
    case 'EBUSY':
    case 'ETXTBSY':
      return `${where} is busy (in use by another process): try again when it is free`;
    case 'EEXIST':
      return `${where} already exists: remove it or choose another name`;
    case 'ENXIO':
    case 'ENODEV':
      return `${where} is a device or socket with nothing behind it, expected a file: name a regular file`;
    default:
      return file ? `${err.syscall ?? 'access'} ${file} failed: ${err.message.split('\n')[0]}` : null;
  }
}

export function isStackOverflow(err: unknown): boolean {
  return err instanceof RangeError && /Maximum call stack size exceeded/.test(err.message);
}

/** Deepest nesting of a JSON text's arrays and objects (strings skipped), counted without parsing it. */
export function jsonNestingDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) {
        i++;
      } // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) max = depth;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return max;
}

/** No file mars-lab reads nests deeper than a few levels; the limit sits far below what overflows the stack. */
export const MAX_JSON_DEPTH = 256;

/** Refuses a JSON input nested deeper than MAX_JSON_DEPTH, naming it; a missing or unreadable file is left to the reader. */
export function checkJsonNesting(file: string, what = 'JSON'): void {
  noteInput(file);
  let text: string;
  try {
    const st = fs.statSync(file);
    if (!st.isFile() || st.size > 256 * 1024 * 1024) return;
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return;
  }
  const depth = jsonNestingDepth(text);
  if (depth > MAX_JSON_DEPTH) {
    throw new UserError(
      `${file}: ${what} nested ${depth} levels deep (the limit is ${MAX_JSON_DEPTH}): the file is damaged or not what mars-lab wrote; restore or replace it`,
    );
  }
}

/**
 * Everything the boundary catches, as one line and an exit code: UserError and errno errors and deep nesting exit 2
 * with no stack; anything else is a bug and keeps its stack (exit 1).
 */
export function describeFailure(err: unknown): CliFailure & { stack?: string } {
  // A UserError may list several problems, one a line (ConfigValidationError); each line is made safe, the lines kept.
  if (err instanceof UserError) {
    return { message: withoutJsonQuotes(err.message).split(/\r?\n/).map(bounded).join('\n'), exitCode: USER_FIX_EXIT };
  }
  const io = describeIoError(err, { runId: context.runId, runDir: context.runDir });
  if (io !== null) return { message: oneLine(io), exitCode: USER_FIX_EXIT };
  if (isStackOverflow(err)) {
    const inputs = context.inputs.length
      ? context.inputs.join(', ')
      : 'the files this command reads (config, run.json, trainer_state.json)';
    return {
      message: oneLine(
        `an input is nested too deeply to process (Maximum call stack size exceeded): check ${inputs}; a damaged file must be restored or replaced`,
      ),
      exitCode: USER_FIX_EXIT,
    };
  }
  if (isJsonParseError(err)) {
    // A JSON.parse no reader guarded: Node's message (and the stack's first line) quotes the text, a file's first bytes.
    const said = `a JSON text is not valid (${jsonParseProblem(err)})`;
    const stack = err.stack?.split('\n').slice(1).join('\n');
    return { message: said, exitCode: 1, ...(stack ? { stack: `SyntaxError: ${said}\n${stack}` } : {}) };
  }
  // A bug's message may wrap a parser's (`… (${err.message})`): its quotation of a file is dropped, in the stack too.
  const message = err instanceof Error ? err.message : String(err);
  const stack = err instanceof Error && err.stack ? withoutJsonQuotes(err.stack) : undefined;
  return { message: oneLine(message), exitCode: 1, ...(stack ? { stack } : {}) };
}

/** A line as terminal-safe text, bounded, without a JSON parser's quotation (a message may quote a file's content). */
function bounded(line: string): string {
  const safe = terminalText(withoutJsonQuotes(line));
  return safe.length > 2000 ? `${safe.slice(0, 2000)}…` : safe;
}

/** A message as one terminal-safe line. */
function oneLine(message: string): string {
  return bounded(message.replace(/\r?\n\s*/g, ' '));
}
