/**
 * Shared by the native-kernel tests (issue 16): whether the addon is built here (and why not, for a skipped test's
 * note), switching the wasm backend between its stock and the native matrix products inside one process, and
 * comparisons within float tolerance.
 */
import { expect } from 'vitest';
import { loadAddon, type LoadedAddon } from '../../../engine/tensor/native/addon';
import {
  registerNativeKernels,
  unregisterNativeKernels,
  nativeKernelsRegistered,
} from '../../../engine/tensor/native/kernels';
import { tf } from '../../../engine/tensor/backend';

/** The addon of native/build (MARS_LAB_NATIVE_PATH, when set, names another), loaded while the file is collected. */
export const built = loadAddon({ MARS_LAB_NATIVE_PATH: process.env.MARS_LAB_NATIVE_PATH });

/**
 * Why a native test cannot run here, or '' when it can. With MARS_LAB_EXPECT_NATIVE set (CI installs OpenBLAS and
 * sets it to openblas), a missing addon is a failure, not a skip; =openblas also fails an own-kernel build.
 */
export function nativeMissing(): string {
  const expected = process.env.MARS_LAB_EXPECT_NATIVE;
  if (expected === 'openblas' && built.loaded && built.loaded.info.built !== 'openblas') {
    throw new Error(
      `MARS_LAB_EXPECT_NATIVE=openblas but the addon was built with the ${built.loaded.info.built} kernel (build.json says why)`,
    );
  }
  if (built.loaded) return '';
  if (expected) throw new Error(`MARS_LAB_EXPECT_NATIVE is set but the native addon is missing: ${built.reason}`);
  return `native addon not built: ${built.reason}`;
}

export function addon(): LoadedAddon {
  if (!built.loaded) throw new Error(built.reason);
  return built.loaded;
}

/** The kernels this build can run: OpenBLAS (when linked) and always the own kernel. */
export function buildKernels(): ('openblas' | 'own')[] {
  return built.loaded?.info.built === 'openblas' ? ['openblas', 'own'] : ['own'];
}

/** Matrix products on wasm go to the native kernel `kernel`, or to the stock wasm kernels with null. */
export function useProducts(kernel: 'openblas' | 'own' | null): void {
  if (kernel === null) {
    unregisterNativeKernels();
    expect(nativeKernelsRegistered()).toBe(false);
    return;
  }
  const { addon: a } = addon();
  a.setKernel(kernel);
  registerNativeKernels(a);
  expect(nativeKernelsRegistered()).toBe(true);
  expect((a.info() as { kernel: string }).kernel).toBe(kernel);
}

/** Largest |a−b| / (1 + |b|) over two arrays of equal length. */
export function maxRelDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) {
    const d = Math.abs(a[i]! - b[i]!) / (1 + Math.abs(b[i]!));
    if (!(d <= worst)) worst = d; // NaN sticks
  }
  return worst;
}

/** Values of a tensor as a plain Float32Array (and the tensor disposed). */
export async function take(t: tf.Tensor): Promise<Float32Array> {
  const v = (await t.data()) as Float32Array;
  t.dispose();
  return v;
}
