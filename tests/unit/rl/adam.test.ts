import { beforeAll, describe, expect, it } from 'vitest';
import { tf } from '../../../engine/tensor/backend';
import { Adam, type AdamState } from '../../../engine/rl/adam';
import { GRADIENT_BACKENDS, useBackend } from '../../helpers/backends';

/** The textbook update in float64, for comparison. */
function adamReference(
  p0: number[],
  grads: number[][],
  o: { lr: number; wd?: number; b1?: number; b2?: number; eps?: number },
): { p: number[]; m: number[]; v: number[] } {
  const b1 = o.b1 ?? 0.9;
  const b2 = o.b2 ?? 0.999;
  const eps = o.eps ?? 1e-8;
  const wd = o.wd ?? 0;
  const p = [...p0];
  const m = p0.map(() => 0);
  const v = p0.map(() => 0);
  grads.forEach((g, k) => {
    const t = k + 1;
    for (let i = 0; i < p.length; i++) {
      m[i] = b1 * m[i]! + (1 - b1) * g[i]!;
      v[i] = b2 * v[i]! + (1 - b2) * g[i]! * g[i]!;
      const mh = m[i]! / (1 - b1 ** t);
      const vh = v[i]! / (1 - b2 ** t);
      p[i] = p[i]! * (1 - o.lr * wd) - (o.lr * mh) / (Math.sqrt(vh) + eps);
    }
  });
  return { p, m, v };
}

async function stepWith(opt: Adam, grads: Record<string, number[] | number>) {
  const ts: Record<string, tf.Tensor> = {};
  for (const [k, g] of Object.entries(grads)) ts[k] = typeof g === 'number' ? tf.scalar(g) : tf.tensor1d(g);
  const r = await opt.step(ts);
  tf.dispose(Object.values(ts));
  return r;
}

