/**
 * The launch form's "ship the project with the jobs" (issue 18): before a study's jobs are submitted from the app, the
 * project is packed and uploaded exactly as `mars-lab study --ray URL --ship` does (engine/cluster/studies/shipProject.ts:
 * packProject into the home's cache, shipCacheDir; then the package uploaded unless the cluster has it), and the
 * jobs run with it as their runtime_env working_dir and an entrypoint relative to it. So a packaged app, whose
 * project folder exists on no cluster, needs no $MARS_LAB_RAY_PROJECT: the cluster needs only Node.js.
 *
 * Packing takes ~20 s cold (tracing the packages, zipping), so each phase is pushed as a 'shipProgress' event for the
 * form to show while startStudy is pending. A stale build (sources edited after `npm run build`) or a package over
 * Ray's upload cap is one UserError naming ray.ship and the fix, before anything is recorded or submitted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { RayJobsClient } from '../../cluster/ray/jobsClient';
import { ensurePackage, packProject, shipCacheDir } from '../../cluster/studies/shipProject';
import type { StudyRecord } from '../../cluster/studies/studyRecord';
import { UserError } from '../../base/userError';
import type { ApiEvent } from '../contract/contract';

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;

/**
 * Whether a study on a cluster ships the project unless told: when the host names no project folder on the cluster
 * ($MARS_LAB_RAY_PROJECT unset) and this project is a packaged app's (inside an .asar archive, or without its
 * sources), whose folder no cluster has. A checkout's folder may be on the cluster (this machine's own Ray head, a
 * shared path), and shipping it costs a pack and an upload, so there it is the form's choice.
 */
export function shipsByDefault(root: string, env: NodeJS.ProcessEnv, projectEnv: string): boolean {
  if (env[projectEnv]) return false;
  return /\.asar$/i.test(root) || !fs.existsSync(path.join(root, 'engine/commands/cli.ts'));
}

/** The working_dir package a study's jobs run from, when it was shipped. */
export function shippedPackage(record: StudyRecord): string | undefined {
  if (record.where.kind !== 'ray') return undefined;
  const dir = record.where.runtimeEnv?.working_dir;
  return typeof dir === 'string' && dir.startsWith('gcs://') ? dir : undefined;
}

/** The CLI's words (--ship, --ray-project PATH) in the form's (ray.ship, the host's $MARS_LAB_RAY_PROJECT). */
function inFormWords(err: unknown): unknown {
  if (!(err instanceof UserError) || !err.message.startsWith('--ship')) return err;
  const message = err.message
    .replace(/^--ship(-native)?:?/, 'ray.ship:')
    .replace('(--ray-project PATH)', '(set MARS_LAB_RAY_PROJECT where the app starts, and untick ship)');
  return new UserError(message);
}

/** out/cli/build.json as `npm run build` writes it (engine.vite.config.ts). */
const buildRecordSchema = z.object({
  version: z.literal(1),
  builtAt: z.number(),
  sources: z.array(
    z
      .string()
      .min(1)
      .refine((s) => !path.isAbsolute(s)),
  ),
});

/**
 * Why the build at `root` is not what its sources say (null: up to date). The rule of engine/bin/builtEntry.mjs
 * chooseEntry, which `study --ship` applies and which sits on a floor above this one: a project without sources or
 * inside an .asar archive (a packaged app) takes its build as it is.
 */
function staleBuild(root: string): string | null {
  if (!fs.existsSync(path.join(root, 'out/cli/index.js'))) return 'no build (out/cli/index.js)';
  if (!fs.existsSync(path.join(root, 'engine/commands/cli.ts')) || /\.asar$/i.test(root)) return null;
  let record: z.infer<typeof buildRecordSchema>;
  try {
    record = buildRecordSchema.parse(JSON.parse(fs.readFileSync(path.join(root, 'out/cli/build.json'), 'utf8')));
  } catch {
    return 'out/cli/build.json is missing or unreadable';
  }
  for (const source of record.sources) {
    let mtime: number;
    try {
      mtime = fs.statSync(path.join(root, source)).mtimeMs;
    } catch {
      return `${source}, built from, is gone`;
    }
    if (mtime > record.builtAt) return `${source} changed after the build`;
  }
  return null;
}

/** Refuses (one line) a project whose build is older than its sources: the jobs would run code not this checkout's. */
export function checkShippable(root: string): void {
  const reason = staleBuild(root);
  if (reason) {
    throw new UserError(
      `ray.ship: the app sends its built engine, and it is not up to date (${reason}): run npm run build, or untick ship`,
    );
  }
}

/**
 * Packs the project at `root` (or takes it from `<home>/cache/ray-packages`) and uploads it unless the cluster has it;
 * answers the package's URI for the jobs' working_dir.
 */
export async function shipForStudy(
  client: RayJobsClient,
  opts: { root: string; home: string; emit: (event: ApiEvent) => void; cap?: number },
): Promise<string> {
  const cacheDir = shipCacheDir(opts.home);
  const progress = (phase: 'packing' | 'uploading' | 'shipped', message: string) =>
    opts.emit({ type: 'shipProgress', phase, message });
  progress('packing', 'packing the project for the cluster (about 20 s the first time)…');
  let packed;
  try {
    packed = await packProject({ root: opts.root, cacheDir, ...(opts.cap !== undefined ? { cap: opts.cap } : {}) });
  } catch (err) {
    throw inFormWords(err);
  }
  const size = `${mib(packed.bytes)}, ${packed.files} files`;
  progress(
    'uploading',
    `${packed.cached ? 'packed before' : `packed in ${secs(packed.packMs)}`} (${size}); sending it to the cluster…`,
  );
  const started = Date.now();
  const how = await ensurePackage(client, packed.uri, cacheDir);
  progress(
    'shipped',
    `shipped as ${packed.uri} (${size}; ${how === 'uploaded' ? `uploaded in ${secs(Date.now() - started)}` : 'on the cluster already'})`,
  );
  return packed.uri;
}
