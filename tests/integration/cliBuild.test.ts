/**
 * The engine starts as JavaScript: `npm run build`'s engine step (engine.vite.config.ts) bundles the CLI into
 * out/cli/index.js, and `mars-lab` runs that without tsx's loader. Checked in a packaged-like folder (out/ and the
 * bin, no engine sources; node_modules, resources and package.json linked in) under a module hook that makes every
 * import of `tsx` fail, so the commands pass only if the loader is never asked for.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const repo = path.resolve('.');

let app: string;
let blockTsx: string;
let home: string;

/** `node --import <hook that refuses tsx> <app>/engine/bin/mars-lab.mjs …`: exit code and output. */
async function builtCli(
  args: string[],
  env: NodeJS.ProcessEnv = {},
): Promise<{ code: number; stdout: string; stderr: string }> {
  const bin = path.join(app, 'engine', 'bin', 'mars-lab.mjs');
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', blockTsx, bin, ...args], {
      maxBuffer: 64 << 20,
      env: { ...process.env, MARS_LAB_DEV: '', ...env },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

beforeAll(async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-cli-build-'));
  app = path.join(dir, 'app');
  home = path.join(dir, 'home');
  fs.mkdirSync(path.join(app, 'engine', 'bin'), { recursive: true });
  for (const name of ['node_modules', 'resources', 'package.json']) {
    fs.symlinkSync(path.join(repo, name), path.join(app, name));
  }
  for (const name of ['mars-lab.mjs', 'builtEntry.mjs']) {
    fs.copyFileSync(path.join(repo, 'engine', 'bin', name), path.join(app, 'engine', 'bin', name));
  }
  // The engine step of `npm run build`, into the packaged-like folder instead of out/ (which other tests may be using).
  await run(
    process.execPath,
    [
      path.join(repo, 'node_modules', 'vite', 'bin', 'vite.js'),
      'build',
      '--config',
      'engine.vite.config.ts',
      '--outDir',
      path.join(app, 'out', 'cli'),
    ],
    {
      cwd: repo,
    },
  );
  blockTsx = path.join(dir, 'blockTsx.mjs');
  const hook =
    "export async function resolve(s, c, next) { if (s === 'tsx' || s.startsWith('tsx/')) throw new Error('tsx was asked for: ' + s); return next(s, c); }";
  fs.writeFileSync(
    blockTsx,
    `import { register } from 'node:module';\nregister('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));\n`,
  );
}, 120_000);

afterAll(() => fs.rmSync(path.dirname(app), { recursive: true, force: true }));

describe('the built CLI', () => {
  it('records the sources it was built from', () => {
    const record = JSON.parse(fs.readFileSync(path.join(app, 'out', 'cli', 'build.json'), 'utf8'));
    expect(record.version).toBe(1);
    expect(record.sources).toEqual(
      expect.arrayContaining(['engine/commands/cli.ts', 'engine/model/llama.ts', 'engine/api/workers/runWorker.ts']),
    );
    expect(record.sources.filter((s: string) => s.includes('node_modules'))).toEqual([]);
  });

  it('the hook bites: starting from sources (MARS_LAB_DEV=1) fails on the tsx import', async () => {
    const r = await builtCli(['presets', '--json'], { MARS_LAB_DEV: '1' });
    expect(r.code).not.toBe(0);
    expect(r.stderr).toMatch(/tsx was asked for: tsx\/esm\/api/);
  });

  it('presets --json runs without the TypeScript loader', async () => {
    const r = await builtCli(['presets', '--json'], { MARS_LAB_DEBUG: '1' });
    expect(r.stderr).toContain(`engine from ${path.join(app, 'out', 'cli', 'index.js')}`);
    expect(r.code).toBe(0);
    const names = (JSON.parse(r.stdout) as { name: string }[]).map((p) => p.name);
    expect(names).toContain('seqgrpo-copy');
  });

  it('a tiny train runs to its end and writes its run folder, without the TypeScript loader', async () => {
    const r = await builtCli([
      'train',
      '--preset',
      'seqgrpo-copy',
      '--steps',
      '2',
      '--set',
      'eval.every=0',
      '--set',
      'checkpoint.every=2',
      '--backend',
      'cpu',
      '--home',
      home,
      '--json',
    ]);
    expect(r.stderr).not.toMatch(/tsx/);
    expect(r.code).toBe(0);
    const runs = fs.readdirSync(path.join(home, 'runs'));
    expect(runs).toHaveLength(1);
    const metrics = fs
      .readFileSync(path.join(home, 'runs', runs[0]!, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n');
    expect(metrics.map((l) => (JSON.parse(l) as { step: number }).step)).toContain(2);
    // The checkpoint's tokenizer is named for what it is (not Hugging Face's tokenizer.json).
    const checkpoint = fs
      .readdirSync(path.join(home, 'runs', runs[0]!, 'checkpoints'))
      .map((c) => path.join(home, 'runs', runs[0]!, 'checkpoints', c));
    expect(checkpoint.length).toBeGreaterThan(0);
    expect(fs.readdirSync(checkpoint[0]!)).toEqual(
      expect.arrayContaining(['config.json', 'model.safetensors', 'mars-lab-tokenizer.json']),
    );
    expect(fs.readdirSync(checkpoint[0]!)).not.toContain('tokenizer.json');
  }, 120_000);
});
