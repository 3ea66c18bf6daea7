/**
 * The transformer's fused native ops (issue 16; engine/tensor/native/fused.ts, native/mars_fused.c) against the stock tensor
 * ops they replace, on the wasm backend in one process: values and gradients (tfjs autodiff of the stock ops as the
 * reference, plus a finite-difference check of each fused gradient) on random shapes including odd sizes, the
 * switches (MARS_LAB_NATIVE_FUSED=0, the native products off), and no tensors left behind.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fusedInactiveReason, fusedKernelCount, fusedOps, type FusedOps } from '../../../engine/tensor/native/fused';
import { configureNativeKernels } from '../../../engine/tensor/native/status';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { oneHotF32 } from '../../../engine/tensor/oneHot';
import { gatherRows, scatterRows } from '../../../engine/tensor/rows';
import { useBackend } from '../../helpers/backends';
import { buildKernels, maxRelDiff, nativeMissing, take, useProducts } from './nativeHelpers';

const saved = process.env.MARS_LAB_NATIVE_FUSED;
beforeAll(async () => {
  delete process.env.MARS_LAB_NATIVE_FUSED;
  await useBackend('wasm');
});
afterAll(() => {
  if (saved === undefined) delete process.env.MARS_LAB_NATIVE_FUSED;
  else process.env.MARS_LAB_NATIVE_FUSED = saved;
  useProducts(null);
});

function random(rng: Rng, shape: number[], scale = 1): tf.Tensor {
  const n = shape.reduce((a, b) => a * b, 1);
  return tf.tensor(
    Float32Array.from({ length: n }, () => rng.normal() * scale),
    shape,
  );
}

/** The stock ops each fused op replaces (what engine/model/llama.ts and logProbs.ts run without the addon). */
const stock = {
  rmsNorm: (x: tf.Tensor, w: tf.Tensor, eps: number) =>
    tf.mul(tf.mul(x, tf.rsqrt(tf.add(tf.mean(tf.mul(x, x), -1, true), eps))), w),
  swiglu: (g: tf.Tensor, u: tf.Tensor) => tf.mul(tf.mul(g, tf.sigmoid(g)), u),
  rope: (x: tf.Tensor4D, cos: tf.Tensor, sin: tf.Tensor, scale: number) => {
    const hd = x.shape[3];
    const half = hd / 2;
    const rotated = tf.concat(
      [tf.neg(tf.slice(x, [0, 0, 0, half], [-1, -1, -1, half])), tf.slice(x, [0, 0, 0, 0], [-1, -1, -1, half])],
      3,
    );
    return tf.mul(tf.add(tf.mul(x, cos), tf.mul(rotated, sin)), scale);
  },
  logSoftmaxPick: (z: tf.Tensor2D, targets: tf.Tensor1D, temperature: number) => {
    const logSm = tf.logSoftmax(temperature === 1 ? z : tf.div(z, temperature));
    return {
      logp: tf.sum(tf.mul(logSm, oneHotF32(targets, z.shape[1])), -1),
      entropy: tf.neg(tf.sum(tf.mul(tf.exp(logSm), logSm), -1)),
    };
  },
};

/**
 * Values and gradients of Σ(f(xs)·weights) with respect to every x, for fused and stock versions of one function:
 * the random weights make every output element's gradient different.
 */
async function compare(
  xs: tf.Tensor[],
  fused: (...xs: tf.Tensor[]) => tf.Tensor,
  reference: (...xs: tf.Tensor[]) => tf.Tensor,
  tol: { value: number; grad: number },
  label: string,
) {
  const rng = new Rng(99);
  const outShape = tf.tidy(() => reference(...xs).shape);
  const weights = random(rng, outShape);
  const run = async (f: (...xs: tf.Tensor[]) => tf.Tensor) => {
    const value = await take(tf.tidy(() => f(...xs)));
    const grads = tf.grads((...args: tf.Tensor[]) => tf.sum(tf.mul(f(...args), weights)))(xs);
    const g: Float32Array[] = [];
    for (const t of grads) g.push(await take(t));
    return { value, g };
  };
  const before = fusedKernelCount();
  const a = await run(fused);
  expect(fusedKernelCount(), `${label}: the fused kernels ran`).toBeGreaterThan(before);
  const b = await run(reference);
  expect(maxRelDiff(a.value, b.value), `${label}: value`).toBeLessThan(tol.value);
  a.g.forEach((g, i) => expect(maxRelDiff(g, b.g[i]!), `${label}: gradient ${i}`).toBeLessThan(tol.grad));
  weights.dispose();
}

