/**
 * `study --ray URL --ship`: the project sent to a Ray cluster as each job's runtime_env working_dir, so a cluster
 * needs only Node.js 20 (no checkout, no npm install, no MARS_LAB_RAY_PROJECT). The package is a zip of what `train`
 * needs and nothing else:
 * - the built engine (out/cli/index.js and its map, from `npm run build`) and engine/bin/ that starts it (with no
 *   TypeScript sources beside it, engine/bin/builtEntry.mjs takes the build);
 * - the packages the bundle leaves external, traced file by file from out/cli/index.js with @vercel/nft (production
 *   code only; the project's optionalDependencies — tfjs-node, webgpu — stay out, as they are optional here, and so do
 *   tsx and the packing tools, NOT_SHIPPED), plus every .wasm file beside a traced file (tfjs-backend-wasm loads its
 *   kernels by path, which a tracer cannot see);
 * - resources/ (presets and the base checkpoints they start from); with `--ship-native`, the native addon as built here
 *   (native/build: for this machine's CPU and libc, so only for a cluster of the same kind);
 * - a package.json of its own (`"type": "module"`, name and version), nothing else of the checkout.
 *
 * The zip is deterministic (sorted names, one fixed time stamp), so its URI is content-addressed as Ray's SDK names a
 * zip it uploads: `gcs://_ray_pkg_<sha1 of the zip>.zip` (ray/_private/runtime_env/packaging.py
 * get_uri_for_package). It is uploaded as the SDK does (dashboard_sdk.py _upload_package_if_needed): `GET
 * /api/packages/gcs/<name>` (200: there already, and pinned for a while; 404: not), then `PUT` with the zip's bytes.
 * Packing is cached in `<home>/cache/ray-packages/` by a fingerprint of its inputs (the build, npm's record of
 * node_modules, resources/), so a second study neither packs nor, while the cluster keeps the package, uploads.
 * A zip over Ray's limit (the dashboard accepts request bodies up to 100 MiB, ray_constants.DASHBOARD_CLIENT_MAX_SIZE;
 * the GCS up to 512 MiB) is refused in one line before anything is sent.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { RayJobsClient } from '../ray/jobsClient';
import { UserError } from '../../base/userError';
import { readOpenFile } from '../../base/regularFile';
import { openHomeFile } from '../../runs/folder/homeFile';

/** The largest upload Ray's dashboard takes (aiohttp client_max_size = DASHBOARD_CLIENT_MAX_SIZE, Ray 2.52). */
export const RAY_UPLOAD_CAP = 100 * 2 ** 20;

/** Bumped when what goes into the package changes, so an old cache entry is not reused. */
const PACK_FORMAT = 1;

/** The files outside node_modules/ that the package holds (relative to the project root; folders are walked). */
const ENGINE_FILES = ['out/cli/index.js', 'out/cli/index.js.map', 'out/cli/build.json', 'engine/bin'];
const NATIVE_FILES = ['native/build/mars_native.node', 'native/build/build.json'];

/** DOS time stamps are local time: a date made of local components writes the same bytes in every time zone. */
const ZIP_TIME = new Date(2000, 0, 1, 0, 0, 0);

export interface PackOptions {
  /** The project folder (with out/cli/index.js built). */
  root: string;
  /** Where packed zips and their fingerprints are kept. */
  cacheDir: string;
  /** Ship native/build too. */
  native?: boolean;
  /** Refuse zips of this size or more (tests make it small). */
  cap?: number;
}

export interface PackedProject {
  /** gcs://_ray_pkg_<sha1>.zip */
  uri: string;
  zipFile: string;
  bytes: number;
  files: number;
  /** Taken from the cache (nothing traced or zipped). */
  cached: boolean;
  packMs: number;
}

export interface ShippedProject extends PackedProject {
  /** False when the cluster had the package already. */
  uploaded: boolean;
  uploadMs: number;
}

const cacheEntrySchema = z.object({
  format: z.literal(PACK_FORMAT),
  uri: z.string().regex(/^gcs:\/\/_ray_pkg_[0-9a-f]{40}\.zip$/),
  bytes: z.number().int().positive(),
  files: z.number().int().positive(),
});

const projectPackageSchema = z.object({ name: z.string(), version: z.string() });

const mib = (n: number) => `${(n / 2 ** 20).toFixed(1)} MiB`;

