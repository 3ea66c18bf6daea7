/**
 * The native matrix products (issue 16) against the cpu backend: every kernel this build has (OpenBLAS and the own
 * blocked kernel), ranks 2–4, all four transpose pairs, broadcast batch dimensions (one side 1 or missing, and both
 * sides broadcasting at once), sizes that are multiples of none of the blockings (6×16 tiles, 120/256/3072 blocks),
 * empty products, the fused bias + activation kernel, a wasm heap that grows between products, and no tensors leaked.
 * The reference broadcasts explicitly (tf.broadcastTo), since the cpu backend's own batch indexing is modular.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { nativeProductCount, planProduct } from '../../../engine/tensor/native/kernels';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';
import { buildKernels, maxRelDiff, nativeMissing, take, useProducts } from './nativeHelpers';

interface Case {
  a: number[];
  b: number[];
  ta: boolean;
  tb: boolean;
}

const SIZES = [1, 5, 7, 13, 17, 33, 70, 131, 259];

/** Random cases: operand shapes with their batch dims, transposes applied to the stored layout. */
function cases(seed: number, count: number): Case[] {
  const rng = new Rng(seed);
  const pick = <T>(xs: T[]) => xs[rng.int(xs.length)]!;
  const out: Case[] = [];
  const batchPairs: [number[], number[]][] = [
    [[], []],
    [[3], [3]],
    [[4], [1]],
    [[1], [2]],
    [[3], []],
    [[], [2]],
    [
      [2, 3],
      [2, 3],
    ],
    [
      [2, 3],
      [1, 3],
    ],
    [
      [2, 1],
      [1, 3],
    ],
    [
      [1, 3],
      [2, 1],
    ],
    [[2, 3], [3]],
    [[3], [2, 1]],
  ];
  for (let i = 0; i < count; i++) {
    const [ba, bb] = batchPairs[i % batchPairs.length]!;
    // Large sizes only for unbatched products, to keep the cpu reference quick.
    const sizes = ba.length + bb.length === 0 ? SIZES : SIZES.slice(0, 6);
    const [m, n, k] = [pick(sizes), pick(sizes), pick(sizes)];
    const ta = rng.int(2) === 1;
    const tb = rng.int(2) === 1;
    out.push({ a: [...ba, ...(ta ? [k, m] : [m, k])], b: [...bb, ...(tb ? [n, k] : [k, n])], ta, tb });
  }
  // Every transpose pair on sizes past each blocking (MC 120, KC 256, 6×16 edges), and an empty inner dimension.
  for (const ta of [false, true]) {
    for (const tb of [false, true]) {
      out.push({ a: ta ? [259, 131] : [131, 259], b: tb ? [37, 259] : [259, 37], ta, tb });
      out.push({ a: [2, ...(ta ? [0, 7] : [7, 0])], b: [2, ...(tb ? [5, 0] : [0, 5])], ta, tb });
    }
  }
  return out;
}

function randomValues(rng: Rng, shape: number[]): Float32Array {
  const size = shape.reduce((a, b) => a * b, 1);
  const v = new Float32Array(size);
  for (let i = 0; i < size; i++) v[i] = rng.normal();
  return v;
}

/** op(a)·op(b) with batch dims broadcast explicitly first. */
function reference(a: tf.Tensor, b: tf.Tensor, ta: boolean, tb: boolean): tf.Tensor {
  return tf.tidy(() => {
    const plan = planProduct(a.shape, b.shape, ta, tb);
    const batch = plan.outShape.slice(0, -2);
    const aFull = tf.broadcastTo(a, [...batch, ...a.shape.slice(-2)]);
    const bFull = tf.broadcastTo(b, [...batch, ...b.shape.slice(-2)]);
    return tf.matMul(aFull, bFull, ta, tb);
  });
}

describe('planProduct', () => {
  it('gives the output shape and per-dimension strides, broadcast dims at stride 0, contiguous dims merged', () => {
    const p = planProduct([2, 3, 4, 5], [2, 3, 5, 6], false, false);
    expect(p).toMatchObject({ m: 4, n: 6, k: 5, outShape: [2, 3, 4, 6] });
    expect([...p.batch!]).toEqual([6, 1, 1]);
    const q = planProduct([2, 1, 4, 5], [1, 3, 6, 4], true, true);
    expect(q).toMatchObject({ m: 5, n: 6, k: 4, outShape: [2, 3, 5, 6] });
    expect([...q.batch!]).toEqual([2, 1, 0, 3, 0, 1]);
    expect(planProduct([7, 5], [3, 5, 2], false, false).batch).not.toBeNull();
    expect([...planProduct([7, 5], [3, 5, 2], false, false).batch!]).toEqual([3, 0, 1]);
    expect(planProduct([1, 7, 5], [5, 2], false, false)).toMatchObject({ outShape: [1, 7, 2], batch: null });
  });

  it('refuses mismatched inner sizes and batch dims that do not broadcast', () => {
    expect(() => planProduct([3, 4], [5, 6], false, false)).toThrow(/inner shapes \(4\) and \(5\)/);
    expect(() => planProduct([2, 3, 4], [3, 4, 5], false, false)).toThrow(/broadcast/);
  });
});