/** Central finite differences of Σ(f(x)·w) at a few elements of x against the fused gradient (float64 not available: loose). */
async function finiteDifferences(x: tf.Tensor, f: (x: tf.Tensor) => tf.Tensor, label: string) {
  const rng = new Rng(7);
  const outShape = tf.tidy(() => f(x).shape);
  const w = random(rng, outShape);
  const loss = (t: tf.Tensor) => tf.tidy(() => tf.sum(tf.mul(f(t), w)).dataSync()[0]!);
  const g = await take(tf.grad((t: tf.Tensor) => tf.sum(tf.mul(f(t), w)))(x));
  const base = x.dataSync().slice() as Float32Array;
  const h = 1e-2;
  for (const i of [0, Math.floor(base.length / 2), base.length - 1]) {
    const plus = base.slice();
    plus[i] = base[i]! + h;
    const minus = base.slice();
    minus[i] = base[i]! - h;
    const tp = tf.tensor(plus, x.shape);
    const tm = tf.tensor(minus, x.shape);
    const numeric = (loss(tp) - loss(tm)) / (2 * h);
    tp.dispose();
    tm.dispose();
    expect(Math.abs(numeric - g[i]!) / (1 + Math.abs(numeric)), `${label}: ∂/∂x[${i}]`).toBeLessThan(2e-2);
  }
  w.dispose();
}

