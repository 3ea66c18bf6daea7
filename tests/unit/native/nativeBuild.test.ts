/**
 * Building and choosing the native kernels (issue 16): the install-time build never fails and says what it skipped
 * (no compiler: nothing; no OpenBLAS: the own kernel), the own-kernel fallback builds and multiplies correctly as its own
 * addon, and MARS_LAB_NATIVE / MARS_LAB_BLAS_THREADS choose the path reported to `doctor` and run.json.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { blasThreads, loadAddon, nativeRequest, type NativeAddon } from '../../../engine/tensor/native/addon';
import { nativeKernelsRegistered } from '../../../engine/tensor/native/kernels';
import { configureNativeKernels, resetAddonLoad } from '../../../engine/tensor/native/status';
import { tf } from '../../../engine/tensor/backend';
import { UserError } from '../../../engine/base/userError';
import { useBackend } from '../../helpers/backends';
import { built, maxRelDiff, nativeMissing, take } from './nativeHelpers';

const SCRIPT = path.resolve('scripts/buildNative.mjs');
const exec = promisify(execFile);

async function build(
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; record: { kernel: string; reasons: string[] } }> {
  let code = 0;
  let stdout: string;
  try {
    stdout = (await exec(process.execPath, [SCRIPT, ...args], { env: { ...process.env, ...env }, timeout: 120_000 }))
      .stdout;
  } catch (err) {
    const e = err as { code: number; stdout: string };
    code = e.code;
    stdout = e.stdout;
  }
  const out = args[args.indexOf('--out') + 1]!;
  return { code, stdout, record: JSON.parse(fs.readFileSync(path.join(out, 'build.json'), 'utf8')) };
}

const compiler = spawnSync(process.env.CC || 'cc', ['--version']);
const noCompiler = compiler.status === 0 ? '' : `no C compiler here ('${process.env.CC || 'cc'} --version' failed)`;

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-native-build-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('the install-time build', () => {
  it('without a compiler (CC=false) it exits 0, builds nothing, removes a stale addon and says why', async () => {
    const out = path.join(dir, 'nocc');
    fs.mkdirSync(out);
    fs.writeFileSync(path.join(out, 'mars_native.node'), 'stale');
    const r = await build(['--out', out], { CC: 'false' });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/skipped.*no C compiler: 'false --version' failed/);
    expect(r.record).toMatchObject({ kernel: 'none' });
    expect(fs.existsSync(path.join(out, 'mars_native.node'))).toBe(false);
    // What the engine then reports (doctor, run.json): the build's reason.
    const load = loadAddon({ MARS_LAB_NATIVE_PATH: path.join(out, 'mars_native.node') });
    expect(load.loaded).toBeNull();
    expect(load.reason).toMatch(/not built at install: no C compiler/);
  });

  it('without OpenBLAS it builds the own kernel and says OpenBLAS was not found', async (ctx) => {
    if (noCompiler) ctx.skip(noCompiler);
    const out = path.join(dir, 'noblas');
    const r = await build(['--out', out], { MARS_LAB_OPENBLAS_DIRS: path.join(dir, 'no-such-prefix') });
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/built with the own kernel.*OpenBLAS not found/);
    expect(r.record.kernel).toBe('own');
    const load = loadAddon({ MARS_LAB_NATIVE_PATH: path.join(out, 'mars_native.node') });
    expect(load.loaded?.info).toMatchObject({ built: 'own', kernel: 'own' });
  });

  it('--strict fails when nothing could be built (for CI), where the postinstall does not', async () => {
    const out = path.join(dir, 'strict');
    expect((await build(['--out', out, '--strict'], { CC: 'false' })).code).toBe(1);
    expect((await build(['--out', out, '--postinstall'], { CC: 'false' })).code).toBe(0);
  });
});

describe('the own-kernel fallback, built as its own addon', () => {
  let own: NativeAddon | null = null;
  beforeAll(async () => {
    if (noCompiler) return;
    const out = path.join(dir, 'own');
    const r = await build(['--out', out, '--kernel', 'own', '--strict'], {});
    expect(r.code).toBe(0);
    own = loadAddon({ MARS_LAB_NATIVE_PATH: path.join(out, 'mars_native.node') }).loaded?.addon ?? null;
  });

  it('multiplies every transpose pair and broadcast batch right, sizes past every blocking', (ctx) => {
    if (noCompiler) ctx.skip(noCompiler);
    expect(own).not.toBeNull();
    expect(() => own!.setKernel('openblas')).toThrow(/no such kernel/);
    let seed = 1;
    const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) * 2 - 1;
    for (const [m, n, k] of [
      [1, 1, 1],
      [7, 33, 5],
      [131, 17, 300],
      [6, 16, 256],
      [5, 3100, 9],
      [0, 4, 3],
      [3, 4, 0],
    ] as const) {
      for (const ta of [false, true]) {
        for (const tb of [false, true]) {
          // two batches of A against one B (broadcast: B's stride 0)
          const heap = new ArrayBuffer(4 * (2 * m * k + k * n + 2 * m * n) + 32);
          const f = new Float32Array(heap);
          const aOff = 32;
          const bOff = aOff + 8 * m * k;
          const cOff = bOff + 4 * k * n;
          for (let i = 8; i < cOff >> 2; i++) f[i] = rand();
          f.fill(NaN, cOff >> 2); // the product must overwrite, not add to, whatever the output held
          own!.gemm(heap, aOff, bOff, cOff, m, n, k, ta, tb, Int32Array.from([2, 1, 0]), -1, 0, 0, 0, -1, 0);
          const A = (b: number, i: number, p: number) => f[(aOff >> 2) + b * m * k + (ta ? p * m + i : i * k + p)]!;
          const B = (p: number, j: number) => f[(bOff >> 2) + (tb ? j * k + p : p * n + j)]!;
          const want: number[] = [];
          for (let b = 0; b < 2; b++) {
            for (let i = 0; i < m; i++) {
              for (let j = 0; j < n; j++) {
                let s = 0;
                for (let p = 0; p < k; p++) s += A(b, i, p) * B(p, j);
                want.push(s);
              }
            }
          }
          expect(
            maxRelDiff(f.subarray(cOff >> 2, (cOff >> 2) + 2 * m * n), want),
            `${m}×${n}×${k} ${ta} ${tb}`,
          ).toBeLessThan(1e-5);
        }
      }
    }
  });

  it('refuses operands outside the heap instead of reading past it', (ctx) => {
    if (noCompiler) ctx.skip(noCompiler);
    const heap = new ArrayBuffer(64);
    expect(() => own!.gemm(heap, 0, 0, 32, 4, 4, 4, false, false, null, -1, 0, 0, 0, -1, 0)).toThrow(
      /outside the heap/,
    );
    expect(() =>
      own!.gemm(heap, 0, 0, 0, 2, 2, 2, false, false, Int32Array.from([5, 1, 1]), -1, 0, 0, 0, -1, 0),
    ).toThrow(/outside the heap/);
  });
});

describe('choosing the path: MARS_LAB_NATIVE, MARS_LAB_BLAS_THREADS, the backend', () => {
  const saved = { ...process.env };
  afterAll(async () => {
    for (const k of ['MARS_LAB_NATIVE', 'MARS_LAB_BLAS_THREADS', 'MARS_LAB_NATIVE_PATH']) {
      if (saved[k] === undefined) delete process.env[k];
      else process.env[k] = saved[k];
    }
    resetAddonLoad();
    configureNativeKernels('wasm');
  });

  it('parses its environment variables with one-line errors', () => {
    expect(nativeRequest({})).toBe('auto');
    expect(nativeRequest({ MARS_LAB_NATIVE: '0' })).toBe('off');
    expect(nativeRequest({ MARS_LAB_NATIVE: 'own' })).toBe('own');
    expect(() => nativeRequest({ MARS_LAB_NATIVE: 'fast' })).toThrow(UserError);
    // Unset: the share of the cores (all of them alone, one each when as many slots as cores share them).
    expect(blasThreads({})).toBe(os.availableParallelism());
    expect(blasThreads({ MARS_LAB_WORKER_SLOTS: String(os.availableParallelism()) })).toBe(1);
    expect(blasThreads({ MARS_LAB_BLAS_THREADS: '2' })).toBe(2);
    expect(() => blasThreads({ MARS_LAB_BLAS_THREADS: 'two' })).toThrow(
      /MARS_LAB_BLAS_THREADS: 'two' is not a whole number/,
    );
    expect(() => blasThreads({ MARS_LAB_BLAS_THREADS: '0' })).toThrow(UserError);
  });

  it('MARS_LAB_NATIVE=0 puts the stock kernels back; own and the BLAS thread count are reported', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    await useBackend('wasm');
    process.env.MARS_LAB_NATIVE = '0';
    expect(configureNativeKernels('wasm')).toMatchObject({
      kernel: 'none',
      active: false,
      detail: expect.stringMatching(/MARS_LAB_NATIVE=0/),
    });
    expect(nativeKernelsRegistered()).toBe(false);
    process.env.MARS_LAB_NATIVE = 'own';
    expect(configureNativeKernels('wasm')).toMatchObject({ kernel: 'own', active: true, threads: 1 });
    expect(nativeKernelsRegistered()).toBe(true);
    delete process.env.MARS_LAB_NATIVE;
    process.env.MARS_LAB_BLAS_THREADS = '2';
    const r = configureNativeKernels('wasm');
    expect(r.kernel).toBe(built.loaded!.info.built);
    if (r.kernel === 'openblas') {
      expect(r).toMatchObject({ threads: 2, core: expect.any(String) });
      expect(r.detail).toMatch(/OpenBLAS \(core \S+/);
    }
    delete process.env.MARS_LAB_BLAS_THREADS;
    expect(configureNativeKernels('wasm').threads).toBe(1);
    // another backend: the wasm registration is dropped and the report says why
    expect(configureNativeKernels('cpu')).toMatchObject({
      kernel: 'none',
      active: false,
      detail: expect.stringMatching(/wasm backend only; this process uses cpu/),
    });
    expect(nativeKernelsRegistered()).toBe(false);
    configureNativeKernels('wasm');
    expect(nativeKernelsRegistered()).toBe(true);
    const product = await take(tf.matMul(tf.tensor2d([1, 2], [1, 2]), tf.tensor2d([3, 4], [2, 1])));
    expect(Array.from(product)).toEqual([11]);
  });
});
