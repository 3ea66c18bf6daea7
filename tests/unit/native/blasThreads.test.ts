/**
 * BLAS threads of the native matrix products (issue 16): by default a process's share of the cores (issue 28: all of
 * them alone, cores / MARS_LAB_WORKER_SLOTS beside others); the run config's blasThreads, MARS_LAB_BLAS_THREADS and a
 * --blas-threads flag set it, in that order of precedence; the count reaches OpenBLAS
 * (read back through the addon's getter, openblas_get_num_threads) and the backend report (doctor, run.json) says
 * how many and from where. The CLI end (train/resume records it in run.json) is tests/integration/nativeBlasThreads.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blasThreadsFor } from '../../../engine/commands/options';
import { defaultBlasThreads } from '../../../engine/tensor/native/addon';
import { configureNativeKernels } from '../../../engine/tensor/native/status';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { backendReport, initBackend } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';
import { addon, built, nativeMissing } from './nativeHelpers';

/** What OpenBLAS itself says its thread count is. */
const openblasThreads = () => (addon().addon.info() as { threads: number }).threads;

const saved = process.env.MARS_LAB_BLAS_THREADS;
beforeAll(async () => {
  delete process.env.MARS_LAB_BLAS_THREADS;
  await useBackend('wasm');
});
afterAll(() => {
  if (saved === undefined) delete process.env.MARS_LAB_BLAS_THREADS;
  else process.env.MARS_LAB_BLAS_THREADS = saved;
  configureNativeKernels('wasm');
});

