/**
 * The fused native optimiser (issue 16: native/mars_adam.c through engine/rl/nativeAdam.ts) against the JS optimiser
 * of engine/rl/adam.ts, the reference: the same updates on random tensors in every case the JS one has (clipping on
 * and off, zero gradients, weight decay on, off and per variable, a schedule, a variable without a gradient, a
 * non-finite gradient), the same state format both ways, data shared with another tensor left alone, and no tensors
 * leaked. Unclipped updates are compared bit for bit (the native pass repeats the JS ops in float32, in order);
 * clipped ones within float tolerance (the norm is summed in double natively, in float32 by the tensor ops).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Adam, type AdamOptions, type AdamState } from '../../../engine/rl/adam';
import { nativeAdamRequest, nativeAdamStatus } from '../../../engine/rl/nativeAdam';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { UserError } from '../../../engine/base/userError';
import { useBackend } from '../../helpers/backends';
import { maxRelDiff, nativeMissing, useProducts, buildKernels } from './nativeHelpers';

const SHAPES: Record<string, number[]> = {
  'layers.0.wq': [13, 7],
  'layers.0.norm': [13],
  embed: [5, 3, 4],
  'head.b': [1],
};

beforeAll(async () => {
  await useBackend('wasm');
});
afterAll(() => useProducts(null));

/** Fresh variables with the same random values on every call (names made unique per call). */
let made = 0;
function makeVars(seed: number): Record<string, tf.Variable> {
  const rng = new Rng(seed);
  made++;
  return Object.fromEntries(
    Object.entries(SHAPES).map(([name, shape]) => {
      const size = shape.reduce((a, b) => a * b, 1);
      const data = Float32Array.from({ length: size }, () => rng.normal());
      return [name, tf.tidy(() => tf.variable(tf.tensor(data, shape), true, `${name}#${made}`))];
    }),
  );
}

/** Gradient sets for `steps` updates: scale sets how large (and so whether they are clipped); zero: all zeros. */
function makeGrads(seed: number, steps: number, scale: number): Record<string, Float32Array>[] {
  const rng = new Rng(seed);
  return Array.from({ length: steps }, () =>
    Object.fromEntries(
      Object.entries(SHAPES).map(([name, shape]) => [
        name,
        Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => scale * rng.normal()),
      ]),
    ),
  );
}

interface Outcome {
  results: { gradNorm: number; lr: number; clipped: boolean; skipped: boolean; step: number; native: boolean }[];
  weights: Record<string, Float32Array>;
  state: AdamState;
}

/** `steps` updates with one implementation; `omit` names a variable that gets no gradient. */
async function train(
  implementation: 'js' | 'native',
  opts: AdamOptions,
  grads: Record<string, Float32Array>[],
  omit?: string,
  trainingSteps?: number[],
): Promise<Outcome> {
  const vars = makeVars(1);
  const opt = new Adam(vars, { ...opts, implementation });
  const results: Outcome['results'] = [];
  for (const [i, set] of grads.entries()) {
    const g = Object.fromEntries(
      Object.entries(set)
        .filter(([n]) => n !== omit)
        .map(([n, d]) => [n, tf.tensor(d, SHAPES[n])]),
    );
    results.push(await opt.step(g, trainingSteps?.[i]));
    for (const t of Object.values(g)) t.dispose();
  }
  const weights: Record<string, Float32Array> = {};
  for (const [n, v] of Object.entries(vars)) weights[n] = (await v.data()) as Float32Array;
  const state = await opt.exportState();
  opt.dispose();
  for (const v of Object.values(vars)) v.dispose();
  return { results, weights, state };
}

function expectSame(native: Outcome, js: Outcome, tol: number): void {
  expect(native.results.map((r) => r.native)).toEqual(native.results.map((r) => !r.skipped));
  expect(js.results.every((r) => !r.native)).toBe(true);
  native.results.forEach((r, i) => {
    const j = js.results[i]!;
    expect({ ...r, gradNorm: 0, native: false }).toEqual({ ...j, gradNorm: 0 });
    if (Number.isFinite(j.gradNorm)) expect(Math.abs(r.gradNorm - j.gradNorm) / (1 + j.gradNorm)).toBeLessThan(1e-6);
    else expect(r.gradNorm).not.toBeLessThan(Infinity);
  });
  expect(Object.keys(native.state.tensors)).toEqual(Object.keys(js.state.tensors));
  expect(native.state.step).toBe(js.state.step);
  for (const [n, w] of Object.entries(js.weights)) {
    if (tol === 0) expect(Buffer.from(native.weights[n]!.buffer).equals(Buffer.from(w.buffer)), n).toBe(true);
    else expect(maxRelDiff(native.weights[n]!, w), n).toBeLessThan(tol);
  }
  for (const [k, t] of Object.entries(js.state.tensors)) {
    expect(native.state.tensors[k]!.shape).toEqual(t.shape);
    if (tol === 0) {
      expect(Buffer.from(native.state.tensors[k]!.data.buffer).equals(Buffer.from(t.data.buffer)), k).toBe(true);
    } else expect(maxRelDiff(native.state.tensors[k]!.data, t.data), k).toBeLessThan(tol);
  }
}

