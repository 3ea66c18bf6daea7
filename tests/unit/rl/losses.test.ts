import { beforeAll, describe, expect, it } from 'vitest';
import { tf } from '../../../engine/tensor/backend';
import { Rng } from '../../../engine/random/prng';
import { groupZScore } from '../../../engine/rl/advantages';
import {
  k3,
  policyLoss,
  tisWeights,
  type PolicyLoss,
  type PolicyLossOptions,
  type PolicyLossStats,
} from '../../../engine/rl/losses';
import { GRADIENT_BACKENDS, isExactlyZero, useBackend } from '../../helpers/backends';

type Mat = number[][];

interface Data {
  logp: Mat;
  old: Mat;
  beh: Mat;
  ref: Mat;
  mask: Mat;
  ent: Mat;
  adv: number[];
}

interface Run {
  loss: number;
  grad: Mat;
  entGrad: Mat | null;
  stats: PolicyLossStats;
}

const f32 = Math.fround;

/** One loss evaluation with d loss / d logp (and d loss / d entropy when an entropy coefficient is set). */
async function run(d: Data, opts: PolicyLossOptions, use: { ref?: boolean; ent?: boolean } = {}): Promise<Run> {
  const before = tf.memory().numTensors;
  const old = tf.tensor2d(d.old);
  const beh = tf.tensor2d(d.beh);
  const ref = tf.tensor2d(d.ref);
  const mask = tf.tensor2d(d.mask);
  const adv = tf.tensor1d(d.adv);
  const lp = tf.tensor2d(d.logp);
  const ent = tf.tensor2d(d.ent);
  let pl: PolicyLoss | undefined;
  const build = (logp: tf.Tensor, entropy?: tf.Tensor): tf.Scalar =>
    (pl = policyLoss(
      { logp, oldLogp: old, behLogp: beh, refLogp: use.ref ? ref : undefined, mask, advantages: adv, entropy },
      opts,
    )).loss;
  let loss: tf.Scalar;
  let grad: tf.Tensor;
  let entGrad: tf.Tensor | null = null;
  if (use.ent) {
    const r = tf.valueAndGrads((a: tf.Tensor, e: tf.Tensor) => build(a, e))([lp, ent]);
    loss = r.value;
    grad = r.grads[0]!;
    entGrad = r.grads[1]!;
  } else {
    const r = tf.valueAndGrad((a: tf.Tensor) => build(a))(lp);
    loss = r.value;
    grad = r.grad;
  }
  const out: Run = {
    loss: (await loss.data())[0]!,
    grad: (await grad.array()) as Mat,
    entGrad: entGrad ? ((await entGrad.array()) as Mat) : null,
    stats: await pl!.stats(),
  };
  tf.dispose([old, beh, ref, mask, adv, lp, ent, loss, grad, ...(entGrad ? [entGrad] : [])]);
  expect(tf.memory().numTensors).toBe(before); // statistics must not leak tensors
  return out;
}

