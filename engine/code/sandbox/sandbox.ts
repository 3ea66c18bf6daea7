/**
 * One model-written Python program run against its tests, isolated (docs/results/marti-python.md has why this
 * mechanism, with the measurements). Under bubblewrap (`isolation.ts` finds it) the program sees a read-only /usr, a
 * fresh /proc and /dev, a private size-capped tmpfs as its working dir, no network (`--unshare-all`: its own net, pid,
 * ipc, uts, user and cgroup namespaces), no inherited environment (`--clearenv` and an empty spawn environment) and no
 * other process (its own pid namespace, `--new-session`); `--die-with-parent` ends it with bubblewrap. As root, it runs
 * as `nobody`, since root is exempt from RLIMIT_NPROC (a fork bomb would not stop). The runner (runner.ts) sets the
 * rlimits before the program starts.
 *
 * The host side here enforces what the program cannot undo: the wall-clock limit (counted from the runner's "ready",
 * so a slow interpreter start on a loaded machine does not count against the program), the stdout + stderr cap (bytes
 * counted as they arrive; past the cap the sandbox is killed), and SIGKILL of the whole sandbox on either. The verdict
 * comes from the runner's nonce-tagged lines on fd 3, never from the program's stdout.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { rlimits, type SandboxLimits } from './limits';
import { RUNNER_SOURCE } from './runner';
import type { Isolation } from './isolation';

/** What to run: a program, then each test in the program's namespace (a test is any Python, usually asserts). */
export interface SandboxRequest {
  program: string;
  tests?: readonly string[];
}

export interface CodeError {
  /** `Type: message`, or the type alone when the message is empty. */
  error: string;
  type: string;
  /** The source line (of the program or the test) where it was raised, when known. */
  line: string | null;
}

export type SandboxStatus =
  | 'passed'
  | 'failed' // the program or a test raised
  | 'timeout'
  | 'memory' // MemoryError, or killed for memory
  | 'output-limit'
  | 'crashed' // the interpreter died (a signal such as SIGSEGV from a stack overflow, or an exit before its report)
  | 'sandbox-error'; // the sandbox itself failed to start

export interface SandboxResult {
  status: SandboxStatus;
  passed: boolean;
  /** One line: what happened ("passed", "failed: AssertionError at `assert f(2) == 4`", "timed out after 3 s", …). */
  reason: string;
  program: ({ ok: true } | ({ ok: false } & CodeError)) | null;
  tests: ({ ok: true } | ({ ok: false } & CodeError))[];
  /** The first bytes of each stream (keepOutputBytes), as UTF-8. */
  stdout: string;
  stderr: string;
  /** Bytes written to stdout and stderr together (counted up to the kill). */
  outputBytes: number;
  /** From spawn to exit, and from the runner's "ready" to exit. */
  wallMs: number;
  runMs: number | null;
}

/** A report line from the runner (fd 3): the boundary between the sandbox and the host. */
const reportSchema = z.object({
  kind: z.enum(['ready', 'program', 'test', 'setup-error', 'done']),
  nonce: z.string(),
  index: z.number().int().min(0).optional(),
  ok: z.boolean().optional(),
  error: z.string().optional(),
  type: z.string().optional(),
  line: z.string().nullable().optional(),
});
type Report = z.infer<typeof reportSchema>;
type Outcome = SandboxResult['tests'][number];

function outcomeOf(r: Report): Outcome {
  return r.ok
    ? { ok: true }
    : { ok: false, error: r.error ?? '(no message)', type: r.type ?? '?', line: r.line ?? null };
}

/** How much of each stream a result keeps (the rest is counted, not kept). */
const KEEP_OUTPUT_BYTES = 16 * 1024;
/** A report line longer than this is not the runner's (it writes ≤ ~5 KB a line). */
const MAX_REPORT_BYTES = 64 * 1024;

/** The bubblewrap arguments: what the program can see (see the opening comment). */
export function bwrapArgs(iso: Extract<Isolation, { kind: 'bubblewrap' }>, limits: SandboxLimits): string[] {
  const args = ['--unshare-all', '--unshare-user', '--disable-userns', '--die-with-parent', '--new-session'];
  args.push('--ro-bind', '/usr', '/usr');
  // Debian's merged /usr: /lib, /lib64, /bin and /sbin are links into /usr; elsewhere they are bound read-only.
  for (const dir of ['/lib', '/lib64', '/lib32', '/bin', '/sbin']) {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(dir);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) args.push('--symlink', fs.readlinkSync(dir), dir);
    else if (st.isDirectory()) args.push('--ro-bind', dir, dir);
  }
  if (iso.pythonPrefix) args.push('--ro-bind', iso.pythonPrefix, iso.pythonPrefix);
  args.push('--proc', '/proc', '--dev', '/dev');
  args.push('--size', String(limits.tmpBytes), '--tmpfs', '/tmp', '--chdir', '/tmp');
  args.push('--hostname', 'sandbox', '--clearenv');
  for (const [k, v] of Object.entries(SANDBOX_ENV)) args.push('--setenv', k, v);
  args.push('--', iso.python, ...PYTHON_FLAGS, '-c', RUNNER_SOURCE);
  return args;
}