/** Every file under `dir` (relative to `root`, '/' separated), sorted; none when it does not exist. */
function filesUnder(root: string, dir: string): string[] {
  const abs = path.join(root, dir);
  let st: fs.Stats;
  try {
    st = fs.statSync(abs);
  } catch {
    return [];
  }
  if (st.isFile()) return [dir];
  const out: string[] = [];
  for (const e of fs.readdirSync(abs, { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) out.push(...filesUnder(root, rel));
    else if (e.isFile()) out.push(rel);
  }
  return out.sort();
}

/** What the package is made from, as one hash: sizes and times of the inputs, not their contents (cheap). */
function fingerprint(root: string, native: boolean): string {
  const h = createHash('sha256').update(`format ${PACK_FORMAT} native ${native}\n`);
  const stamp = (rel: string) => {
    try {
      const st = fs.statSync(path.join(root, rel));
      h.update(`${rel} ${st.size} ${st.mtimeMs}\n`);
    } catch {
      h.update(`${rel} -\n`);
    }
  };
  // npm rewrites node_modules/.package-lock.json on every install: a changed node_modules changes it
  for (const rel of ['package.json', 'package-lock.json', 'node_modules/.package-lock.json']) stamp(rel);
  for (const rel of [...ENGINE_FILES, 'resources', ...(native ? NATIVE_FILES : [])]) {
    for (const f of filesUnder(root, rel)) stamp(f);
  }
  return h.digest('hex').slice(0, 32);
}

/** Packages a traced file may name that the package leaves out: tsx (and its esbuild) runs TypeScript sources, and
 * the package has none (out/cli names engine/bin/mars-lab.mjs, which imports tsx only for sources); @vercel/nft and
 * fflate pack the project here (this module's own imports) and are never loaded by a job. */
const NOT_SHIPPED = ['tsx', 'esbuild', '@esbuild', '@vercel/nft', 'fflate'];

/** The node_modules files the built engine loads: traced from out/cli/index.js, optional packages left out. */
async function tracedModules(root: string, optional: string[]): Promise<string[]> {
  const { nodeFileTrace } = await import('@vercel/nft');
  const skipped = [...optional, ...NOT_SHIPPED].map((name) => `node_modules/${name}/`);
  const { fileList } = await nodeFileTrace([path.join(root, 'out/cli/index.js')], {
    base: root,
    processCwd: root,
    ignore: (p: string) => skipped.some((s) => p.startsWith(s)),
  });
  const files = [...fileList].map((f) => f.split(path.sep).join('/')).filter((f) => f.startsWith('node_modules/'));
  // .wasm files are read by path at run time (tfjs-backend-wasm): every one beside a traced file goes along
  for (const dir of new Set(files.map((f) => path.posix.dirname(f)))) {
    for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      if (e.isFile() && e.name.endsWith('.wasm')) files.push(`${dir}/${e.name}`);
    }
  }
  return [...new Set(files)].sort();
}

/** The zip's file list (sorted) and its generated package.json. */
async function packageFiles(root: string, native: boolean): Promise<{ files: string[]; packageJson: string }> {
  let pkg: { name: string; version: string; optionalDependencies?: Record<string, string> };
  try {
    const raw = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as Record<string, unknown>;
    pkg = { ...projectPackageSchema.parse(raw), optionalDependencies: raw.optionalDependencies as never };
  } catch (err) {
    throw new UserError(`--ship: ${path.join(root, 'package.json')} is not readable (${(err as Error).message})`);
  }
  if (!fs.existsSync(path.join(root, 'out/cli/index.js'))) {
    throw new UserError(`--ship sends the built engine, and ${root}/out/cli/index.js is missing: run npm run build`);
  }
  if (native && !fs.existsSync(path.join(root, NATIVE_FILES[0]!))) {
    throw new UserError(
      `--ship-native: ${root}/${NATIVE_FILES[0]} is not built here (see npm run doctor); drop --ship-native`,
    );
  }
  const own = [...ENGINE_FILES, 'resources', ...(native ? NATIVE_FILES : [])].flatMap((d) => filesUnder(root, d));
  const modules = await tracedModules(root, Object.keys(pkg.optionalDependencies ?? {}));
  const packageJson = `${JSON.stringify(
    {
      name: pkg.name,
      version: pkg.version,
      private: true,
      type: 'module',
      description: 'the mars-lab engine as `mars-lab study --ship` sends it to a Ray cluster (runtime_env working_dir)',
    },
    null,
    2,
  )}\n`;
  return { files: [...new Set([...own, ...modules])].sort(), packageJson };
}