describe.each(buildKernels())('fused native ops (products on the %s kernel) against the stock ops', (kernel) => {
  let ops: FusedOps;
  const setUp = (ctx: { skip: (why: string) => void }) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(kernel);
    const f = fusedOps();
    if (!f) throw new Error(`the fused ops are not active: ${fusedInactiveReason()}`);
    ops = f;
  };

  it('RMSNorm: values and gradients of x and the weight, odd sizes', async (ctx) => {
    setUp(ctx);
    const before = tf.memory().numTensors;
    const rng = new Rng(1);
    for (const [rows, d] of [
      [7, 13],
      [1, 1],
      [33, 128],
      [5, 344],
    ] as const) {
      const x = random(rng, [rows, d]);
      const w = random(rng, [d]);
      await compare(
        [x, w],
        (a, b) => ops.rmsNorm(a as tf.Tensor2D, b, 1e-6),
        (a, b) => stock.rmsNorm(a, b, 1e-6),
        { value: 1e-5, grad: 1e-4 },
        `rmsNorm [${rows}, ${d}]`,
      );
      // (At d = 1 the norm is sign(x)·w: a finite difference across 0 would mean nothing.)
      if (d > 1) await finiteDifferences(x, (a) => ops.rmsNorm(a as tf.Tensor2D, w, 1e-6), `rmsNorm [${rows}, ${d}] x`);
      await finiteDifferences(w, (b) => ops.rmsNorm(x as tf.Tensor2D, b, 1e-6), `rmsNorm [${rows}, ${d}] weight`);
      x.dispose();
      w.dispose();
    }
    expect(tf.memory().numTensors).toBe(before);
  });

  it('SwiGLU: values and gradients of gate and up, odd sizes and ranks', async (ctx) => {
    setUp(ctx);
    const before = tf.memory().numTensors;
    const rng = new Rng(2);
    for (const shape of [[5, 17], [3, 4, 5], [1], [64, 344]]) {
      const g = random(rng, shape, 3);
      const u = random(rng, shape);
      await compare(
        [g, u],
        (a, b) => ops.swiglu(a, b),
        (a, b) => stock.swiglu(a, b),
        { value: 1e-6, grad: 1e-5 },
        `swiglu [${shape}]`,
      );
      await finiteDifferences(g, (a) => ops.swiglu(a, u), `swiglu [${shape}] gate`);
      g.dispose();
      u.dispose();
    }
    expect(tf.memory().numTensors).toBe(before);
  });

  it('RoPE: values and the gradient of x, with and without a scale', async (ctx) => {
    setUp(ctx);
    const before = tf.memory().numTensors;
    const rng = new Rng(3);
    for (const [b, n, t, hd, scale] of [
      [2, 3, 5, 6, 1],
      [1, 1, 1, 2, 0.37],
      [3, 4, 7, 32, 1 / Math.sqrt(32)],
    ] as const) {
      const x = random(rng, [b, n, t, hd]) as tf.Tensor4D;
      const angle = random(rng, [b, 1, t, hd / 2]);
      const cos = tf.tidy(() => tf.concat([tf.cos(angle), tf.cos(angle)], 3)) as tf.Tensor4D;
      const sin = tf.tidy(() => tf.concat([tf.sin(angle), tf.sin(angle)], 3)) as tf.Tensor4D;
      await compare(
        [x],
        (a) => ops.rope(a as tf.Tensor4D, cos, sin, scale),
        (a) => stock.rope(a as tf.Tensor4D, cos, sin, scale),
        { value: 1e-6, grad: 1e-6 },
        `rope [${b}, ${n}, ${t}, ${hd}] × ${scale.toFixed(2)}`,
      );
      await finiteDifferences(x, (a) => ops.rope(a as tf.Tensor4D, cos, sin, scale), `rope [${b}, ${n}, ${t}, ${hd}]`);
      tf.dispose([x, angle, cos, sin]);
    }
    expect(tf.memory().numTensors).toBe(before);
  });

  it('log-softmax with the target picked, and the entropy: values and gradients, temperatures, an invalid target', async (ctx) => {
    setUp(ctx);
    const before = tf.memory().numTensors;
    const rng = new Rng(4);
    for (const [rows, v, temperature] of [
      [9, 31, 1],
      [4, 5000, 0.7],
      [1, 2, 1],
      [16, 512, 1.3],
    ] as const) {
      const z = random(rng, [rows, v], 3) as tf.Tensor2D;
      // A target outside [0, V) gives 0 and no gradient, as the stock one-hot (an all-zero row) does.
      const ids = Int32Array.from({ length: rows }, (_, r) => (r === 2 ? v : r === 3 ? -1 : rng.int(v)));
      const targets = tf.tensor1d(ids, 'int32');
      await compare(
        [z],
        (a) => ops.logSoftmaxPick(a as tf.Tensor2D, targets, temperature, false).logp,
        (a) => stock.logSoftmaxPick(a as tf.Tensor2D, targets, temperature).logp,
        { value: 1e-5, grad: 1e-5 },
        `logp [${rows}, ${v}] / ${temperature}`,
      );
      // Both outputs at once, as tokenLogProbs asks with entropy: the gradient flows through both.
      const both = (f: (a: tf.Tensor2D) => { logp: tf.Tensor; entropy?: tf.Tensor }) => (a: tf.Tensor) => {
        const r = f(a as tf.Tensor2D);
        return tf.add(r.logp, tf.mul(r.entropy!, 0.3));
      };
      await compare(
        [z],
        both((a) => ops.logSoftmaxPick(a, targets, temperature, true)),
        both((a) => stock.logSoftmaxPick(a, targets, temperature)),
        { value: 1e-5, grad: 1e-4 },
        `logp + entropy [${rows}, ${v}] / ${temperature}`,
      );
      await finiteDifferences(
        z,
        (a) => ops.logSoftmaxPick(a as tf.Tensor2D, targets, temperature, false).logp,
        `logp [${rows}, ${v}]`,
      );
      tf.dispose([z, targets]);
    }
    expect(tf.memory().numTensors).toBe(before);
  });

  it('a NaN or an infinity in a row of logits gives NaN there, as the stock ops do, and leaves the other rows', async (ctx) => {
    setUp(ctx);
    const before = tf.memory().numTensors;
    const z = tf.tensor2d([1, 2, NaN, 4, 1, 2, 3, 4, Infinity, 0, 1, 2], [3, 4]);
    const targets = tf.tensor1d([0, 1, 2], 'int32');
    const fused = await take(ops.logSoftmaxPick(z, targets, 1, false).logp);
    const reference = await take(tf.tidy(() => stock.logSoftmaxPick(z, targets, 1).logp));
    expect(Number.isNaN(fused[0])).toBe(true);
    expect(Number.isNaN(fused[2])).toBe(Number.isNaN(reference[2]));
    expect(fused[1]).toBeCloseTo(reference[1]!, 5);
    const g = await take(
      tf.grad((x: tf.Tensor) => tf.sum(ops.logSoftmaxPick(x as tf.Tensor2D, targets, 1, false).logp))(z),
    );
    expect(Number.isNaN(g[0])).toBe(true);
    expect(Number.isFinite(g[4])).toBe(true);
    tf.dispose([z, targets]);
    expect(tf.memory().numTensors).toBe(before);
  });

  it('row gather and scatter: values and gradients (duplicate indices summed), ranks 1–3', async (ctx) => {
    setUp(ctx);
    const before = tf.memory().numTensors;
    const rng = new Rng(5);
    for (const shape of [[11, 3], [512, 128], [7], [6, 2, 5]]) {
      const x = random(rng, shape);
      const idx = tf.tensor1d(
        Int32Array.from({ length: 13 }, (_, i) => (i < 2 ? shape[0]! - 1 : rng.int(shape[0]!))),
        'int32',
      );
      await compare(
        [x],
        (a) => ops.gatherRows(a, idx),
        (a) => gatherRows(a, idx),
        { value: 1e-7, grad: 1e-6 },
        `gather [${shape}]`,
      );
      // scatterRows with unique indices (its contract): the first min(rows, 4) rows in reverse order.
      const k = Math.min(shape[0]!, 4);
      const uniq = tf.tensor1d(
        Int32Array.from({ length: k }, (_, i) => shape[0]! - 1 - i),
        'int32',
      );
      const v = random(rng, [k, ...shape.slice(1)]);
      await compare(
        [v],
        (a) => ops.scatterRows(a, uniq, shape[0]! + 2),
        (a) => scatterRows(a, uniq, shape[0]! + 2),
        { value: 1e-7, grad: 1e-7 },
        `scatter [${shape}]`,
      );
      tf.dispose([x, idx, uniq, v]);
    }
    // An index outside the table is an error, not a read outside it.
    const x = tf.zeros([3, 2]);
    const bad = tf.tensor1d([0, 3], 'int32');
    expect(() => ops.gatherRows(x, bad)).toThrow(/outside \[0, 3\)/);
    tf.dispose([x, bad]);
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('when the fused ops run', () => {
  it('only while the native products are active, and not with MARS_LAB_NATIVE_FUSED=0', (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(buildKernels()[0]!);
    expect(fusedOps()).not.toBeNull();
    process.env.MARS_LAB_NATIVE_FUSED = '0';
    try {
      expect(fusedOps()).toBeNull();
      expect(fusedInactiveReason()).toMatch(/MARS_LAB_NATIVE_FUSED=0/);
      process.env.MARS_LAB_NATIVE_FUSED = 'maybe';
      expect(() => fusedOps()).toThrow(/MARS_LAB_NATIVE_FUSED: 'maybe' is not one of 1, 0/);
    } finally {
      delete process.env.MARS_LAB_NATIVE_FUSED;
    }
    useProducts(null);
    expect(fusedOps()).toBeNull();
    expect(fusedInactiveReason()).toMatch(/not active/);
  });

  it('the backend report (doctor, run.json) says whether they run and why', (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    try {
      expect(configureNativeKernels('wasm')).toMatchObject({ active: true, fused: true });
      expect(fusedOps()).not.toBeNull();
      process.env.MARS_LAB_NATIVE_FUSED = 'off';
      expect(configureNativeKernels('wasm')).toMatchObject({
        fused: false,
        fusedDetail: expect.stringMatching(/MARS_LAB_NATIVE_FUSED=0/),
      });
      delete process.env.MARS_LAB_NATIVE_FUSED;
      process.env.MARS_LAB_NATIVE = '0';
      expect(configureNativeKernels('wasm')).toMatchObject({
        fused: false,
        fusedDetail: expect.stringMatching(/not active/),
      });
      expect(fusedOps()).toBeNull();
    } finally {
      delete process.env.MARS_LAB_NATIVE_FUSED;
      delete process.env.MARS_LAB_NATIVE;
      configureNativeKernels('wasm');
    }
  });

  it('not on another backend', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    await useBackend('cpu');
    try {
      expect(fusedOps()).toBeNull();
    } finally {
      await useBackend('wasm');
    }
  });
});