/** Straight from docs/algorithms.md §1.3, in float64, for value checks and finite-difference gradients. */
function reference(
  d: Data,
  o: {
    kind: 'ppoToken' | 'gspo';
    clipLow: number;
    clipHigh: number;
    klCoef: number;
    entCoef: number;
    tis: null | { cap: number; vetoBelow: number };
  },
): number {
  const B = d.logp.length;
  const clip = (x: number): number => Math.min(Math.max(x, 1 - o.clipLow), 1 + o.clipHigh);
  let pol = 0;
  let kl = 0;
  let ent = 0;
  for (let i = 0; i < B; i++) {
    const m = d.mask[i]!;
    const n = m.reduce((a, b) => a + b, 0);
    if (n === 0) continue;
    const A = d.adv[i]!;
    const T = m.length;
    const w = new Array<number>(T).fill(1);
    if (o.tis) {
      let veto = false;
      for (let t = 0; t < T; t++) {
        const r = Math.exp(d.old[i]![t]! - d.beh[i]![t]!);
        w[t] = Math.min(r, o.tis.cap);
        if (m[t] === 1 && r < o.tis.vetoBelow) veto = true;
      }
      if (veto) w.fill(0);
    }
    if (o.kind === 'ppoToken') {
      let s = 0;
      for (let t = 0; t < T; t++) {
        if (!m[t]) continue;
        const rho = Math.exp(d.logp[i]![t]! - d.old[i]![t]!);
        s += w[t]! * -Math.min(rho * A, clip(rho) * A);
      }
      pol += s / n;
    } else {
      const anc = o.tis ? d.beh : d.old;
      let lr = 0;
      let wm = 0;
      for (let t = 0; t < T; t++) {
        if (!m[t]) continue;
        lr += d.logp[i]![t]! - anc[i]![t]!;
        wm += w[t]!;
      }
      const s = Math.exp(lr / n);
      pol += -Math.min(s * A, clip(s) * A) * (o.tis ? wm / n : 1);
    }
    let k = 0;
    let e = 0;
    for (let t = 0; t < T; t++) {
      if (!m[t]) continue;
      const x = d.ref[i]![t]! - d.logp[i]![t]!;
      k += Math.exp(x) - x - 1;
      e += d.ent[i]![t]!;
    }
    kl += k / n;
    ent += e / n;
  }
  return pol / B + (o.klCoef * kl) / B - (o.entCoef * ent) / B;
}

function randomData(seed: number, B: number, T: number, masks?: Mat, garbage = true): Data {
  const rng = new Rng(seed);
  const mat = (f: (i: number, t: number) => number): Mat =>
    Array.from({ length: B }, (_, i) => Array.from({ length: T }, (_, t) => f32(f(i, t))));
  const mask = masks ?? mat((_, t) => (t === 0 ? 0 : rng.next() < 0.75 ? 1 : 0));
  const logp = mat((i, t) => (mask[i]![t] ? -0.05 - 3 * rng.next() : garbage ? 5 + 30 * rng.next() : 0));
  const old = mat((i, t) => (mask[i]![t] ? logp[i]![t]! + 0.15 * rng.normal() : garbage ? -40 * rng.next() : 0));
  const beh = mat((i, t) => (mask[i]![t] ? old[i]![t]! + 0.1 * rng.normal() : garbage ? 60 * rng.next() : 0));
  const ref = mat((i, t) => (mask[i]![t] ? logp[i]![t]! + 0.2 * rng.normal() : garbage ? -70 * rng.next() : 0));
  const ent = mat((i, t) => (mask[i]![t] ? 2 * rng.next() : garbage ? 100 * rng.next() : 0));
  const adv = Array.from({ length: B }, () => f32(rng.normal()));
  return { logp, old, beh, ref, mask, ent, adv };
}

const allZeroAt = (g: Mat, where: (i: number, t: number) => boolean): boolean =>
  g.every((row, i) => row.every((x, t) => !where(i, t) || isExactlyZero(x)));

const allFinite = (g: Mat): boolean => g.every((row) => row.every(Number.isFinite));