/** Packs the project (or takes the cached zip of the same inputs); a UserError when it is over the cap. */
export async function packProject(opts: PackOptions): Promise<PackedProject> {
  const started = Date.now();
  const native = opts.native ?? false;
  const cap = opts.cap ?? RAY_UPLOAD_CAP;
  const tooLarge = (bytes: number) =>
    new UserError(
      `--ship: the project packs to ${mib(bytes)}, over the ${mib(cap)} Ray's dashboard takes in one upload; run the jobs from a job image instead (--ray-project PATH)`,
    );
  const print = fingerprint(opts.root, native);
  const indexFile = path.join(opts.cacheDir, `${print}.json`);
  try {
    const entry = cacheEntrySchema.parse(JSON.parse(fs.readFileSync(indexFile, 'utf8')));
    const zipFile = path.join(opts.cacheDir, entry.uri.slice('gcs://'.length));
    if (readCachedPackage(zipFile, entry.uri)?.length === entry.bytes) {
      if (entry.bytes >= cap) throw tooLarge(entry.bytes);
      return {
        uri: entry.uri,
        zipFile,
        bytes: entry.bytes,
        files: entry.files,
        cached: true,
        packMs: Date.now() - started,
      };
    }
  } catch (err) {
    if (err instanceof UserError) throw err;
    // no entry, or a damaged one: pack again
  }

  const { zipSync } = await import('fflate');
  const { files, packageJson } = await packageFiles(opts.root, native);
  const entries: Record<string, [Uint8Array, { mtime: Date; level: 6 }]> = {};
  const at = { mtime: ZIP_TIME, level: 6 as const };
  entries['package.json'] = [Buffer.from(packageJson), at];
  for (const f of files) {
    if (f === 'package.json') continue;
    entries[f] = [fs.readFileSync(path.join(opts.root, f)), at];
  }
  const zip = Buffer.from(zipSync(entries));
  if (zip.length >= cap) throw tooLarge(zip.length);
  const uri = `gcs://_ray_pkg_${createHash('sha1').update(zip).digest('hex')}.zip`;
  fs.mkdirSync(opts.cacheDir, { recursive: true });
  const name = uri.slice('gcs://'.length);
  const zipFile = path.join(opts.cacheDir, name);
  const tmp = `${zipFile}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, zip);
  fs.renameSync(tmp, zipFile);
  const entry = { format: PACK_FORMAT, uri, bytes: zip.length, files: Object.keys(entries).length };
  fs.writeFileSync(indexFile, `${JSON.stringify(entry)}\n`);
  // one package is kept: older zips and their fingerprints go
  for (const f of fs.readdirSync(opts.cacheDir)) {
    if (f !== name && f !== path.basename(indexFile) && /^(_ray_pkg_[0-9a-f]{40}\.zip|[0-9a-f]{32}\.json)$/.test(f)) {
      fs.rmSync(path.join(opts.cacheDir, f), { force: true });
    }
  }
  return { uri, zipFile, bytes: zip.length, files: entry.files, cached: false, packMs: Date.now() - started };
}

/**
 * A package's bytes from the home's cache, or null when they are not there or are not that package. The cache lies in
 * a home, which is untrusted (issue 34): a FIFO or a link out of the cache is refused unread (homeFile.ts), and the
 * bytes must hash to the name's sha1, so a planted file (a link to a key, say) is never uploaded to a cluster.
 */
export function readCachedPackage(zipFile: string, uri: string): Buffer | null {
  const m = /^gcs:\/\/_ray_pkg_([0-9a-f]{40})\.zip$/.exec(uri);
  if (!m || path.basename(zipFile) !== uri.slice('gcs://'.length)) return null;
  let fd: number | null;
  try {
    fd = openHomeFile(zipFile);
  } catch {
    return null;
  }
  if (fd === null) return null;
  let zip: Buffer;
  try {
    zip = readOpenFile(fd, 2 * RAY_UPLOAD_CAP, zipFile);
  } catch {
    return null;
  } finally {
    fs.closeSync(fd);
  }
  return createHash('sha1').update(zip).digest('hex') === m[1] ? zip : null;
}

/** Packs (or takes the cache) and uploads unless the cluster has the package already. */
export async function shipProject(client: RayJobsClient, opts: PackOptions): Promise<ShippedProject> {
  const packed = await packProject(opts);
  const started = Date.now();
  if (await client.packageExists(packed.uri)) return { ...packed, uploaded: false, uploadMs: Date.now() - started };
  const zip = readCachedPackage(packed.zipFile, packed.uri);
  if (!zip) throw new UserError(`${packed.zipFile}: the packed project changed or is not a file; ship the study again`);
  await client.uploadPackage(packed.uri, zip);
  return { ...packed, uploaded: true, uploadMs: Date.now() - started };
}

/**
 * Before runs of a shipped study are submitted on a re-attach: the cluster deletes a package no job refers to (once its
 * pin expires), so it is uploaded again from this home's cache when gone. 'there', 'uploaded', or a UserError when
 * neither the cluster nor the cache has it.
 */
export async function ensurePackage(
  client: RayJobsClient,
  uri: string,
  cacheDir: string,
): Promise<'there' | 'uploaded'> {
  if (await client.packageExists(uri)) return 'there';
  const zipFile = path.join(cacheDir, uri.slice('gcs://'.length));
  const zip = readCachedPackage(zipFile, uri);
  if (!zip) {
    throw new UserError(
      `the shipped package ${uri} is gone from the cluster and from ${cacheDir}: start the runs left in a new study with --ship`,
    );
  }
  await client.uploadPackage(uri, zip);
  return 'uploaded';
}

/** Where a home keeps its packed projects. */
export function shipCacheDir(home: string): string {
  return path.join(home, 'cache', 'ray-packages');
}