describe('native matMul kernels against the cpu backend', () => {
  const all = cases(2026, 48);
  const expected: Float32Array[] = [];
  const inputs: { a: Float32Array; b: Float32Array }[] = [];

  beforeAll(async () => {
    if (nativeMissing()) return;
    await useBackend('cpu');
    const rng = new Rng(7);
    for (const c of all) {
      const a = randomValues(rng, c.a);
      const b = randomValues(rng, c.b);
      inputs.push({ a, b });
      const ta = tf.tensor(a, c.a);
      const tb = tf.tensor(b, c.b);
      expected.push(await take(reference(ta, tb, c.ta, c.tb)));
      ta.dispose();
      tb.dispose();
    }
    await useBackend('wasm');
  }, 300_000);

  afterAll(() => useProducts(null));

  it.for(buildKernels())(
    '%s: every case within float tolerance, through the native kernel, leaking nothing',
    async (kernel, ctx) => {
      const missing = nativeMissing();
      if (missing) ctx.skip(missing);
      await useBackend('wasm');
      useProducts(kernel);
      const before = tf.memory();
      const calls = nativeProductCount();
      for (let i = 0; i < all.length; i++) {
        const c = all[i]!;
        const got = await take(
          tf.tidy(() => tf.matMul(tf.tensor(inputs[i]!.a, c.a), tf.tensor(inputs[i]!.b, c.b), c.ta, c.tb)),
        );
        const shape = planProduct(c.a, c.b, c.ta, c.tb).outShape;
        expect(got.length, `case ${JSON.stringify(c)}`).toBe(shape.reduce((x, y) => x * y, 1));
        // float32 sums of up to 259 products of unit normals, in another order: ~1e-6 relative each
        expect(maxRelDiff(got, expected[i]!), `case ${JSON.stringify(c)}`).toBeLessThan(2e-5);
      }
      expect(nativeProductCount() - calls).toBe(all.length);
      const after = tf.memory();
      expect(after.numTensors).toBe(before.numTensors);
      expect(after.numBytes).toBe(before.numBytes);
    },
  );

  it.for(buildKernels())('%s: fused bias + activation (PReLU included) equals the cpu backend', async (kernel, ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    const rng = new Rng(99);
    const acts = ['linear', 'relu', 'relu6', 'sigmoid', 'leakyrelu', 'elu', 'prelu'] as const;
    const runs: {
      act: (typeof acts)[number];
      a: Float32Array;
      b: Float32Array;
      bias: Float32Array;
      ta: boolean;
      tb: boolean;
      biasLen: number;
    }[] = [];
    for (const act of acts) {
      for (const [ta, tb] of [
        [false, false],
        [true, true],
        [false, true],
        [true, false],
      ] as const) {
        const biasLen = act === 'sigmoid' ? 1 : 19; // a single value broadcast, too
        runs.push({
          act,
          a: randomValues(rng, [3, 23, 29]),
          b: randomValues(rng, [3, 29, 19]),
          bias: randomValues(rng, [biasLen]).map((x) => 3 * x),
          ta,
          tb,
          biasLen,
        });
      }
    }
    const fused = (r: (typeof runs)[number]) =>
      tf.tidy(() => {
        const a = tf.tensor(r.a, r.ta ? [3, 29, 23] : [3, 23, 29]);
        const b = tf.tensor(r.b, r.tb ? [3, 19, 29] : [3, 29, 19]);
        return tf.fused.matMul({
          a: a,
          b: b,
          transposeA: r.ta,
          transposeB: r.tb,
          bias: tf.tensor1d(r.bias),
          activation: r.act,
          preluActivationWeights: r.act === 'prelu' ? tf.linspace(0.1, 0.5, 19) : undefined,
          leakyreluAlpha: 0.15,
        });
      });
    await useBackend('cpu');
    const want: Float32Array[] = [];
    for (const r of runs) want.push(await take(fused(r)));
    await useBackend('wasm');
    useProducts(kernel);
    const calls = nativeProductCount();
    for (let i = 0; i < runs.length; i++) {
      expect(
        maxRelDiff(await take(fused(runs[i]!)), want[i]!),
        `${runs[i]!.act} ${runs[i]!.ta} ${runs[i]!.tb}`,
      ).toBeLessThan(2e-5);
    }
    expect(nativeProductCount() - calls).toBe(runs.length);
  });

  it.for(buildKernels())(
    '%s: products stay right after the wasm heap grows (its ArrayBuffer is replaced)',
    async (kernel, ctx) => {
      const missing = nativeMissing();
      if (missing) ctx.skip(missing);
      await useBackend('wasm');
      useProducts(kernel);
      const a = tf.tensor2d([1, 2, 3, 4, 5, 6], [2, 3]);
      const b = tf.tensor2d([1, 0, 0, 1, 1, 1], [3, 2]);
      expect(Array.from(await take(tf.matMul(a, b)))).toEqual([4, 5, 10, 11]);
      const heap = (tf.backend() as unknown as { wasm: { HEAPU8: Uint8Array } }).wasm;
      const sizeBefore = heap.HEAPU8.buffer.byteLength;
      const big = tf.zeros([sizeBefore / 4 + 1_000_000]); // more than the whole heap: it must grow
      expect(heap.HEAPU8.buffer.byteLength).toBeGreaterThan(sizeBefore);
      // aᵀ = [[1,4],[2,5],[3,6]] and bᵀ = [[1,0,1],[0,1,1]]: each row (x, y) of aᵀ gives (x, y, x+y).
      expect(Array.from(await take(tf.matMul(a, b, true, true)))).toEqual([1, 4, 5, 2, 5, 7, 3, 6, 9]);
      big.dispose();
      a.dispose();
      b.dispose();
    },
  );
});
