/**
 * Opening files that lie in a home, which is not trusted input (issue 34): runs are copied in, homes are shared over
 * NFS, and runs come back from a Ray cluster by tar, which restores FIFOs and symbolic links. Every reader under a
 * home opens through here, so that
 * - a FIFO, a device or a socket is refused without blocking: opened with O_NONBLOCK (a FIFO's open returns at once)
 *   and refused by fstat before anything is read (a FIFO would block the host's only thread, /dev/zero fill memory);
 * - a symbolic link is followed only while it stays inside the folder it lies in (a run's folder; checkpoints/<step>/),
 *   so a crafted link cannot make the host read a file outside the home;
 * - JSON is refused before it is parsed when it is nested deeper than any record the engine writes: V8's JSON.parse
 *   takes any depth, but JSON.stringify, zod and every recursive walk overflow the stack at a few thousand levels;
 * - nothing read from the file is ever quoted in a message (messages name the file and what was wrong, by position).
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../base/userError';

/**
 * The deepest nesting a record read from a home may have. The engine's own records are at most 9 deep (a MARTI tree,
 * tests/fixtures/marti-trees.jsonl), run.json with a config at most MAX_CONFIG_DEPTH (32) + 1.
 */
export const MAX_RECORD_DEPTH = 64;

/** A file under a home that is not a regular file, or a link that leaves its folder: refused, never opened for reading. */
export class HomeFileError extends UserError {}

// O_NONBLOCK is POSIX; Windows has no FIFOs to refuse.
const OPEN_FLAGS = fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0);

function kindOf(st: fs.Stats): string {
  if (st.isFIFO()) return 'a FIFO';
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device';
  if (st.isSocket()) return 'a socket';
  if (st.isDirectory()) return 'a folder';
  return 'not a regular file';
}

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/** Whether `p`, symbolic links resolved, lies inside `root`, symbolic links resolved. False when either is missing. */
export function insideReal(root: string, p: string): boolean {
  try {
    return inside(fs.realpathSync(root), fs.realpathSync(p));
  } catch {
    return false;
  }
}

/**
 * Throws a HomeFileError when `file` is a symbolic link whose target lies outside `within` (default: the folder the
 * file lies in). A missing file passes: the caller's open says so.
 */
export function checkLinkStaysInside(file: string, within = path.dirname(file)): void {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(file);
  } catch {
    return;
  }
  if (st.isSymbolicLink() && !insideReal(within, file)) {
    throw new HomeFileError(
      `${file} is a symbolic link that leads outside ${within}: a run's files must lie in its folder; remove the link`,
    );
  }
}

/**
 * A read-only descriptor of `file`, or null when it does not exist. Refuses, with a HomeFileError and without
 * blocking, anything but a regular file, and a symbolic link that leaves `within` (default: the file's folder).
 */
export function openHomeFile(file: string, within?: string): number | null {
  checkLinkStaysInside(file, within);
  let fd: number;
  try {
    fd = fs.openSync(file, OPEN_FLAGS);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  let st: fs.Stats;
  try {
    st = fs.fstatSync(fd);
  } catch (err) {
    fs.closeSync(fd);
    throw err;
  }
  if (!st.isFile()) {
    fs.closeSync(fd);
    throw new HomeFileError(`${file} is ${kindOf(st)}, not a regular file: refused to read it; remove it`);
  }
  return fd;
}

/**
 * openHomeFile for a file that must exist: a drop-in for `fs.openSync(file, 'r')`, whose ENOENT error it throws alike
 * (callers that tell "missing" apart keep working), with openHomeFile's refusals.
 */
export function openExistingHomeFile(file: string, within?: string): number {
  const fd = openHomeFile(file, within);
  if (fd === null) {
    throw Object.assign(new Error(`ENOENT: no such file or directory, open '${file}'`), {
      code: 'ENOENT',
      errno: -2,
      syscall: 'open',
      path: file,
    });
  }
  return fd;
}

/** Throws unless `file` is missing or a regular file that may be read (openHomeFile's checks, nothing read). */
export function checkHomeFile(file: string, within?: string): void {
  const fd = openHomeFile(file, within);
  if (fd !== null) fs.closeSync(fd);
}

/**
 * The whole text of a regular file under a home, or null when it does not exist; a HomeFileError when it is not a
 * regular file, leaves its folder, or is larger than `maxBytes` (nothing is read then).
 */
export function readHomeText(file: string, maxBytes: number, within?: string): string | null {
  const fd = openHomeFile(file, within);
  if (fd === null) return null;
  try {
    const size = fs.fstatSync(fd).size;
    if (size > maxBytes) {
      throw new HomeFileError(
        `${file} is ${size} bytes, more than the ${maxBytes} bytes such a file may have: refused to read it`,
      );
    }
    const buf = Buffer.allocUnsafe(size);
    let got = 0;
    while (got < size) {
      const n = fs.readSync(fd, buf, got, size - got, got);
      if (n === 0) break;
      got += n;
    }
    return buf.toString('utf8', 0, got);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Whether JSON text is nested deeper than `max` (brackets outside strings counted), in one pass over the bytes: cheap
 * enough to run before every parse. UTF-8 continuation bytes never equal an ASCII bracket, quote or backslash.
 */
export function jsonNestedDeeper(bytes: Uint8Array, max = MAX_RECORD_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** jsonNestedDeeper for text already decoded. */
export function jsonTextNestedDeeper(text: string, max = MAX_RECORD_DEPTH): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** Whether a parsed value is nested deeper than `max`, walked iteratively (no recursion to overflow). */
export function valueNestedDeeper(value: unknown, max = MAX_RECORD_DEPTH): boolean {
  const stack: { v: unknown; depth: number }[] = [{ v: value, depth: 0 }];
  while (stack.length > 0) {
    const { v, depth } = stack.pop()!;
    if (typeof v !== 'object' || v === null) continue;
    if (depth + 1 > max) return true;
    if (Array.isArray(v)) for (const item of v) stack.push({ v: item, depth: depth + 1 });
    else for (const key of Object.keys(v)) stack.push({ v: (v as Record<string, unknown>)[key], depth: depth + 1 });
  }
  return false;
}