/** The child process's findings for an environment (undefined removes a variable). */
function threadBits(env: Record<string, string | undefined>): {
  core: string | null;
  coreFrom: string | null;
  products: { shape: string; elements: number; differ: number }[];
} {
  const childEnv: NodeJS.ProcessEnv = { ...process.env };
  for (const [k, v] of Object.entries(env)) {
    if (v === undefined) delete childEnv[k];
    else childEnv[k] = v;
  }
  const r = spawnSync(path.resolve('node_modules/.bin/tsx'), [path.resolve('tests/unit/native/threadBits.ts')], {
    env: childEnv,
    encoding: 'utf8',
    timeout: 100_000,
  });
  if (r.status !== 0) throw new Error(`threadBits.ts failed: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
  return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as ReturnType<typeof threadBits>;
}

describe('BLAS threads', () => {
  it('the default is the share of the cores: all of them alone, cores / worker slots beside others', () => {
    expect(defaultBlasThreads({}, 16)).toEqual({ threads: 16, cores: 16, slots: 1 });
    expect(defaultBlasThreads({ MARS_LAB_WORKER_SLOTS: '' }, 16).threads).toBe(16);
    expect(defaultBlasThreads({ MARS_LAB_WORKER_SLOTS: '4' }, 16).threads).toBe(4);
    expect(defaultBlasThreads({ MARS_LAB_WORKER_SLOTS: '3' }, 16).threads).toBe(5);
    expect(defaultBlasThreads({ MARS_LAB_WORKER_SLOTS: '32' }, 16).threads).toBe(1);
    expect(() => defaultBlasThreads({ MARS_LAB_WORKER_SLOTS: 'two' }, 16)).toThrow(/MARS_LAB_WORKER_SLOTS/);
    expect(() => defaultBlasThreads({ MARS_LAB_WORKER_SLOTS: '0' }, 16)).toThrow(/MARS_LAB_WORKER_SLOTS/);
  });

  it('the run config has blasThreads (unset by default, a whole number from 1 to 256)', () => {
    expect(parseRunConfig({ algorithm: 'seqgrpo' }).blasThreads).toBeUndefined();
    expect(parseRunConfig({ algorithm: 'seqgrpo', blasThreads: 2 }).blasThreads).toBe(2);
    expect(() => parseRunConfig({ algorithm: 'seqgrpo', blasThreads: 0 })).toThrow(/blasThreads/);
    expect(() => parseRunConfig({ algorithm: 'seqgrpo', blasThreads: 1.5 })).toThrow(/blasThreads/);
    expect(blasThreadsFor(undefined, { blasThreads: 2 })).toEqual({ threads: 2, from: 'config' });
    expect(blasThreadsFor(3, { blasThreads: 2 })).toEqual({ threads: 3, from: 'flag' });
    expect(blasThreadsFor(undefined)).toBeUndefined();
  });

  it('reach openblas_set_num_threads: the default share, config, environment over config, flag over both', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    if (built.loaded!.info.built !== 'openblas') {
      ctx.skip('the addon was built with the own kernel, which has one thread');
    }
    const at = (opts: Parameters<typeof configureNativeKernels>[1]) => {
      const r = configureNativeKernels('wasm', opts);
      return { reported: r.threads, from: r.threadsFrom, openblas: openblasThreads() };
    };
    const share = defaultBlasThreads().threads;
    expect(at({})).toEqual({ reported: share, from: 'default', openblas: share });
    expect(at({ blasThreads: { threads: 2, from: 'config' } })).toEqual({ reported: 2, from: 'config', openblas: 2 });
    process.env.MARS_LAB_BLAS_THREADS = '3';
    try {
      expect(at({ blasThreads: { threads: 2, from: 'config' } })).toEqual({
        reported: 3,
        from: 'environment',
        openblas: 3,
      });
      expect(at({ blasThreads: { threads: 4, from: 'flag' } })).toEqual({ reported: 4, from: 'flag', openblas: 4 });
    } finally {
      delete process.env.MARS_LAB_BLAS_THREADS;
    }
    expect(at({})).toEqual({ reported: share, from: 'default', openblas: share });
  });

  it('initBackend sets them again for a backend already chosen, and its report (run.json, doctor) follows', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    if (built.loaded!.info.built !== 'openblas') {
      ctx.skip('the addon was built with the own kernel, which has one thread');
    }
    await initBackend({ force: 'wasm', blasThreads: { threads: 2, from: 'flag' } });
    expect(openblasThreads()).toBe(2);
    expect(backendReport()!.native).toMatchObject({ kernel: 'openblas', threads: 2, threadsFrom: 'flag', adam: true });
    await initBackend({ force: 'wasm', blasThreads: { threads: 1, from: 'config' } });
    expect(openblasThreads()).toBe(1);
    expect(backendReport()!.native).toMatchObject({ threads: 1, threadsFrom: 'config' });
  });

  it('a product gives the same bits at 1 and 2 threads, small or large, at the core mars-lab chooses (a run does not depend on the core count)', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    if (built.loaded!.info.built !== 'openblas') {
      ctx.skip('the addon was built with the own kernel, which has one thread');
    }
    // OpenBLAS reads OPENBLAS_CORETYPE once, at load: each core is checked in a process of its own
    // (tests/unit/native/threadBits.ts). Without the variable, the core is OpenBLAS's detection or mars-lab's choice
    // over a generic fallback (coreType.ts): what mars-lab itself runs, which must not depend on the thread count.
    const own = threadBits({ OPENBLAS_CORETYPE: undefined });
    for (const p of own.products) expect(p.differ, `${p.shape} at core ${own.core} (${own.coreFrom})`).toBe(0);
    // A core the user forces is the user's: on an AVX-512 AMD Zen 5 with OPENBLAS_CORETYPE=Haswell (what this
    // project's machines set) about 5 % of a large product's elements differ in their last bits at 2 threads
    // (docs/results/kernel-audit.md). Said, not failed.
    if (process.env.OPENBLAS_CORETYPE !== undefined) {
      const forced = threadBits({});
      const differ = forced.products.filter((p) => p.differ > 0);
      await ctx.annotate(
        `OPENBLAS_CORETYPE=${process.env.OPENBLAS_CORETYPE} (core ${forced.core}): ` +
          (differ.length ? differ.map((p) => `${p.shape} ${p.differ}/${p.elements} differ`).join(', ') : 'same bits'),
      );
    }
  }, 120_000);
});
