/**
 * Reading a small file a user named (a `--config`, a checkpoint's config.json, a preset) without letting it hang or
 * flood the process (issue 34, finding 4): opened with O_NONBLOCK, so a FIFO's open returns at once instead of waiting
 * for a writer; refused by fstat before anything is read when it is not a regular file (a FIFO, /dev/zero, a socket);
 * refused unread when it is larger than the caller's bound. Links are followed: what a user names is theirs to read
 * (runs/folder/homeFile.ts adds the link rule for files under a home, which is untrusted). Messages name the file and
 * what was wrong, never its bytes.
 */
import fs from 'node:fs';
import { UserError } from './userError';
import { jsonParseProblem } from './boundedText';

/**
 * The most a model's config.json may be (Hugging Face's are a few KB): the checkpoint loader refuses a larger one, and
 * the memory estimate reads up to the same bound, so no config.json the loader takes escapes the estimate.
 */
export const MAX_MODEL_CONFIG_BYTES = 4 * 1024 * 1024;

// O_NONBLOCK is POSIX; Windows has no FIFOs to refuse.
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0);

/** What a file that is not a regular one is, for messages. */
export function fileKind(st: fs.Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  return 'not a regular file';
}

/**
 * A read-only descriptor of `file` when it is a regular file; `{ missing }` when it does not exist, `{ kind }` (closed
 * again, nothing read) when it is something else. Other open errors (EACCES, ELOOP) are thrown as they are.
 */
export function openRegularFile(file: string): { fd: number } | { missing: true } | { kind: string } {
  let fd: number;
  try {
    fd = fs.openSync(file, OPEN_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { missing: true };
    throw err;
  }
  try {
    const st = fs.fstatSync(fd);
    if (st.isFile()) return { fd };
    fs.closeSync(fd);
    return { kind: fileKind(st) };
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
}

/** The whole of an open regular file, refused (nothing read) past `maxBytes`; `what` names it in the message. */
export function readOpenFile(fd: number, maxBytes: number, what: string): Buffer {
  const size = fs.fstatSync(fd).size;
  if (size > maxBytes) {
    throw new UserError(
      `${what} is ${size} bytes, more than the ${maxBytes} bytes such a file may have: refused to read it`,
    );
  }
  const buf = Buffer.allocUnsafe(size);
  let got = 0;
  while (got < size) {
    const n = fs.readSync(fd, buf, got, size - got, got);
    if (n === 0) break;
    got += n;
  }
  return buf.subarray(0, got);
}

/**
 * The text of the regular file `file`, at most `maxBytes`; a one-line UserError naming `what` (default: the path)
 * when it is missing, not a regular file, too large, or cannot be opened.
 */
export function readRegularText(file: string, maxBytes: number, what = file): string {
  let opened: ReturnType<typeof openRegularFile>;
  try {
    opened = openRegularFile(file);
  } catch (err) {
    throw new UserError(`${what}: cannot read it (${(err as NodeJS.ErrnoException).code ?? 'error'}); check the path`);
  }
  if ('missing' in opened) throw new UserError(`${what}: no such file`);
  if ('kind' in opened) throw new UserError(`${what} is ${opened.kind}, not a regular file: give a file`);
  try {
    return readOpenFile(opened.fd, maxBytes, what).toString('utf8');
  } finally {
    fs.closeSync(opened.fd);
  }
}

/**
 * The JSON value in the regular file `file` (readRegularText's checks and bound); when it does not parse, a UserError
 * naming `what` and where the text went wrong, never quoting it (V8's own message quotes its first bytes).
 */
export function readRegularJson(file: string, maxBytes: number, what = file): unknown {
  const text = readRegularText(file, maxBytes, what);
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UserError(`${what}: not valid JSON (${jsonParseProblem(err)})`);
  }
}
