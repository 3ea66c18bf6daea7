/**
 * Which isolation this machine gives model-written Python, found once per process: bubblewrap (`bwrap`) when it is
 * installed and a probe program runs under it, else nothing. With nothing, scoring refuses with a UserError that says
 * what is missing and how to install it, unless the caller opted out (`--unsafe-no-sandbox`): then programs run with
 * the rlimits, an empty environment, a temp dir and their own process group, but see the user's files and network.
 * docs/results/marti-python.md has why bubblewrap and not `unshare -n` alone, firejail or Pyodide.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { UserError } from '../../base/userError';
import { DEFAULT_LIMITS } from './limits';
import { runInSandbox } from './sandbox';

export type Isolation =
  | {
      kind: 'bubblewrap';
      bwrap: string;
      /** The interpreter's real path. */
      python: string;
      /** The interpreter's prefix when it lies outside /usr (bound read-only into the sandbox), else null. */
      pythonPrefix: string | null;
    }
  | { kind: 'none'; python: string };

export interface IsolationOptions {
  /** The Python interpreter (default: /usr/bin/python3, else python3 on PATH). */
  python?: string;
  /** Run unsandboxed when bubblewrap is missing or fails, instead of refusing. */
  allowUnsandboxed?: boolean;
  /** Where to look for bwrap and python3 (default: $PATH). */
  searchPath?: string;
}

const INSTALL = 'install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)';
export const OPT_OUT_FLAG = '--unsafe-no-sandbox';

/** The first executable called `name` on the search path. */
export function findExecutable(name: string, searchPath = process.env.PATH ?? ''): string | null {
  for (const dir of searchPath.split(path.delimiter)) {
    if (!dir) continue;
    const p = path.join(dir, name);
    try {
      fs.accessSync(p, fs.constants.X_OK);
      if (fs.statSync(p).isFile()) return p;
    } catch {
      // Not here.
    }
  }
  return null;
}

async function resolvePython(opts: IsolationOptions): Promise<{ python: string; prefix: string }> {
  const given =
    opts.python ??
    (fs.existsSync('/usr/bin/python3') ? '/usr/bin/python3' : findExecutable('python3', opts.searchPath));
  if (!given) {
    throw new UserError(
      'code: no python3 found (Debian/Ubuntu: apt-get install python3), or name one with --python PATH',
    );
  }
  const script = 'import sys, os; print(os.path.realpath(sys.executable)); print(sys.base_prefix)';
  try {
    const { stdout } = await promisify(execFile)(given, ['-I', '-S', '-c', script], { timeout: 30_000, env: {} });
    const [exe, prefix] = stdout.trim().split('\n');
    if (!exe || !prefix) throw new Error('no answer');
    return { python: exe, prefix };
  } catch (err) {
    throw new UserError(
      `--python ${given}: cannot run it as a Python 3 interpreter (${(err as Error).message.split('\n')[0]})`,
    );
  }
}

let cached: { key: string; value: Promise<Isolation> } | null = null;

/** The isolation to use (cached per options); throws a UserError when there is none and no opt-out. */
export function detectIsolation(opts: IsolationOptions = {}): Promise<Isolation> {
  const key = JSON.stringify(opts);
  if (cached?.key !== key) cached = { key, value: detect(opts) };
  const value = cached.value;
  value.catch(() => {
    if (cached?.value === value) cached = null;
  });
  return value;
}

async function detect(opts: IsolationOptions): Promise<Isolation> {
  const { python, prefix } = await resolvePython(opts);
  const bwrap = findExecutable('bwrap', opts.searchPath);
  let problem: string;
  if (bwrap) {
    const pythonPrefix = prefix === '/usr' || prefix.startsWith('/usr/') ? null : prefix;
    const iso: Isolation = { kind: 'bubblewrap', bwrap, python, pythonPrefix };
    const probe = await runInSandbox(
      iso,
      { ...DEFAULT_LIMITS, timeoutS: 30 },
      {
        program: 'import socket\nassert socket.gethostname() == "sandbox"',
      },
    );
    if (probe.passed) return iso;
    problem = `bubblewrap is installed (${bwrap}) but a probe program failed under it: ${probe.reason}${
      probe.stderr ? ` — ${probe.stderr.trim().split('\n')[0]}` : ''
    } (user namespaces may be disabled: sysctl kernel.unprivileged_userns_clone=1, or Ubuntu's AppArmor userns restriction)`;
  } else {
    problem = `bubblewrap (bwrap) is not installed: ${INSTALL}`;
  }
  if (opts.allowUnsandboxed) return { kind: 'none', python };
  throw new UserError(
    `code: no sandbox for model-written Python: ${problem}; or pass ${OPT_OUT_FLAG} to run programs with rlimits ` +
      'alone, able to read your files, use the network and see other processes',
  );
}

/** One line for the user: which isolation programs run under. */
export function describeIsolation(iso: Isolation): string {
  return iso.kind === 'bubblewrap'
    ? `sandbox: bubblewrap (${iso.bwrap}; ${iso.python}; no network, read-only /usr, private /tmp, rlimits)`
    : `sandbox: NONE (${OPT_OUT_FLAG}): ${iso.python} with rlimits only; programs can read your files and use the network`;
}