describe.each(GRADIENT_BACKENDS)('Adam on %s', (backend) => {
  beforeAll(() => useBackend(backend));

  it('matches a hand-computed two-step update on a vector and a scalar', async () => {
    // Step 1 by hand: m = 0.1·g, v = 0.001·g², m̂ = g, v̂ = g², so p moves by lr·g/(|g|+eps) ≈ lr·sign(g).
    const w = tf.variable(tf.tensor1d([1, -2]));
    const s = tf.variable(tf.scalar(0.5));
    const opt = new Adam({ w, s }, { lr: 0.1, maxGradNorm: null });
    await stepWith(opt, { w: [0.5, -0.1], s: 3 });
    const w1 = await w.data();
    expect(w1[0]).toBeCloseTo(0.9, 6);
    expect(w1[1]).toBeCloseTo(-1.9, 6);
    expect((await s.data())[0]).toBeCloseTo(0.4, 6);
    await stepWith(opt, { w: [0.2, 0.3], s: -1 });
    const ref = adamReference(
      [1, -2],
      [
        [0.5, -0.1],
        [0.2, 0.3],
      ],
      { lr: 0.1 },
    );
    const refS = adamReference([0.5], [[3], [-1]], { lr: 0.1 });
    // Step 2 by hand for w[1]: m = 0.9·(−0.01) + 0.1·0.3 = 0.021, v = 0.999·1e-5 + 0.001·0.09 = 9.999e-5,
    // m̂ = 0.021/0.19, v̂ = 9.999e-5/0.001999, p = p1 − 0.1·m̂/(sqrt(v̂) + 1e-8), p1 = −2 + 0.1·0.1/(0.1 + 1e-8).
    const p1 = -2 + (0.1 * 0.1) / (0.1 + 1e-8);
    const byHand = p1 - (0.1 * (0.021 / 0.19)) / (Math.sqrt(9.999e-5 / 0.001999) + 1e-8);
    expect(ref.p[1]).toBeCloseTo(byHand, 12);
    const w2 = await w.data();
    expect(w2[0]).toBeCloseTo(ref.p[0]!, 6);
    expect(w2[1]).toBeCloseTo(ref.p[1]!, 6);
    expect((await s.data())[0]).toBeCloseTo(refS.p[0]!, 6);
    expect(opt.stepCount).toBe(2);
    opt.dispose();
    tf.dispose([w, s]);
  });

  it('applies decoupled weight decay only to the variables chosen', async () => {
    const w = tf.variable(tf.tensor1d([1, -2]));
    const b = tf.variable(tf.tensor1d([3]));
    const opt = new Adam({ w, b }, { lr: 0.05, weightDecay: 0.1, decays: (n) => n !== 'b', maxGradNorm: null });
    const gs = [
      [[0.3, -0.2], [0.1]],
      [[-0.1, 0.4], [0.2]],
      [[0.05, 0.05], [-0.3]],
    ];
    for (const [gw, gb] of gs) await stepWith(opt, { w: gw!, b: gb! });
    const refW = adamReference(
      [1, -2],
      gs.map((g) => g[0]!),
      { lr: 0.05, wd: 0.1 },
    );
    const refB = adamReference(
      [3],
      gs.map((g) => g[1]!),
      { lr: 0.05 },
    );
    const wv = await w.data();
    expect(wv[0]).toBeCloseTo(refW.p[0]!, 6);
    expect(wv[1]).toBeCloseTo(refW.p[1]!, 6);
    expect((await b.data())[0]).toBeCloseTo(refB.p[0]!, 6);
    opt.dispose();
    tf.dispose([w, b]);
  });

  it('clips by maxNorm/norm above the threshold, reports the pre-clip norm, and leaves small gradients alone', async () => {
    const w = tf.variable(tf.tensor1d([0, 0]));
    const s = tf.variable(tf.scalar(0));
    const opt = new Adam({ w, s }, { lr: 0.01 }); // maxGradNorm defaults to 1
    const r = await stepWith(opt, { w: [3, 0], s: 4 }); // global norm 5
    expect(r.gradNorm).toBeCloseTo(5, 5);
    expect(r.clipped).toBe(true);
    const st = await opt.exportState();
    // m = (1 − β1)·g·(1/5)
    expect(st.tensors['m/w']!.data[0]).toBeCloseTo(0.1 * 0.6, 7);
    expect(st.tensors['m/s']!.data[0]).toBeCloseTo(0.1 * 0.8, 7);
    expect(st.tensors['v/s']!.data[0]).toBeCloseTo(0.001 * 0.64, 8);

    const w2 = tf.variable(tf.tensor1d([0, 0]));
    const opt2 = new Adam([w2], { lr: 0.01, maxGradNorm: 2 });
    const r2 = await stepWith(opt2, { [w2.name]: [0.6, 0.8] });
    expect(r2.gradNorm).toBeCloseTo(1, 6);
    expect(r2.clipped).toBe(false);
    expect((await opt2.exportState()).tensors[`m/${w2.name}`]!.data[1]).toBeCloseTo(0.08, 7);
    opt.dispose();
    opt2.dispose();
    tf.dispose([w, s, w2]);
  });

  it('follows its learning-rate schedule, one step at a time', async () => {
    const w = tf.variable(tf.scalar(0));
    const opt = new Adam({ w }, { lr: { kind: 'linearWarmup', lr: 1e-2, warmupSteps: 4 } });
    const lrs: number[] = [];
    for (let i = 0; i < 6; i++) lrs.push((await stepWith(opt, { w: 0.1 })).lr);
    [2.5e-3, 5e-3, 7.5e-3, 1e-2, 1e-2, 1e-2].forEach((x, i) => expect(lrs[i]).toBeCloseTo(x, 12));
    expect(opt.nextLr()).toBe(1e-2);
    opt.dispose();
    w.dispose();
  });

  it('export → import continues identically', async () => {
    const grads = Array.from({ length: 6 }, (_, k) => [Math.sin(k + 1), Math.cos(2 * k), 0.3 - 0.1 * k]);
    const opts = {
      lr: { kind: 'cosine', lr: 0.05, minLr: 0.005, warmupSteps: 2, totalSteps: 6 } as const,
      weightDecay: 0.01,
    };
    const a = tf.variable(tf.tensor1d([0.5, -1, 2]));
    const optA = new Adam({ a }, opts);
    for (const g of grads.slice(0, 3)) await stepWith(optA, { a: g });
    const saved = await optA.exportState();
    const savedValues = await a.data();

    const b = tf.variable(tf.tensor1d(savedValues));
    const optB = new Adam({ a: b }, opts);
    optB.importState(saved);
    expect(optB.stepCount).toBe(3);
    // Mutating the exported arrays afterwards must not reach either optimiser.
    saved.tensors['m/a']!.data.fill(123);
    for (const g of grads.slice(3)) {
      const ra = await stepWith(optA, { a: g });
      const rb = await stepWith(optB, { a: g });
      expect(rb).toEqual(ra);
    }
    expect(Array.from(await b.data())).toEqual(Array.from(await a.data()));
    expect((await optB.exportState()).tensors).toEqual((await optA.exportState()).tensors);
    optA.dispose();
    optB.dispose();
    tf.dispose([a, b]);
  });

  it('import checks every tensor before changing anything, naming the offender', async () => {
    const w = tf.variable(tf.zeros([2, 3]));
    const opt = new Adam({ 'layer0.w': w }, { lr: 0.1 });
    const good = await opt.exportState();
    const bad: AdamState = {
      step: 5,
      tensors: { ...good.tensors, 'v/layer0.w': { shape: [3, 2], data: new Float32Array(6) } },
    };
    expect(() => opt.importState(bad)).toThrow(
      /'v\/layer0\.w' has shape \[3, 2\] but variable 'layer0\.w' has \[2, 3\]/,
    );
    expect(opt.stepCount).toBe(0);
    const missing: AdamState = { step: 1, tensors: { 'm/layer0.w': good.tensors['m/layer0.w']! } };
    expect(() => opt.importState(missing)).toThrow(/'v\/layer0\.w' is missing/);
    const extra: AdamState = {
      step: 1,
      tensors: { ...good.tensors, 'm/layer9.w': { shape: [1], data: new Float32Array(1) } },
    };
    expect(() => opt.importState(extra)).toThrow(/'m\/layer9\.w' belongs to no optimised variable/);
    const short: AdamState = {
      step: 1,
      tensors: { ...good.tensors, 'm/layer0.w': { shape: [2, 3], data: new Float32Array(5) } },
    };
    expect(() => opt.importState(short)).toThrow(/'m\/layer0\.w' holds 5 values/);
    opt.dispose();
    w.dispose();
  });

  it('splits the moments of the old fused wqkv / wgu variables column by column into wq, wk, wv / wg, wu', async () => {
    const shapes = { wq: [2, 3], wk: [2, 1], wv: [2, 1], wg: [2, 2], wu: [2, 2] } as const;
    const vars = Object.fromEntries(
      Object.entries(shapes).map(([n, s]) => [`layers.0.${n}`, tf.variable(tf.zeros([...s]))]),
    );
    const opt = new Adam(vars, { lr: 0.1 });
    // fused [in=2, 3+1+1] with value 10·row + column, and [2, 2+2] likewise (+100 for v)
    const fused = (cols: number, plus: number) => ({
      shape: [2, cols],
      data: Float32Array.from({ length: 2 * cols }, (_, i) => 10 * Math.floor(i / cols) + (i % cols) + plus),
    });
    opt.importState({
      step: 4,
      tensors: {
        'm/layers.0.wqkv': fused(5, 0),
        'v/layers.0.wqkv': fused(5, 100),
        'm/layers.0.wgu': fused(4, 0),
        'v/layers.0.wgu': fused(4, 100),
      },
    });
    const got = (await opt.exportState()).tensors;
    expect(Array.from(got['m/layers.0.wq']!.data)).toEqual([0, 1, 2, 10, 11, 12]);
    expect(Array.from(got['m/layers.0.wk']!.data)).toEqual([3, 13]);
    expect(Array.from(got['v/layers.0.wv']!.data)).toEqual([104, 114]);
    expect(Array.from(got['m/layers.0.wg']!.data)).toEqual([0, 1, 10, 11]);
    expect(Array.from(got['v/layers.0.wu']!.data)).toEqual([102, 103, 112, 113]);
    expect(opt.stepCount).toBe(4);
    // a fused moment whose width does not add up is not guessed at
    expect(() => opt.importState({ step: 1, tensors: { ...got, 'm/layers.0.wgu': fused(5, 0) } })).toThrow(
      /'m\/layers\.0\.wgu' belongs to no optimised variable/,
    );
    opt.dispose();
    tf.dispose(Object.values(vars));
  });
  it('rejects gradients it cannot apply, and skips a step whose gradient norm is not finite', async () => {
    const w = tf.variable(tf.tensor1d([1, 2]));
    const opt = new Adam({ w }, { lr: 0.1 });
    await expect(stepWith(opt, { x: [1, 1] })).rejects.toThrow(/gradient 'x' matches no optimised variable/);
    await expect(stepWith(opt, { w: [1, 1, 1] })).rejects.toThrow(/gradient 'w' has shape \[3\]/);
    const r = await stepWith(opt, { w: [Number.NaN, 1] });
    expect(r.skipped).toBe(true);
    expect(opt.stepCount).toBe(0);
    expect(Array.from(await w.data())).toEqual([1, 2]);
    expect((await opt.exportState()).tensors['m/w']!.data.every((x) => x === 0)).toBe(true);
    opt.dispose();
    w.dispose();
  });

  it('keeps the tensor count flat over 200 steps', async () => {
    const w = tf.variable(tf.randomNormal([4, 5]));
    const b = tf.variable(tf.zeros([5]));
    const opt = new Adam(
      { w, b },
      { lr: { kind: 'cosine', lr: 1e-2, minLr: 1e-3, warmupSteps: 10, totalSteps: 200 }, weightDecay: 0.01 },
    );
    const loss = () => tf.sum<tf.Scalar>(tf.square(tf.add(tf.matMul(tf.ones([2, 4]), w), b)));
    const once = async () => {
      const { value, grads } = tf.variableGrads(loss, [w, b]);
      await opt.step({ w: grads[w.name]!, b: grads[b.name]! });
      tf.dispose([value, ...Object.values(grads)]);
    };
    await once();
    const count = tf.memory().numTensors;
    for (let i = 0; i < 199; i++) await once();
    expect(tf.memory().numTensors).toBe(count);
    expect(opt.stepCount).toBe(200);
    opt.dispose();
    expect(tf.memory().numTensors).toBe(count - 4);
    tf.dispose([w, b]);
  });
});