/** The whole environment a program sees. */
const SANDBOX_ENV: Record<string, string> = {
  PATH: '/usr/bin:/bin',
  HOME: '/tmp',
  LANG: 'C.UTF-8',
  OMP_NUM_THREADS: '1',
};
/** -I: no PYTHON* variables, no user site, no script dir on sys.path; -S: no site import; -B: no .pyc writes. */
const PYTHON_FLAGS = ['-I', '-S', '-B'];

/** The uid/gid a sandbox runs as: `nobody` when the host is root (root ignores RLIMIT_NPROC), else the host's own. */
export function sandboxIds(): { uid: number; gid: number } | undefined {
  return process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
}

function spawnSandbox(iso: Isolation, limits: SandboxLimits): { child: ChildProcess; cleanup: () => void } {
  const ids = sandboxIds();
  if (iso.kind === 'bubblewrap') {
    const child = spawn(iso.bwrap, bwrapArgs(iso, limits), {
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
      env: {},
      ...ids,
    });
    return { child, cleanup: () => {} };
  }
  // Unsandboxed (the user opted out): rlimits, an empty environment, a fresh temp dir and its own process group only.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-code-'));
  if (ids) fs.chownSync(dir, ids.uid, ids.gid);
  const child = spawn(iso.python, [...PYTHON_FLAGS, '-c', RUNNER_SOURCE], {
    stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    env: { ...SANDBOX_ENV, HOME: dir },
    cwd: dir,
    detached: true,
    ...ids,
  });
  return { child, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

/** Sandboxes still running, killed if the host exits first. */
const live = new Map<ChildProcess, Isolation>();
let exitHook = false;

function killSandbox(child: ChildProcess, iso: Isolation): void {
  if (child.exitCode !== null || child.signalCode !== null || child.pid === undefined) return;
  try {
    // bubblewrap: killing it ends its pid namespace (--die-with-parent); unsandboxed: the whole process group.
    if (iso.kind === 'none') process.kill(-child.pid, 'SIGKILL');
    else child.kill('SIGKILL');
  } catch {
    // Already gone.
  }
}

/** Runs one program and its tests in the sandbox; never throws for anything the program does. */
export function runInSandbox(iso: Isolation, limits: SandboxLimits, req: SandboxRequest): Promise<SandboxResult> {
  const nonce = randomBytes(16).toString('hex');
  const tests = req.tests ?? [];
  const started = performance.now();
  const { child, cleanup } = spawnSandbox(iso, limits);
  live.set(child, iso);
  if (!exitHook) {
    exitHook = true;
    process.once('exit', () => live.forEach((how, c) => killSandbox(c, how)));
  }
  let readyAt: number | null = null;
  let program: SandboxResult['program'] = null;
  const testOutcomes: SandboxResult['tests'] = [];
  let done = false;
  let setupError: string | null = null;
  let killedFor: 'timeout' | 'output-limit' | 'start' | null = null;
  let outputBytes = 0;
  const kept = { stdout: [] as Buffer[], stderr: [] as Buffer[], stdoutBytes: 0, stderrBytes: 0 };
  let spawnError: string | null = null;

  const kill = (why: 'timeout' | 'output-limit' | 'start') => {
    if (killedFor === null) killedFor = why;
    killSandbox(child, iso);
  };
  let timer = setTimeout(() => kill('start'), limits.startS * 1000);

  const onOutput = (stream: 'stdout' | 'stderr') => (chunk: Buffer) => {
    outputBytes += chunk.length;
    const have = stream === 'stdout' ? kept.stdoutBytes : kept.stderrBytes;
    if (have < KEEP_OUTPUT_BYTES) {
      const part = chunk.subarray(0, KEEP_OUTPUT_BYTES - have);
      kept[stream].push(part);
      if (stream === 'stdout') kept.stdoutBytes += part.length;
      else kept.stderrBytes += part.length;
    }
    if (outputBytes > limits.outputBytes) kill('output-limit');
  };
  child.stdout!.on('data', onOutput('stdout'));
  child.stderr!.on('data', onOutput('stderr'));

  let pending = '';
  const onReport = (line: string) => {
    let parsed: Report;
    try {
      const r = reportSchema.safeParse(JSON.parse(line));
      if (!r.success || r.data.nonce !== nonce) return;
      parsed = r.data;
    } catch {
      return;
    }
    if (parsed.kind === 'ready' && readyAt === null) {
      readyAt = performance.now();
      clearTimeout(timer);
      timer = setTimeout(() => kill('timeout'), limits.timeoutS * 1000);
    } else if (parsed.kind === 'program' && program === null) program = outcomeOf(parsed);
    else if (parsed.kind === 'test' && parsed.index === testOutcomes.length) testOutcomes.push(outcomeOf(parsed));
    else if (parsed.kind === 'setup-error') setupError = parsed.error ?? '(no message)';
    else if (parsed.kind === 'done') done = true;
  };
  const reports = child.stdio[3] as NodeJS.ReadableStream;
  reports.setEncoding('utf8');
  reports.on('data', (text: string) => {
    pending += text;
    let nl: number;
    while ((nl = pending.indexOf('\n')) >= 0) {
      onReport(pending.slice(0, nl));
      pending = pending.slice(nl + 1);
    }
    if (pending.length > MAX_REPORT_BYTES) pending = '';
  });
  // Errors on the pipes (EPIPE when the sandbox dies before reading its request) are answered by the exit below.
  for (const s of child.stdio) s?.on('error', () => {});
  child.on('error', (err) => {
    spawnError = err.message;
  });
  child.stdin!.end(JSON.stringify({ program: req.program, tests, limits: rlimits(limits), nonce }));

  return new Promise((resolve) => {
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      cleanup();
      const end = performance.now();
      const base = {
        program,
        tests: testOutcomes,
        stdout: Buffer.concat(kept.stdout).toString('utf8'),
        stderr: Buffer.concat(kept.stderr).toString('utf8'),
        outputBytes,
        wallMs: end - started,
        runMs: readyAt === null ? null : end - readyAt,
      };
      const verdict = judge({
        program,
        tests: testOutcomes,
        testCount: tests.length,
        done,
        killedFor,
        setupError,
        spawnError,
        ready: readyAt !== null,
        code,
        signal,
        limits,
        stderr: base.stderr,
      });
      resolve({ ...base, ...verdict });
    });
  });
}

