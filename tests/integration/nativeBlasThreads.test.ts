/**
 * `--blas-threads N` on train and resume, the run config's blasThreads and `doctor` (issue 16), run as a user runs
 * them: the count reaches OpenBLAS and run.json's backend record says how many and from where.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli';
import { quickConfig } from '../helpers/runFixtures';
import { built, nativeMissing } from '../unit/native/nativeHelpers';

let home: string;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-blas-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

const env = { MARS_LAB_BLAS_THREADS: '', MARS_LAB_WORKER_SLOTS: '' };

/** Trains a 1-step run from a config file; returns run.json's backend.native. */
async function train(config: object, ...flags: string[]): Promise<Record<string, unknown>> {
  const file = path.join(home, `config-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(file, JSON.stringify(config));
  const { code, stdout, stderr } = await cli(
    ['train', '--config', file, '--home', home, '--steps', '1', '--json', ...flags],
    env,
  );
  expect(code, stderr).toBe(0);
  const done = JSON.parse(stdout.trim().split('\n').at(-1)!) as { dir: string };
  return (
    JSON.parse(fs.readFileSync(path.join(done.dir, 'run.json'), 'utf8')) as {
      backend: { native: Record<string, unknown> };
    }
  ).backend.native;
}

describe('BLAS threads from the command line', () => {
  it('train alone, with --worker-slots, --blas-threads 2 and a config with blasThreads 3: run.json records the count OpenBLAS took, and where from', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    if (built.loaded!.info.built !== 'openblas') {
      ctx.skip('the addon was built with the own kernel, which has one thread');
    }
    const config = { ...quickConfig({ checkpointEvery: 1, evalEvery: 0 }) };
    // Unset, a run alone takes every core, and one of N worker slots its share (issue 28).
    const cores = os.availableParallelism();
    expect(await train(config)).toMatchObject({
      kernel: 'openblas',
      threads: cores,
      threadsFrom: 'default',
      adam: true,
    });
    expect(await train(config, '--worker-slots', String(cores))).toMatchObject({ threads: 1, threadsFrom: 'default' });
    expect(await train(config, '--blas-threads', '2')).toMatchObject({
      kernel: 'openblas',
      threads: 2,
      threadsFrom: 'flag',
    });
    expect(await train({ ...config, blasThreads: 3 })).toMatchObject({ threads: 3, threadsFrom: 'config' });
  }, 120_000);

  it('doctor --blas-threads 2 prints the count; a bad count is a usage error', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    if (built.loaded!.info.built !== 'openblas') {
      ctx.skip('the addon was built with the own kernel, which has one thread');
    }
    const ok = await cli(['doctor', '--backend', 'wasm', '--blas-threads', '2'], env);
    expect(ok.code).toBe(0);
    expect(ok.stdout).toMatch(/^BLAS threads: 2 \(--blas-threads\)$/m);
    const cores = os.availableParallelism();
    const alone = await cli(['doctor', '--backend', 'wasm'], env);
    expect(alone.stdout).toMatch(
      new RegExp(`^BLAS threads: ${cores} \\(the default: every core of ${cores} for a run alone`, 'm'),
    );
    expect(ok.stdout).toMatch(/^optimiser \(Adam\): native/m);
    expect(ok.stdout).toMatch(/^transformer ops \(RMSNorm, SwiGLU, RoPE, log-softmax, gathers\): native — /m);
    const off = await cli(['doctor', '--backend', 'wasm'], { ...env, MARS_LAB_NATIVE_FUSED: '0' });
    expect(off.stdout).toMatch(
      /^transformer ops \(RMSNorm, SwiGLU, RoPE, log-softmax, gathers\): tensor ops — .*MARS_LAB_NATIVE_FUSED/m,
    );
    const bad = await cli(['train', '--preset', 'seqgrpo-copy', '--blas-threads', '0', '--home', home], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/--blas-threads.*whole number from 1 to 256/);
  }, 60_000);
});
