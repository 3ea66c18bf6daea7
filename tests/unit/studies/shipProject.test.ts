/**
 * The project package `study --ship` sends to a Ray cluster (engine/cluster/studies/shipProject.ts), packed from a small
 * made-up project: only what the built engine loads goes in (a production dependency file by file, the .wasm beside
 * it; not an optional dependency, a dev dependency, the packing tool or a package's unused files), with resources/, engine/bin/ and a
 * generated package.json; the zip is content-addressed like Ray's SDK names a zip (sha1) and the same inputs give the
 * same bytes; a second pack comes from the cache; a change of input packs anew and drops the old zip; a package over
 * the cap and a missing build are one-line errors.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { unzipSync, strFromU8 } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { packProject } from '../../../engine/cluster/studies/shipProject';
import { UserError } from '../../../engine/base/userError';

let tmp: string;
let root: string;

function write(rel: string, text: string): void {
  const f = path.join(root, rel);
  fs.mkdirSync(path.dirname(f), { recursive: true });
  fs.writeFileSync(f, text);
}

beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-pack-'));
  root = path.join(tmp, 'project');
  write(
    'package.json',
    JSON.stringify({
      name: 'fake-lab',
      version: '1.2.3',
      type: 'module',
      scripts: { postinstall: 'node x.js' },
      dependencies: { 'dep-a': '1.0.0' },
      optionalDependencies: { 'opt-b': '1.0.0' },
      devDependencies: { 'dev-c': '1.0.0' },
    }),
  );
  write(
    'out/cli/index.js',
    "import a from 'dep-a';\nexport const x = a;\nexport async function gpu() {\n  return import('opt-b');\n}\n" +
      "export async function pack() {\n  return import('@vercel/nft');\n}\n",
  );
  write('engine/bin/mars-lab.mjs', "import '../../out/cli/index.js';\n");
  write('engine/commands/cli.ts', 'export {};\n'); // a source: never shipped
  write('resources/presets/p.json', '{"name":"p"}\n');
  write('node_modules/dep-a/package.json', JSON.stringify({ name: 'dep-a', version: '1.0.0', main: 'lib/index.js' }));
  write('node_modules/dep-a/lib/index.js', "module.exports = require('./util.js');\n");
  write('node_modules/dep-a/lib/util.js', 'module.exports = 42;\n');
  write('node_modules/dep-a/lib/kernel.wasm', '\0asm-bytes');
  write('node_modules/dep-a/lib/unused.js', 'module.exports = 0;\n');
  write('node_modules/dep-a/docs/other.wasm', '\0asm-not-beside');
  write('node_modules/opt-b/package.json', JSON.stringify({ name: 'opt-b', version: '1.0.0', main: 'index.js' }));
  write('node_modules/opt-b/index.js', 'module.exports = 1;\n');
  // the packing tool itself, named by the engine (shipProject.ts imports it): never shipped
  write('node_modules/@vercel/nft/package.json', JSON.stringify({ name: '@vercel/nft', main: 'index.js' }));
  write('node_modules/@vercel/nft/index.js', 'module.exports = 3;\n');
  write('node_modules/dev-c/package.json', JSON.stringify({ name: 'dev-c', version: '1.0.0', main: 'index.js' }));
  write('node_modules/dev-c/index.js', 'module.exports = 2;\n');
});

afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('packProject', () => {
  it('packs what the built engine loads and nothing else, content-addressed, the same bytes twice', async () => {
    const cache = path.join(tmp, 'cache-1');
    const p = await packProject({ root, cacheDir: cache });
    expect(p.cached).toBe(false);
    const zip = fs.readFileSync(p.zipFile);
    expect(p.uri).toBe(`gcs://_ray_pkg_${createHash('sha1').update(zip).digest('hex')}.zip`);
    expect(p.bytes).toBe(zip.length);
    const files = unzipSync(zip);
    expect(Object.keys(files).sort()).toEqual([
      'engine/bin/mars-lab.mjs',
      'node_modules/dep-a/lib/index.js',
      'node_modules/dep-a/lib/kernel.wasm',
      'node_modules/dep-a/lib/util.js',
      'node_modules/dep-a/package.json',
      'out/cli/index.js',
      'package.json',
      'resources/presets/p.json',
    ]);
    expect(p.files).toBe(8);
    expect(JSON.parse(strFromU8(files['package.json']!))).toMatchObject({
      name: 'fake-lab',
      version: '1.2.3',
      type: 'module',
    });
    expect(strFromU8(files['package.json']!)).not.toMatch(/postinstall|dependencies/);

    // the same inputs packed elsewhere: the same zip, byte for byte
    const again = await packProject({ root, cacheDir: path.join(tmp, 'cache-2') });
    expect(again.uri).toBe(p.uri);
    expect(fs.readFileSync(again.zipFile).equals(zip)).toBe(true);

    // the same cache: nothing packed
    const cached = await packProject({ root, cacheDir: cache });
    expect(cached).toMatchObject({ uri: p.uri, cached: true, bytes: p.bytes, files: 8 });

    // a changed input: packed anew, the old zip gone
    write('resources/presets/p.json', '{"name":"p","changed":true}\n');
    const changed = await packProject({ root, cacheDir: cache });
    expect(changed.cached).toBe(false);
    expect(changed.uri).not.toBe(p.uri);
    expect(fs.readdirSync(cache).filter((f) => f.endsWith('.zip'))).toEqual([path.basename(changed.zipFile)]);
  }, 60_000);

  it('refuses a package over the cap, and a missing build, in one line', async () => {
    const err = await packProject({ root, cacheDir: path.join(tmp, 'cache-3'), cap: 100 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).toMatch(
      /^--ship: the project packs to \d+\.\d MiB, over the 0\.0 MiB Ray's dashboard takes in one upload; run the jobs from a job image instead \(--ray-project PATH\)$/,
    );
    fs.renameSync(path.join(root, 'out/cli/index.js'), path.join(root, 'out/cli/index.js.away'));
    try {
      const missing = await packProject({ root, cacheDir: path.join(tmp, 'cache-4') }).catch((e: unknown) => e);
      expect(missing).toBeInstanceOf(UserError);
      expect((missing as Error).message).toMatch(/out\/cli\/index\.js is missing: run npm run build$/);
    } finally {
      fs.renameSync(path.join(root, 'out/cli/index.js.away'), path.join(root, 'out/cli/index.js'));
    }
  }, 60_000);
});
