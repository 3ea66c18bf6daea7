/**
 * Who writes a run: the lock's process, checked to be that process and not another one that got its pid later.
 *
 * A run folder names its writer by pid (`lock`, and `pid` in run.json). After a crash the pid can be reused by any
 * process, and a crafted folder can name pid 0 or -1 (every process of the group, of the user). So before a run is
 * called live, or its writer is signalled, the pid must be an integer > 1 and the live process must be the writer:
 *
 * - the lock written by this version records the writer's own start time (`procStart`, field 22 of /proc/self/stat,
 *   clock ticks since boot) and the boot (`bootId`); the process now holding the pid must have exactly that start;
 * - a lock of an earlier version (or run.json alone) records when the writer held the run (`since`, `statusAt`): a
 *   process that started after that moment cannot be the writer (two live processes never share a pid).
 *
 * Where /proc is absent (macOS) the start time comes from `ps -o lstart=` (one-second resolution); if that fails too,
 * nothing can be verified: the answer is 'unknown', which callers treat conservatively (never signal; keep showing
 * the recorded status; never take the lock over).
 *
 * A start time and a boot id are no secret, though: a crafted folder can copy them from /proc/<pid>/stat of any
 * process (issue 34, finding 3). Before the writer is signalled it must also be proven by what a folder cannot
 * forge (provenWriter): the writer keeps its lock file open for the run's life (runLock.ts), so the process must have a
 * descriptor (/proc/<pid>/fd) that opened this run folder's lock by its path and is that very file (device and inode),
 * the lock being a regular file, not a link to a file the process happens to hold (/dev/null, its log).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RUN_FILES } from './home';
import { readHomeText } from './homeFile';

/** What a run folder claims about its writer. */
export interface WriterClaim {
  pid: unknown;
  host?: unknown;
  /** ISO time at which the writer was known to hold the run (the lock's `since`, run.json's `statusAt`). */
  since?: unknown;
  /** Clock ticks since boot at which the writer started (locks written by this version). */
  procStart?: unknown;
  bootId?: unknown;
}

export type WriterState =
  | { state: 'alive'; pid: number }
  | { state: 'gone'; reason: string }
  /** Cannot be told from here (another host, no /proc and no ps): treat as possibly alive, never signal. */
  | { state: 'unknown'; reason: string };

/** Slack for the start-time comparison: btime is whole seconds, ticks are 10 ms, `ps` is whole seconds. */
const START_SLACK_MS = 2000;

/** A pid that may be signalled: an integer above 1 (0 is the group, -1 every process, 1 init). */
export function isSignallablePid(pid: unknown): pid is number {
  return typeof pid === 'number' && Number.isSafeInteger(pid) && pid > 1 && pid < 2 ** 31;
}

let clockTicks: number | undefined;
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(
        execFileSync('getconf', ['CLK_TCK'], {
          encoding: 'utf8',
          stdio: ['ignore', 'pipe', 'ignore'],
          timeout: 2000,
        }).trim(),
      );
    } catch {
      clockTicks = NaN;
    }
    if (!(clockTicks > 0)) clockTicks = 100; // USER_HZ on every Linux that mars-lab runs on
  }
  return clockTicks;
}

function bootTimeMs(): number | null {
  try {
    const m = /^btime (\d+)$/m.exec(fs.readFileSync('/proc/stat', 'utf8'));
    return m ? Number(m[1]) * 1000 : null;
  } catch {
    return null;
  }
}

/** This boot's id (Linux), so a start time in ticks since boot is not compared across reboots. */
export function currentBootId(): string | null {
  try {
    return fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || null;
  } catch {
    return null;
  }
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks since boot); null without /proc; 'gone' if no such pid. */
export function procStartTicks(pid: number | 'self'): number | null | 'gone' {
  let text: string;
  try {
    text = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' || code === 'ESRCH') return fs.existsSync('/proc/self/stat') ? 'gone' : null;
    return null;
  }
  // The command name (field 2) is in parentheses and may hold spaces or ')': fields resume after the last ')'.
  const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(rest[22 - 3]);
  return Number.isFinite(ticks) ? ticks : null;
}

/** What the lock of this version records about the process writing it. */
export function ownStartStamp(): { procStart?: number; bootId?: string } {
  const ticks = procStartTicks('self');
  const bootId = currentBootId();
  return typeof ticks === 'number' && bootId ? { procStart: ticks, bootId } : {};
}

function pidExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: the process exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** When `pid` started (ms since the epoch), from /proc or else `ps`; 'gone' when there is no such process. */
function startTimeMs(pid: number): number | null | 'gone' {
  const ticks = procStartTicks(pid);
  if (ticks === 'gone') return 'gone';
  if (ticks !== null) {
    const boot = bootTimeMs();
    return boot === null ? null : boot + (ticks * 1000) / ticksPerSecond();
  }
  // No /proc (macOS): ps prints the start time as a local date, whole seconds.
  try {
    const out = execFileSync('ps', ['-o', 'lstart=', '-p', String(pid)], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
      timeout: 2000,
    }).trim();
    if (out === '') return 'gone';
    const t = Date.parse(out);
    return Number.isFinite(t) ? t : null;
  } catch {
    return pidExists(pid) ? null : 'gone';
  }
}