describe.each(buildKernels())('the fused native optimiser (products on the %s kernel) against the JS one', (kernel) => {
  const cases: [string, AdamOptions, { scale: number; tol: number; omit?: string; trainingSteps?: number[] }][] = [
    ['clipping off', { lr: 0.01, maxGradNorm: null }, { scale: 1, tol: 0 }],
    ['clipping on, every step clipped', { lr: 0.01, maxGradNorm: 1 }, { scale: 1, tol: 1e-6 }],
    ['clipping on, never reached', { lr: 0.01, maxGradNorm: 1e6 }, { scale: 1, tol: 0 }],
    ['zero gradients', { lr: 0.01 }, { scale: 0, tol: 0 }],
    ['weight decay on every variable', { lr: 0.02, weightDecay: 0.1, maxGradNorm: null }, { scale: 1, tol: 0 }],
    [
      'weight decay on some variables, clipped',
      { lr: 0.02, weightDecay: 0.1, decays: (n) => !n.endsWith('norm'), maxGradNorm: 0.5 },
      { scale: 1, tol: 1e-6 },
    ],
    [
      'a cosine schedule by training step, betas and eps set',
      {
        lr: { kind: 'cosine', lr: 0.05, warmupSteps: 1, totalSteps: 4, minLr: 0.001 },
        beta1: 0.8,
        beta2: 0.95,
        eps: 1e-6,
        scheduleUnit: 'trainingStep',
        maxGradNorm: null,
      },
      { scale: 1, tol: 0, trainingSteps: [0, 0, 1, 3] },
    ],
    [
      'a variable without a gradient keeps its value and moments',
      { lr: 0.01, maxGradNorm: null },
      { scale: 1, tol: 0, omit: 'embed' },
    ],
    ['tiny gradients (eps dominates)', { lr: 0.01, maxGradNorm: null }, { scale: 1e-9, tol: 0 }],
  ];
  for (const [name, opts, c] of cases) {
    it(name, async (ctx) => {
      const missing = nativeMissing();
      if (missing) ctx.skip(missing);
      useProducts(kernel);
      expect(nativeAdamStatus().optimiser).not.toBeNull();
      const grads = makeGrads(7, 4, c.scale);
      const before = tf.memory().numTensors;
      const js = await train('js', opts, grads, c.omit, c.trainingSteps);
      const native = await train('native', opts, grads, c.omit, c.trainingSteps);
      expect(tf.memory().numTensors).toBe(before);
      expectSame(native, js, c.tol);
      if (c.scale === 0) expect(native.results.every((r) => r.gradNorm === 0 && !r.clipped)).toBe(true);
      if (c.omit) {
        const initial = makeVars(1);
        expect(
          Buffer.from(native.weights[c.omit]!.buffer).equals(
            Buffer.from(((await initial[c.omit]!.data()) as Float32Array).buffer),
          ),
        ).toBe(true);
        for (const v of Object.values(initial)) v.dispose();
        expect(native.state.tensors[`m/${c.omit}`]!.data.every((x) => x === 0)).toBe(true);
      }
    });
  }
});

