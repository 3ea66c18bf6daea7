/**
 * The run's write lock (`<dir>/lock`, docs/architecture.md "Run folder"): one writer per run. The lock names its process by pid,
 * host, time, and (on Linux) the process's start time, so that a pid reused after a crash is not taken for the writer
 * (writerProcess.ts). The writer keeps the lock file open while it holds it: a host signals a run's process only when
 * that process holds this very file open, which a crafted folder cannot arrange.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { RUN_FILES } from './home';
import { HomeFileError, readHomeText } from './homeFile';
import { appendEvent, RunFolderError } from './runFolder';
import { checkWriter, isSignallablePid, ownStartStamp } from './writerProcess';

interface LockInfo {
  pid: number;
  host: string;
  since: string;
  /** The writer's start (clock ticks since boot) and the boot's id, so a reused pid is told apart (writerProcess.ts). */
  procStart?: number;
  bootId?: string;
}

function parseLock(text: string): LockInfo | null {
  try {
    const v = JSON.parse(text) as Partial<LockInfo>;
    if (typeof v.pid === 'number' && typeof v.host === 'string' && typeof v.since === 'string') {
      const out: LockInfo = { pid: v.pid, host: v.host, since: v.since };
      if (typeof v.procStart === 'number' && typeof v.bootId === 'string') {
        Object.assign(out, { procStart: v.procStart, bootId: v.bootId });
      }
      return out;
    }
  } catch {
    // fall through: unreadable
  }
  return null;
}

/**
 * Whether the lock's holder may still be writing. A lock of this version names its writer's start time, so a reused
 * pid is recognised as another process; for an older lock any live process with the pid counts (taking over a lock
 * whose writer is alive would make two writers, so doubt keeps the lock).
 */
function holderAlive(info: LockInfo): boolean {
  if (!isSignallablePid(info.pid)) return false;
  if (info.procStart !== undefined) {
    const state = checkWriter(info).state;
    if (state !== 'unknown') return state === 'alive';
  }
  try {
    process.kill(info.pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A lock file younger than this that cannot be parsed is taken to be being written right now. */
const FRESH_LOCK_MS = 2000;

/**
 * Take the run's write lock (`<dir>/lock`), or say who holds it. A lock left by a process that is gone (killed, crashed)
 * is taken over, and the takeover is noted in events.jsonl. Returns the release function.
 */
export function acquireRunLock(dir: string): () => void {
  const file = path.join(dir, RUN_FILES.lock);
  const runId = path.basename(dir);
  const mine: LockInfo = { pid: process.pid, host: os.hostname(), since: new Date().toISOString(), ...ownStartStamp() };
  const text = JSON.stringify(mine) + '\n';
  for (let attempt = 0; attempt < 5; attempt++) {
    let fd: number;
    try {
      fd = fs.openSync(file, 'wx');
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const stale = staleLock(file, runId);
      if (stale === 'gone' || !setAside(file, stale.text)) continue;
      appendEvent(dir, {
        type: 'warning',
        message: stale.info
          ? `took over the lock of process ${stale.info.pid} (since ${stale.info.since}), which is no longer running; the run was probably killed`
          : 'took over an unreadable lock file left by an earlier process',
        previousLock: stale.info,
      });
      continue;
    }
    try {
      fs.writeSync(fd, text);
      fs.fsyncSync(fd);
    } catch (err) {
      fs.closeSync(fd);
      throw err;
    }
    // Held open until release (or the process's end): the proof that this process is the run's writer, which a
    // crafted folder cannot give another process (writerProcess.ts holdsRunLock; only then may a host signal it).
    let released = false;
    return () => {
      if (released) return;
      released = true;
      try {
        fs.closeSync(fd);
      } catch {
        // already closed
      }
      // Only remove our own lock: after a takeover by someone else the file is theirs.
      let current: LockInfo | null;
      try {
        current = parseLock(readHomeText(file, MAX_LOCK_BYTES) ?? '');
      } catch {
        return;
      }
      if (current && current.pid === mine.pid && current.since === mine.since && current.host === mine.host) {
        fs.rmSync(file, { force: true });
      }
    };
  }
  throw new RunFolderError(`${file}: could not take the lock (other processes keep taking it); try again`);
}

/**
 * Remove a stale lock, unless another process replaced it since we judged it stale. Renaming first makes the check and
 * the removal one step: only one of two processes taking over the same stale lock gets it.
 */
function setAside(file: string, staleText: string): boolean {
  const aside = `${file}.stale-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    fs.renameSync(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw err;
  }
  const moved = readLockText(aside) ?? '';
  if (moved !== staleText) {
    // A fresh lock of another process: put it back (link fails if yet another lock exists, which then stands).
    try {
      fs.linkSync(aside, file);
    } catch {
      // that other lock wins
    }
    fs.rmSync(aside, { force: true });
    return false;
  }
  fs.rmSync(aside, { force: true });
  return true;
}

/** A lock is a few hundred bytes. */
const MAX_LOCK_BYTES = 4096;

/** The lock's text, null when it is gone, '' when it is not a regular file or too large (unparseable, then). */
function readLockText(file: string): string | null {
  try {
    return readHomeText(file, MAX_LOCK_BYTES);
  } catch (err) {
    if (err instanceof HomeFileError) return '';
    throw err;
  }
}

/** The stale lock's text and contents (info null: unreadable), 'gone' if it vanished; throws if its holder is alive. */
function staleLock(file: string, runId: string): { text: string; info: LockInfo | null } | 'gone' {
  let text: string;
  let mtimeMs: number;
  try {
    // Not a regular file (a FIFO would block in open()) or too large: an unreadable lock, judged by its age below.
    const read = readLockText(file);
    if (read === null) return 'gone';
    text = read;
    mtimeMs = fs.statSync(file).mtimeMs;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'gone';
    throw err;
  }
  const info = parseLock(text);
  if (!info) {
    if (Date.now() - mtimeMs < FRESH_LOCK_MS) {
      throw new RunFolderError(
        `run ${runId} is being locked by another process right now (${file}); try again in a moment`,
      );
    }
    return { text, info: null };
  }
  if (info.host !== os.hostname()) {
    throw new RunFolderError(
      `run ${runId} is locked by process ${info.pid} on host ${info.host} (since ${info.since}); this machine cannot ` +
        `tell whether it still runs: stop it there, or delete ${file} if it is gone`,
    );
  }
  if (holderAlive(info)) {
    throw new RunFolderError(
      `run ${runId} is already being written by process ${info.pid} (since ${info.since}); stop it first, or wait for ` +
        `it to finish (if process ${info.pid} is not a mars-lab run, the lock is left over: delete ${file})`,
    );
  }
  return { text, info };
}