describe.each(GRADIENT_BACKENDS)('policy losses on %s (docs/algorithms.md §1.3)', (backend) => {
  beforeAll(() => useBackend(backend));

  describe('agreement with a float64 reference of §1.3', () => {
    const configs: PolicyLossOptions[] = [
      { kind: 'ppoToken', klCoef: 0.05, entCoef: 0.01 },
      { kind: 'gspo', klCoef: 0.05, entCoef: 0.01 },
      { kind: 'ppoToken', clipLow: 0.1, clipHigh: 0.28, tis: { enabled: true }, klCoef: 0.05 },
      { kind: 'gspo', clipLow: 0.1, clipHigh: 0.28, tis: { enabled: true, cap: 1.5 }, entCoef: 0.01 },
    ];
    it.each(configs)('$kind with tis=$tis.enabled: same loss and gradient (finite differences)', async (opts) => {
      const d = randomData(31, 5, 7);
      d.mask[3] = d.mask[3]!.map(() => 0); // an empty sample
      // A masked-in token the trainer finds far less likely than the sampler did (exp(−12) < 1e-4): TIS vetoes row 1.
      d.mask[1]![2] = 1;
      d.logp[1]![2] = f32(-12.9);
      d.old[1]![2] = f32(-13);
      d.beh[1]![2] = f32(-1);
      d.ref[1]![2] = f32(-12.7);
      // A wide spread of ratios so both clip branches are exercised.
      d.logp[0] = d.logp[0]!.map((x, t) => (d.mask[0]![t] ? f32(d.old[0]![t]! + (t % 2 ? 0.4 : -0.4)) : x));
      const o = {
        kind: opts.kind,
        clipLow: opts.clipLow ?? 0.2,
        clipHigh: opts.clipHigh ?? 0.2,
        klCoef: opts.klCoef ?? 0,
        entCoef: opts.entCoef ?? 0,
        tis: opts.tis?.enabled ? { cap: opts.tis.cap ?? 2, vetoBelow: opts.tis.vetoBelow ?? 1e-4 } : null,
      };
      const r = await run(d, opts, { ref: true, ent: o.entCoef !== 0 });
      expect(r.loss).toBeCloseTo(reference(d, o), 5);
      const h = 1e-6;
      for (let i = 0; i < d.logp.length; i++) {
        for (let t = 0; t < d.logp[0].length; t++) {
          const saved = d.logp[i]![t]!;
          d.logp[i]![t] = saved + h;
          const up = reference(d, o);
          d.logp[i]![t] = saved - h;
          const down = reference(d, o);
          d.logp[i]![t] = saved;
          const fd = d.mask[i]![t] ? (up - down) / (2 * h) : 0;
          expect(Math.abs(r.grad[i]![t]! - fd)).toBeLessThan(2e-5);
        }
      }
      if (r.entGrad) {
        r.entGrad.forEach((row, i) => {
          const n = d.mask[i]!.reduce((a, b) => a + b, 0);
          row.forEach((g, t) => expect(g).toBeCloseTo(d.mask[i]![t] ? -o.entCoef / n / d.logp.length : 0, 7));
        });
      }
      expect(r.stats.total).toBeCloseTo(r.loss, 6);
      expect(r.stats.emptySamples).toBe(1);
      expect(r.stats.tisVetoed).toBe(o.tis ? 1 : 0);
      expect(r.stats.kl).toBeGreaterThan(0);
      expect(r.stats.entropy === null).toBe(o.entCoef === 0);
    });
  });

  describe('degenerate groups (§7.10)', () => {
    it('all-equal rewards give zero advantages and, with KL = 0, exactly zero gradient', async () => {
      const adv = groupZScore([0.1, 0.1, 0.1, 0.1]);
      const d = { ...randomData(41, 4, 6), adv };
      for (const opts of [
        { kind: 'ppoToken' },
        { kind: 'gspo' },
        { kind: 'ppoToken', tis: { enabled: true } },
        { kind: 'gspo', tis: { enabled: true } },
      ] as PolicyLossOptions[]) {
        const r = await run(d, opts);
        expect(allZeroAt(r.grad, () => true)).toBe(true);
        expect(r.loss).toBe(0);
      }
    });

    it('singleton groups give a zero gradient; in verl mode A = r and the gradient is not zero', async () => {
      const d = randomData(42, 1, 5, [[0, 1, 1, 1, 1]]);
      const zero = await run({ ...d, adv: groupZScore([1]) }, { kind: 'gspo' });
      expect(allZeroAt(zero.grad, () => true)).toBe(true);
      const verl = await run({ ...d, adv: groupZScore([1], { singleton: 'verl' }) }, { kind: 'gspo' });
      expect(verl.grad[0]!.slice(1).every((g) => g !== 0)).toBe(true);
    });

    it('with KL > 0 a degenerate group still gets a gradient (only KL acts)', async () => {
      const d = { ...randomData(43, 3, 5), adv: [0, 0, 0] };
      const r = await run(d, { kind: 'ppoToken', klCoef: 0.1 }, { ref: true });
      expect(r.grad.some((row) => row.some((g) => g !== 0))).toBe(true);
      expect(r.stats.policyLoss).toBe(0);
    });
  });

  describe('clipping', () => {
    /** d loss/dδ for one sample with logp = old + δ on its two masked-in tokens. */
    async function slope(
      kind: 'ppoToken' | 'gspo',
      delta: number,
      A: number,
      clip: { clipLow?: number; clipHigh?: number } = {},
    ) {
      const old = tf.tensor2d([[0, -1, -2]]);
      const mask = tf.tensor2d([[0, 1, 1]]);
      const adv = tf.tensor1d([A]);
      let pl: PolicyLoss | undefined;
      const g = tf.grad(
        (dl: tf.Tensor) =>
          (pl = policyLoss(
            { logp: tf.add(old, tf.mul(dl, mask)), oldLogp: old, mask, advantages: adv },
            { kind, ...clip },
          )).loss,
      )(tf.scalar(delta));
      const value = (await g.data())[0]!;
      const stats = await pl!.stats();
      tf.dispose([old, mask, adv, g]);
      return { value, clipFraction: stats.clipFraction, ratioMean: stats.ratioMean };
    }

    it.each(['ppoToken', 'gspo'] as const)(
      '%s: the gradient is zero exactly when the clipped branch is active',
      async (kind) => {
        // [δ, A, clipped?]: ratio e^0.3 ≈ 1.35 > 1.2 and e^−0.3 ≈ 0.74 < 0.8; e^±0.1 lies inside [0.8, 1.2].
        const cases: [number, number, boolean][] = [
          [0.3, 1, true],
          [0.3, -1, false],
          [-0.3, -1, true],
          [-0.3, 1, false],
          [0.1, 1, false],
          [0.1, -1, false],
          [-0.1, 1, false],
          [-0.1, -1, false],
        ];
        for (const [delta, A, clipped] of cases) {
          const s = await slope(kind, delta, A);
          if (clipped) expect(isExactlyZero(s.value)).toBe(true);
          else expect(s.value).toBeCloseTo(-A * Math.exp(delta), 5); // −A·ρ·dρ/dδ/ρ
          expect(s.clipFraction).toBe(clipped ? 1 : 0);
          expect(s.ratioMean).toBeCloseTo(Math.exp(delta), 5);
        }
      },
    );

    it.each(['ppoToken', 'gspo'] as const)('%s: clipLow and clipHigh bound their own sides', async (kind) => {
      // ρ = e^0.22 ≈ 1.246: outside 1+0.2, inside 1+0.28.
      expect(isExactlyZero((await slope(kind, 0.22, 1)).value)).toBe(true);
      expect((await slope(kind, 0.22, 1, { clipHigh: 0.28 })).value).toBeCloseTo(-Math.exp(0.22), 5);
      // ρ = e^−0.15 ≈ 0.861: inside 1−0.2, outside 1−0.1.
      expect((await slope(kind, -0.15, -1)).value).toBeCloseTo(Math.exp(-0.15), 5);
      expect(isExactlyZero((await slope(kind, -0.15, -1, { clipLow: 0.1 })).value)).toBe(true);
    });
  });

  describe('on-policy identity (§1.3, §7.12)', () => {
    it('ρ ≡ 1, no clipping, and ppoToken and gspo both give −A_i·m_t/(Σm_i)/B', async () => {
      const masks = [
        [0, 1, 1, 1, 1, 1],
        [0, 0, 0, 1, 1, 0],
        [0, 1, 0, 1, 0, 1],
      ];
      const base = randomData(51, 3, 6, masks);
      const d = {
        ...base,
        old: base.logp.map((r) => [...r]),
        beh: base.logp.map((r) => [...r]),
        adv: [1.2, -0.4, 0.7],
      };
      const ppo = await run(d, { kind: 'ppoToken' });
      const gspo = await run(d, { kind: 'gspo' });
      const gspoTis = await run(d, { kind: 'gspo', tis: { enabled: true } });
      for (const r of [ppo, gspo, gspoTis]) {
        expect(r.stats.ratioMean).toBe(1);
        expect(r.stats.ratioMin).toBe(1);
        expect(r.stats.ratioMax).toBe(1);
        expect(r.stats.clipFraction).toBe(0);
        r.grad.forEach((row, i) => {
          const n = masks[i]!.reduce((a, b) => a + b, 0);
          row.forEach((g, t) => expect(g).toBeCloseTo((-d.adv[i]! * masks[i]![t]!) / n / 3, 6));
        });
      }
      ppo.grad.forEach((row, i) => row.forEach((g, t) => expect(Math.abs(g - gspo.grad[i]![t]!)).toBeLessThan(1e-6)));
      expect(ppo.loss).toBeCloseTo(gspo.loss, 6);
    });
  });

  describe('constant inputs', () => {
    it('treats ℓold, ℓbeh and ℓref as constants even when they are computed from the differentiated tensor', async () => {
      const lp = tf.tensor2d([
        [0, -0.5, -1.5, -0.2],
        [0, -2, -0.3, -1],
      ]);
      const beh = tf.tensor2d([
        [0, -0.9, -1.4, -0.2],
        [0, -2, -0.3, -1],
      ]);
      const mask = tf.tensor2d([
        [0, 1, 1, 0],
        [0, 1, 1, 1],
      ]);
      const adv = tf.tensor1d([0.8, -0.5]);
      const w = (await tisWeights(lp, beh, mask).array()) as Mat;
      let pl: PolicyLoss | undefined;
      // On-policy as a trainer might write it: ℓold is the training forward's own output. The TIS veto's comparison
      // then sits downstream of the differentiated tensor, which TF.js cannot differentiate unless it is cut off.
      const g = (await tf
        .grad((x: tf.Tensor) => {
          pl = policyLoss(
            { logp: x, oldLogp: x, behLogp: beh, refLogp: tf.add(x, 0), mask, advantages: adv },
            { kind: 'ppoToken', klCoef: 0.3, tis: { enabled: true } },
          );
          return pl.loss;
        })(lp)
        .array()) as Mat;
      const n = [2, 3];
      g.forEach((row, i) =>
        row.forEach((x, t) =>
          expect(x).toBeCloseTo((-adv.arraySync()[i]! * w[i]![t]! * mask.arraySync()[i]![t]!) / n[i]! / 2, 6),
        ),
      );
      expect((await pl!.stats()).kl).toBe(0);
      tf.dispose([lp, beh, mask, adv]);
    });
  });

  describe('KL and TIS (§7.13)', () => {
    it('k3 ≥ 0 everywhere, exactly 0 where π = π_ref, and has zero slope there', async () => {
      const rng = new Rng(61);
      const lp = Array.from({ length: 400 }, () => -8 * rng.next());
      const ref = lp.map((x, i) => (i % 4 === 0 ? x : x + (i % 3 ? 1e-4 : 3) * rng.normal()));
      const a = tf.tensor1d(lp);
      const b = tf.tensor1d(ref);
      const k = await k3(a, b).data();
      expect(Array.from(k).every((x) => x >= 0)).toBe(true);
      expect(Array.from(k).every((x, i) => (i % 4 === 0 ? isExactlyZero(x) : true))).toBe(true);
      expect(Array.from(k).filter((x, i) => i % 4 !== 0 && x > 0).length).toBeGreaterThan(200);
      const g = await tf
        .grad((x: tf.Tensor) => tf.sum(k3(x, a)))(a)
        .data();
      expect(Array.from(g).every(isExactlyZero)).toBe(true);
      tf.dispose([a, b]);
    });

    it('TIS weights are min(exp(ℓold − ℓbeh), cap) ≤ cap, a vetoed row is all 0, and they carry no gradient', async () => {
      const old = tf.tensor2d([
        [-1, -0.2, -3, 0],
        [-1, -0.5, -2, -1],
        [-2, -0.1, -1, 0],
      ]);
      const beh = tf.tensor2d([
        [-1.5, -2, -2.9, 0],
        [-1, -0.5, -12, -1], // token 2: exp(−2 + 12) is large, so it is capped, not vetoed
        [-2, -12, -1, -99],
      ]);
      const mask = tf.tensor2d([
        [0, 1, 1, 0],
        [0, 1, 1, 1],
        [0, 1, 1, 0],
      ]);
      const w = (await tisWeights(old, beh, mask, { cap: 2 }).array()) as Mat;
      expect(w.flat().every((x) => x <= 2)).toBe(true);
      expect(w[0]![1]).toBe(2);
      expect(w[0]![2]).toBeCloseTo(Math.exp(-0.1), 6);
      expect(w[1]![2]).toBe(2);

      const behVeto = tf.tensor2d([
        [-1, -0.2, -3, 0],
        [-1, 9, -2, -1], // exp(−0.5 − 9) < 1e-4 on a masked-in token: the whole row is vetoed
        [-2, -0.1, -1, 50], // exp(0 − 50) < 1e-4 but masked out: no veto
      ]);
      const wv = (await tisWeights(old, behVeto, mask).array()) as Mat;
      expect(wv[1]!.every(isExactlyZero)).toBe(true);
      expect(wv[0]!.every((x) => x > 0)).toBe(true);
      expect(wv[2]![1]).toBe(1);

      const g = await tf
        .grad((o: tf.Tensor) => tf.sum(tf.mul(tisWeights(o, beh, mask), o)))(old)
        .array();
      // d/do Σ w·o with w constant is w itself.
      (g as Mat).forEach((row, i) => row.forEach((x, t) => expect(x).toBeCloseTo(w[i]![t]!, 6)));
      tf.dispose([old, beh, mask, behVeto]);
    });

    it.each(['ppoToken', 'gspo'] as const)('%s: the TIS veto zeroes the whole sequence’s gradient', async (kind) => {
      const d = randomData(71, 3, 6, [
        [0, 1, 1, 1, 1, 0],
        [0, 1, 1, 1, 1, 1],
        [0, 1, 1, 1, 0, 0],
      ]);
      d.beh[1]![3] = f32(d.old[1]![3]! + 10); // exp(−10) ≈ 4.5e-5 < 1e-4
      d.old[2]![5] = f32(-60); // a tiny ratio on a masked-out token must not veto
      const r = await run(d, { kind, tis: { enabled: true } });
      expect(r.grad[1]!.every(isExactlyZero)).toBe(true);
      expect(r.grad[0]!.slice(1, 5).every((g) => g !== 0)).toBe(true);
      expect(r.grad[2]!.slice(1, 4).every((g) => g !== 0)).toBe(true);
      expect(r.stats.tisVetoed).toBe(1);
      expect(r.stats.tisWeightMean).toBeLessThanOrEqual(2);
      const off = await run(d, { kind });
      expect(off.grad[1]!.slice(1).every((g) => g !== 0)).toBe(true);
      expect(off.stats.tisWeightMean).toBeNull();
    });
  });

  describe('masking (§7.5)', () => {
    it.each(['ppoToken', 'gspo'] as const)(
      '%s: masked positions get exactly zero gradient, whatever they hold',
      async (kind) => {
        const d = randomData(81, 4, 8); // garbage (large, positive log-probs) at masked positions
        d.mask[2] = d.mask[2]!.map(() => 0);
        const r = await run(d, { kind, klCoef: 0.1, entCoef: 0.05, tis: { enabled: true } }, { ref: true, ent: true });
        expect(allFinite(r.grad)).toBe(true);
        expect(Number.isFinite(r.loss)).toBe(true);
        expect(allZeroAt(r.grad, (i, t) => d.mask[i]![t] === 0)).toBe(true);
        expect(allZeroAt(r.entGrad!, (i, t) => d.mask[i]![t] === 0)).toBe(true);
        expect(r.grad.some((row, i) => row.some((g, t) => d.mask[i]![t] === 1 && g !== 0))).toBe(true);
      },
    );

    it.each(['ppoToken', 'gspo'] as const)(
      '%s: a sample with no masked-in token contributes 0, never NaN',
      async (kind) => {
        const d = randomData(82, 3, 5, [
          [0, 1, 1, 0, 0],
          [0, 0, 0, 0, 0],
          [0, 1, 1, 1, 1],
        ]);
        const full = await run(d, { kind, klCoef: 0.1 }, { ref: true });
        const without = await run(
          {
            ...d,
            logp: [d.logp[0]!, d.logp[2]!],
            old: [d.old[0]!, d.old[2]!],
            beh: [d.beh[0]!, d.beh[2]!],
            ref: [d.ref[0]!, d.ref[2]!],
            mask: [d.mask[0]!, d.mask[2]!],
            ent: [d.ent[0]!, d.ent[2]!],
            adv: [d.adv[0]!, d.adv[2]!],
          },
          { kind, klCoef: 0.1 },
          { ref: true },
        );
        expect(full.loss).toBeCloseTo((without.loss * 2) / 3, 6);
        expect(full.grad[1]!.every(isExactlyZero)).toBe(true);
        expect(full.stats.emptySamples).toBe(1);
        const allEmpty = await run({ ...d, mask: d.mask.map((r) => r.map(() => 0)) }, { kind });
        expect(allEmpty.loss).toBe(0);
        expect(allEmpty.stats.tokens).toBe(0);
        expect(allEmpty.stats.ratioMean).toBe(1);
      },
    );
  });

  describe('statistics and inputs', () => {
    it('stats() can be awaited twice; dispose() frees the statistics without reading them', async () => {
      const d = randomData(91, 2, 4, undefined, false);
      const t = [tf.tensor2d(d.logp), tf.tensor2d(d.old), tf.tensor2d(d.mask), tf.tensor1d(d.adv)] as const;
      const before = tf.memory().numTensors;
      const pl = policyLoss({ logp: t[0], oldLogp: t[1], mask: t[2], advantages: t[3] }, { kind: 'ppoToken' });
      const a = await pl.stats();
      expect(await pl.stats()).toEqual(a);
      pl.loss.dispose();
      expect(tf.memory().numTensors).toBe(before);
      const pl2 = policyLoss({ logp: t[0], oldLogp: t[1], mask: t[2], advantages: t[3] }, { kind: 'gspo' });
      pl2.dispose();
      pl2.loss.dispose();
      expect(tf.memory().numTensors).toBe(before);
      await expect(pl2.stats()).rejects.toThrow(/disposed/);
      tf.dispose([...t]);
    });

    it('rejects inputs it cannot use, naming them', () => {
      const x = tf.zeros([2, 3]);
      const a = tf.zeros([2]);
      expect(() =>
        policyLoss({ logp: x, oldLogp: tf.zeros([2, 4]), mask: x, advantages: a }, { kind: 'ppoToken' }),
      ).toThrow(/oldLogp has shape \[2, 4\]/);
      expect(() => policyLoss({ logp: x, oldLogp: x, mask: x, advantages: tf.zeros([3]) }, { kind: 'gspo' })).toThrow(
        /advantages/,
      );
      expect(() => policyLoss({ logp: x, oldLogp: x, mask: x, advantages: a }, { kind: 'gspo', klCoef: 0.1 })).toThrow(
        /refLogp/,
      );
      expect(() =>
        policyLoss({ logp: x, oldLogp: x, mask: x, advantages: a }, { kind: 'gspo', tis: { enabled: true } }),
      ).toThrow(/behLogp/);
      expect(() => policyLoss({ logp: x, oldLogp: x, mask: x, advantages: a }, { kind: 'gspo', entCoef: 0.1 })).toThrow(
        /entropy/,
      );
      expect(() =>
        policyLoss({ logp: x, oldLogp: x, mask: x, advantages: a }, { kind: 'ppoToken', clipLow: 1 }),
      ).toThrow(/clipLow/);
      tf.disposeVariables();
    });
  });
});