describe('the fused native optimiser: edges', () => {
  it('a non-finite gradient skips the step on both paths: nothing changes, the count does not advance', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(buildKernels()[0]!);
    const grads = makeGrads(3, 3, 1);
    grads[1]!['layers.0.wq']![4] = NaN;
    const js = await train('js', { lr: 0.01 }, grads);
    const native = await train('native', { lr: 0.01 }, grads);
    expect(native.results.map((r) => [r.skipped, r.step])).toEqual([
      [false, 1],
      [true, 1],
      [false, 2],
    ]);
    expectSame(native, js, 1e-6);
  });

  it('state moves between the paths: a native optimiser resumes from a JS one and back, as either would alone', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(buildKernels()[0]!);
    const grads = makeGrads(11, 6, 1);
    const opts: AdamOptions = { lr: 0.01, weightDecay: 0.05, maxGradNorm: null };
    const whole = await train('js', opts, grads);
    // JS for 3 updates, then native for 3 from its state, then JS again for the last from the native state.
    const vars = makeVars(1);
    let impl: 'js' | 'native' = 'js';
    let state: AdamState | null = null;
    for (const [i, set] of grads.entries()) {
      if (i === 3 || i === 5) impl = impl === 'js' ? 'native' : 'js';
      const opt = new Adam(vars, { ...opts, implementation: impl });
      if (state) opt.importState(state);
      const g = Object.fromEntries(Object.entries(set).map(([n, d]) => [n, tf.tensor(d, SHAPES[n])]));
      expect((await opt.step(g)).native).toBe(impl === 'native');
      for (const t of Object.values(g)) t.dispose();
      state = await opt.exportState();
      opt.dispose();
    }
    for (const [n, v] of Object.entries(vars)) {
      // Unclipped: each path's update is the same to the bit, so the mixed run equals the JS run exactly.
      expect(
        Buffer.from(((await v.data()) as Float32Array).buffer).equals(Buffer.from(whole.weights[n]!.buffer)),
        n,
      ).toBe(true);
      v.dispose();
    }
    expect(state!.step).toBe(6);
    for (const [k, t] of Object.entries(whole.state.tensors)) {
      expect(Buffer.from(state!.tensors[k]!.data.buffer).equals(Buffer.from(t.data.buffer)), k).toBe(true);
    }
  });

  it("a tensor sharing a variable's data keeps the old values, as after the JS path's assign", async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(buildKernels()[0]!);
    const w = tf.tidy(() => tf.variable(tf.tensor([1, 2, 3, 4], [2, 2]), true, `shared#${++made}`));
    const view = tf.reshape(w, [4]); // on wasm a reshape shares the data
    const opt = new Adam({ w }, { lr: 0.1, maxGradNorm: null, implementation: 'native' });
    const g = tf.tensor([1, -1, 1, -1], [2, 2]);
    expect((await opt.step({ w: g })).native).toBe(true);
    expect(Array.from(await view.data())).toEqual([1, 2, 3, 4]);
    expect(Array.from(await w.data())).toEqual([1 - 0.1, 2 + 0.1, 3 - 0.1, 4 + 0.1].map(Math.fround));
    for (const t of [w, view, g]) t.dispose();
    opt.dispose();
  });

  it('a gradient that is the variable itself (shared data) makes the update fall back to the tensor ops, same result', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(buildKernels()[0]!);
    const run = async (implementation: 'auto' | 'js') => {
      const w = tf.tidy(() => tf.variable(tf.tensor([1, -2, 3]), true, `self#${++made}`));
      const opt = new Adam({ w }, { lr: 0.1, maxGradNorm: null, implementation });
      const r = await opt.step({ w });
      const out = { native: r.native, w: Array.from(await w.data()) };
      opt.dispose();
      w.dispose();
      return out;
    };
    const auto = await run('auto');
    expect(auto.native).toBe(false);
    expect(auto.w).toEqual((await run('js')).w);
  });

  it("runs only with the native products on wasm, and MARS_LAB_NATIVE_ADAM=0 turns it off ('auto' falls back, 'native' says why)", async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    const w = tf.tidy(() => tf.variable(tf.ones([3]), true, `switch#${++made}`));
    const g = tf.ones([3]);
    const step = async (implementation: 'auto' | 'native') => {
      const opt = new Adam({ w }, { lr: 0.1, implementation });
      try {
        return (await opt.step({ w: g })).native;
      } finally {
        opt.dispose();
      }
    };
    useProducts(buildKernels()[0]!);
    expect(await step('auto')).toBe(true);
    useProducts(null);
    expect(await step('auto')).toBe(false);
    await expect(step('native')).rejects.toThrow(/not available: the native kernels are not active/);
    useProducts(buildKernels()[0]!);
    process.env.MARS_LAB_NATIVE_ADAM = '0';
    try {
      expect(await step('auto')).toBe(false);
      expect(nativeAdamStatus().detail).toMatch(/MARS_LAB_NATIVE_ADAM=0/);
    } finally {
      delete process.env.MARS_LAB_NATIVE_ADAM;
    }
    expect(nativeAdamRequest({ MARS_LAB_NATIVE_ADAM: 'off' })).toBe('off');
    expect(() => nativeAdamRequest({ MARS_LAB_NATIVE_ADAM: 'maybe' })).toThrow(UserError);
    w.dispose();
    g.dispose();
  });
});