interface Observed {
  program: SandboxResult['program'];
  tests: SandboxResult['tests'];
  testCount: number;
  done: boolean;
  killedFor: 'timeout' | 'output-limit' | 'start' | null;
  setupError: string | null;
  spawnError: string | null;
  ready: boolean;
  code: number | null;
  signal: NodeJS.Signals | null;
  limits: SandboxLimits;
  stderr: string;
}

function where(e: CodeError): string {
  return e.line ? `${e.error} (at \`${e.line}\`)` : e.error;
}

/** The status and one-line reason from what was seen; the order matters (a kill explains a missing report). */
export function judge(o: Observed): { status: SandboxStatus; passed: boolean; reason: string } {
  const fail = (status: SandboxStatus, reason: string) => ({ status, passed: false, reason });
  if (o.spawnError) return fail('sandbox-error', `the sandbox did not start: ${o.spawnError}`);
  if (o.setupError) return fail('sandbox-error', `the sandbox's limits could not be set: ${o.setupError}`);
  if (o.killedFor === 'output-limit') {
    return fail('output-limit', `output limit: more than ${o.limits.outputBytes} bytes on stdout and stderr, killed`);
  }
  if (o.killedFor === 'timeout') return fail('timeout', `timed out after ${o.limits.timeoutS} s, killed`);
  if (o.killedFor === 'start') {
    return fail('sandbox-error', `the interpreter did not start within ${o.limits.startS} s (machine overloaded?)`);
  }
  const raised = o.program && !o.program.ok ? o.program : o.tests.find((t) => !t.ok);
  if (raised && !raised.ok) {
    const which = o.program && !o.program.ok ? 'the program' : `test ${o.tests.indexOf(raised) + 1}`;
    if (raised.type === 'MemoryError') {
      return fail('memory', `memory: ${which} raised MemoryError (address-space limit ${o.limits.memoryBytes} bytes)`);
    }
    if (raised.type === 'RecursionError') return fail('failed', `recursion: ${which} raised ${where(raised)}`);
    if (raised.type === 'BlockingIOError' && /Resource temporarily unavailable/.test(raised.error)) {
      return fail('failed', `process limit (${o.limits.processes}): ${which} raised ${where(raised)}`);
    }
    return fail('failed', `${which} raised ${where(raised)}`);
  }
  if (o.done && o.program?.ok && o.tests.length === o.testCount) {
    return { status: 'passed', passed: true, reason: 'passed' };
  }
  // The interpreter ended without its last report: a signal, or an exit the program forced.
  if (o.signal === 'SIGXCPU' || o.code === 128 + 24) {
    return fail('timeout', `timed out: the CPU-time limit (${Math.ceil(o.limits.timeoutS) + 1} s) was reached`);
  }
  if (o.signal === 'SIGSEGV' || o.code === 128 + 11) {
    return fail('crashed', 'crashed: segmentation fault (a C stack overflow, e.g. from deep recursion)');
  }
  if (/MemoryError|Cannot allocate memory|out of memory/i.test(o.stderr)) {
    return fail('memory', `memory: the interpreter ran out of memory (limit ${o.limits.memoryBytes} bytes)`);
  }
  if (!o.ready) {
    const tail = o.stderr.trim().split('\n').at(-1) ?? '';
    return fail(
      'sandbox-error',
      `the sandbox ended before the program started (exit ${o.code ?? o.signal})${tail ? `: ${tail.slice(0, 300)}` : ''}`,
    );
  }
  const how = o.signal
    ? `signal ${o.signal}`
    : o.code !== null && o.code > 128
      ? `signal ${o.code - 128}`
      : `exit code ${o.code}`;
  const at = o.program === null ? 'before the program finished' : `after ${o.tests.length} of ${o.testCount} tests`;
  return fail('crashed', `crashed: the interpreter ended ${at} (${how}) without reporting`);
}
