/**
 * BLAS threads of the native matrix products (issue 16): by default a process's share of the cores (issue 28: all of
 * them alone, cores / MARS_LAB_WORKER_SLOTS beside others); the run config's blasThreads, MARS_LAB_BLAS_THREADS and a
 * --blas-threads flag set it, in that order of precedence; the count reaches OpenBLAS
 * (read back through the addon's getter, openblas_get_num_threads) and the backend report (doctor, run.json) says
 * how many and from where. The CLI end (train/resume records it in run.json) is tests/integration/nativeBlasThreads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blasThreadsFor } from '../../../engine/commands/options';
import { defaultBlasThreads } from '../../../engine/tensor/native/addon';
import { configureNativeKernels } from '../../../engine/tensor/native/status';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { backendReport, initBackend, tf } from '../../../engine/tensor/backend';
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

  it('a product gives the same bits at 1 and 2 threads, small or large (a run does not depend on the core count)', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    if (built.loaded!.info.built !== 'openblas') {
      ctx.skip('the addon was built with the own kernel, which has one thread');
    }
    // Small products run on one thread whatever the count (native/mars_gemm.c); the large one is split between two.
    for (const [m, k, n] of [
      [16, 128, 344],
      [1024, 384, 1024],
    ] as const) {
      const a = tf.randomNormal([m, k], 0, 1, 'float32', 7);
      const b = tf.randomNormal([k, n], 0, 1, 'float32', 8);
      const at = (threads: number) => {
        configureNativeKernels('wasm', { blasThreads: { threads, from: 'flag' } });
        return tf.tidy(() => tf.matMul(a, b).dataSync().slice());
      };
      const one = at(1);
      const two = at(2);
      expect(openblasThreads()).toBe(2);
      expect(Buffer.from(two.buffer).equals(Buffer.from(one.buffer)), `${m}×${k}×${n}`).toBe(true);
      tf.dispose([a, b]);
    }
    configureNativeKernels('wasm');
  });
});