/** Whether the process claimed to write a run is alive and is that writer. */
export function checkWriter(claim: WriterClaim): WriterState {
  const { pid } = claim;
  if (!isSignallablePid(pid)) {
    return {
      state: 'gone',
      reason: `the recorded process id ${JSON.stringify(pid)?.slice(0, 20)} is not a process a run can have`,
    };
  }
  if (claim.host !== undefined && claim.host !== os.hostname()) {
    return {
      state: 'unknown',
      reason: `it is held by process ${pid} on host ${(typeof claim.host === 'string' ? claim.host : JSON.stringify(claim.host)).slice(0, 100)}`,
    };
  }
  if (!pidExists(pid)) return { state: 'gone', reason: `process ${pid} is no longer running` };
  if (typeof claim.procStart === 'number' && typeof claim.bootId === 'string') {
    const boot = currentBootId();
    const ticks = procStartTicks(pid);
    if (boot !== null && typeof ticks === 'number') {
      if (boot !== claim.bootId) {
        return { state: 'gone', reason: `process ${pid} is from before the machine restarted` };
      }
      return ticks === claim.procStart
        ? { state: 'alive', pid }
        : {
            state: 'gone',
            reason: `process ${pid} is another process (it started at a different time than the run's writer)`,
          };
    }
    if (ticks === 'gone') return { state: 'gone', reason: `process ${pid} is no longer running` };
  }
  const since = typeof claim.since === 'string' ? Date.parse(claim.since) : NaN;
  if (!Number.isFinite(since)) {
    return { state: 'unknown', reason: `the time process ${pid} took the run is not recorded` };
  }
  const started = startTimeMs(pid);
  if (started === 'gone') return { state: 'gone', reason: `process ${pid} is no longer running` };
  if (started === null) {
    return { state: 'unknown', reason: `the start time of process ${pid} cannot be read on this system` };
  }
  return started <= since + START_SLACK_MS
    ? { state: 'alive', pid }
    : { state: 'gone', reason: `process ${pid} is another process (it started after the run's writer took the run)` };
}

/** The lock file's contents as a claim, or null when there is no readable lock. */
export function readLockClaim(dir: string): WriterClaim | null {
  try {
    // A FIFO lock would block the host in open(); a large one is no lock (homeFile.ts refuses both, reading nothing).
    const text = readHomeText(path.join(dir, RUN_FILES.lock), 4096);
    if (text === null) return null;
    const v = JSON.parse(text) as unknown;
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as WriterClaim) : null;
  } catch {
    return null;
  }
}

/**
 * The writer of a run whose run.json says `running` (pid and statusAt from run.json): the lock's holder when there is
 * a lock (it must be the pid run.json names), else run.json's own pid, checked against the time it went running.
 */
export function runWriter(dir: string, meta: { pid?: number; statusAt?: string }): WriterState {
  const lock = readLockClaim(dir);
  if (lock) {
    if (meta.pid !== undefined && lock.pid !== meta.pid) {
      return {
        state: 'gone',
        reason: `the lock names process ${JSON.stringify(lock.pid)?.slice(0, 20)}, run.json process ${meta.pid}`,
      };
    }
    return checkWriter(lock);
  }
  if (meta.pid === undefined) return { state: 'gone', reason: 'no process is recorded as writing it' };
  return checkWriter({ pid: meta.pid, since: meta.statusAt });
}

/**
 * The status to show for a run: run.json's, except that a run that says `running` while its writer is gone (killed,
 * crashed, out of memory) is shown `interrupted`, the status the app and `ls` already offer Resume for. run.json is
 * not rewritten: only the run's own process writes it.
 */
export function shownStatus<S extends string>(
  dir: string,
  meta: { status: S; pid?: number; statusAt?: string },
): S | 'interrupted' {
  if (meta.status !== 'running') return meta.status;
  return runWriter(dir, meta).state === 'gone' ? 'interrupted' : meta.status;
}

/**
 * Whether process `pid` holds this run folder's lock file open (Linux: its /proc/<pid>/fd links): the descriptor's path
 * is the lock's real path and its file is the lock (device and inode). 'unknown' where /proc cannot say (no /proc, or
 * another user's process).
 */
export function holdsRunLock(pid: number, dir: string): { held: true } | { held: false | 'unknown'; reason: string } {
  const lock = path.join(dir, RUN_FILES.lock);
  let st: fs.Stats;
  let real: string;
  try {
    st = fs.lstatSync(lock);
    real = fs.realpathSync(lock);
  } catch {
    return { held: false, reason: 'the run has no lock file' };
  }
  if (!st.isFile()) return { held: false, reason: 'its lock is not a regular file' };
  let fds: string[];
  try {
    fds = fs.readdirSync(`/proc/${pid}/fd`);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (!fs.existsSync('/proc/self/fd')) {
      return { held: 'unknown', reason: 'this system has no /proc to show which files a process holds' };
    }
    if (code === 'EACCES' || code === 'EPERM') {
      return { held: 'unknown', reason: `process ${pid} belongs to another user` };
    }
    return { held: false, reason: `process ${pid} is no longer running` };
  }
  for (const fd of fds) {
    const link = `/proc/${pid}/fd/${fd}`;
    try {
      if (fs.readlinkSync(link) !== real) continue;
      const held = fs.statSync(link);
      if (held.dev === st.dev && held.ino === st.ino) return { held: true };
    } catch {
      // a descriptor closed meanwhile
    }
  }
  return { held: false, reason: `process ${pid} does not hold this run's lock file open` };
}

/**
 * The writer of a run that may be signalled: runWriter's live process, proven to hold the run's lock file open
 * (holdsRunLock), which a crafted folder cannot arrange for a process it names. Otherwise 'unknown' with the reason:
 * a writer of an earlier version (which closed its lock) is stopped where it runs, never from here.
 */
export function provenWriter(dir: string, meta: { pid?: number; statusAt?: string }): WriterState {
  const writer = runWriter(dir, meta);
  if (writer.state !== 'alive') return writer;
  const proof = holdsRunLock(writer.pid, dir);
  if (proof.held === true) return writer;
  return {
    state: 'unknown',
    reason: `${proof.reason}, so it is not proven to be the run's writer (a run started by an earlier mars-lab, or a folder naming another process)`,
  };
}
