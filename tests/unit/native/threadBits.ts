/**
 * The child process of blasThreads.test.ts's thread-count check: loads the native kernels as this process's
 * environment has them (OpenBLAS reads OPENBLAS_CORETYPE once, at load, so another core needs another process),
 * computes each product at 1 and then 2 BLAS threads and prints one JSON line: the core in effect and, per product,
 * how many of its elements differ in any bit.
 *
 *     npx tsx tests/unit/native/threadBits.ts
 */
import { backendReport, tf } from '../../../engine/tensor/backend';
import { configureNativeKernels } from '../../../engine/tensor/native/status';
import { useBackend } from '../../helpers/backends';

/** Small products run on one thread whatever the count (native/mars_gemm.c); the large ones are split between two. */
export const PRODUCTS = [
  [16, 128, 344],
  [1024, 384, 1024],
  [1024, 64, 1024],
] as const;

await useBackend('wasm');
const products = PRODUCTS.map(([m, k, n]) => {
  const a = tf.randomNormal([m, k], 0, 1, 'float32', 7);
  const b = tf.randomNormal([k, n], 0, 1, 'float32', 8);
  const at = (threads: number) => {
    configureNativeKernels('wasm', { blasThreads: { threads, from: 'flag' } });
    return tf.tidy(() => tf.matMul(a, b).dataSync().slice());
  };
  const one = at(1);
  const two = at(2);
  let differ = 0;
  for (let i = 0; i < one.length; i++) if (!Object.is(one[i], two[i])) differ++;
  tf.dispose([a, b]);
  return { shape: `${m}×${k}×${n}`, elements: one.length, differ };
});
const native = backendReport()!.native;
console.log(
  JSON.stringify({ kernel: native.kernel, core: native.core ?? null, coreFrom: native.coreFrom ?? null, products }),
);
