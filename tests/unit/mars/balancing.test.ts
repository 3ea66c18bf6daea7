import { describe, expect, it } from 'vitest';
import { type BalanceMode, balanceSys1 } from '../../../engine/mars/balancing';
import { Rng } from '../../../engine/random/prng';

/** Pearson chi-square of observed counts against expected probabilities. */
function chiSquare(counts: number[], probs: number[]): number {
  const n = counts.reduce((a, b) => a + b, 0);
  return counts.reduce((s, c, i) => s + (c - n * probs[i]!) ** 2 / (n * probs[i]!), 0);
}

// Upper 0.1% points of chi-square, by degrees of freedom.
const CHI2_999: Record<number, number> = { 3: 16.27, 4: 18.47, 5: 20.52 };

const modes: BalanceMode[] = ['uniform', 'advWeighted', 'off'];

describe('balancing counts (docs/algorithms.md §2.7, §7.7)', () => {
  it('M = 0 gives no samples in every mode', () => {
    for (const mode of modes) expect(balanceSys1([], 8, { mode, rng: new Rng(1) })).toEqual([]);
  });

  it("'off' keeps all M samples once, whatever G", () => {
    const adv = [0.5, -1, 0, 2, 0.1];
    expect(balanceSys1(adv, 2, { mode: 'off', rng: new Rng(1) })).toEqual([0, 1, 2, 3, 4]);
    expect(balanceSys1(adv, 9, { mode: 'off', rng: new Rng(1) })).toEqual([0, 1, 2, 3, 4]);
  });

  it('random pools: G samples when M ≥ 1, distinct when M ≥ G, every original once when M < G, advantages untouched', () => {
    const rng = new Rng(42);
    for (let t = 0; t < 1500; t++) {
      const M = rng.int(21);
      const G = 1 + rng.int(12);
      const mode = (['uniform', 'advWeighted'] as const)[rng.int(2)]!;
      const adv = Object.freeze(Array.from({ length: M }, () => (rng.next() < 0.3 ? 0 : rng.normal())));
      const copy = [...adv];
      const idx = balanceSys1(adv, G, { mode, rng });
      expect(adv).toEqual(copy);
      expect(idx.length).toBe(M === 0 ? 0 : G);
      for (const i of idx) {
        expect(Number.isInteger(i) && i >= 0 && i < M).toBe(true);
        // The advantage attached to a kept sample is the one computed on the full pool.
        expect(copy).toContain(adv[i]);
      }
      const distinct = new Set(idx);
      if (M >= G) {
        expect(distinct.size).toBe(G);
        expect(idx).toEqual([...idx].sort((a, b) => a - b));
      } else if (M > 0) {
        expect(idx.slice(0, M)).toEqual(Array.from({ length: M }, (_, i) => i));
        expect(distinct.size).toBe(M);
      }
    }
  });

  it('all-zero advantages (all-equal rewards) still balance under advWeighted, thanks to δ > 0', () => {
    const idx = balanceSys1([0, 0, 0, 0, 0], 3, { mode: 'advWeighted', rng: new Rng(3) });
    expect(new Set(idx).size).toBe(3);
    // M = 1 (singleton, A1 = 0): duplicated to G.
    expect(balanceSys1([0], 4, { mode: 'advWeighted', rng: new Rng(3) })).toEqual([0, 0, 0, 0]);
    expect(balanceSys1([0], 4, { mode: 'uniform', rng: new Rng(3) })).toEqual([0, 0, 0, 0]);
  });

  it('is reproducible from the seed', () => {
    const adv = [0.3, -1.2, 0.7, 0, 2.1, -0.4, 0.9];
    for (const mode of ['uniform', 'advWeighted'] as const) {
      for (const G of [3, 12]) {
        expect(balanceSys1(adv, G, { mode, rng: new Rng(8) })).toEqual(balanceSys1(adv, G, { mode, rng: new Rng(8) }));
      }
    }
  });

  it('rejects bad arguments', () => {
    const rng = new Rng(1);
    expect(() => balanceSys1([1], 0, { mode: 'uniform', rng })).toThrow(/G must be/);
    expect(() => balanceSys1([1], 2.5, { mode: 'uniform', rng })).toThrow(/G must be/);
    expect(() => balanceSys1([1, Number.NaN], 2, { mode: 'uniform', rng })).toThrow(/advantage 1 is NaN/);
    expect(() => balanceSys1([1], 2, { mode: 'advWeighted', delta: 0, rng })).toThrow(/delta/);
  });
});

describe('weighted draws (docs/algorithms.md §2.7, §7.8)', () => {
  const adv = [0, 0.5, -1, 2, -0.25];
  const delta = 0.01;
  const w = adv.map((a) => Math.abs(a) + delta);
  const W = w.reduce((a, b) => a + b, 0);

  it('advWeighted draws with replacement (M < G) select each sample with frequency → w_i/Σw', () => {
    const rng = new Rng(100);
    const G = 8;
    const counts = adv.map(() => 0);
    for (let t = 0; t < 20_000; t++) {
      // The first M entries are the originals; the rest are the weighted draws.
      for (const i of balanceSys1(adv, G, { mode: 'advWeighted', delta, rng }).slice(adv.length)) counts[i]!++;
    }
    expect(counts.reduce((a, b) => a + b, 0)).toBe(20_000 * (G - adv.length));
    expect(
      chiSquare(
        counts,
        w.map((x) => x / W),
      ),
    ).toBeLessThan(CHI2_999[4]!);
    // The test has power: uniform frequencies would be rejected.
    expect(
      chiSquare(
        counts,
        w.map(() => 1 / w.length),
      ),
    ).toBeGreaterThan(1000);
  });

  it('uniform draws with replacement are uniform', () => {
    const rng = new Rng(101);
    const counts = adv.map(() => 0);
    for (let t = 0; t < 10_000; t++) {
      for (const i of balanceSys1(adv, 9, { mode: 'uniform', rng }).slice(adv.length)) counts[i]!++;
    }
    expect(
      chiSquare(
        counts,
        adv.map(() => 1 / adv.length),
      ),
    ).toBeLessThan(CHI2_999[4]!);
  });

  it('advWeighted without replacement (M ≥ G = 1) picks sample i with probability w_i/Σw', () => {
    const rng = new Rng(102);
    const counts = adv.map(() => 0);
    for (let t = 0; t < 20_000; t++) counts[balanceSys1(adv, 1, { mode: 'advWeighted', delta, rng })[0]!]!++;
    expect(
      chiSquare(
        counts,
        w.map((x) => x / W),
      ),
    ).toBeLessThan(CHI2_999[4]!);
  });

  it('uniform without replacement includes each sample with probability G/M', () => {
    const rng = new Rng(103);
    const M = adv.length;
    const G = 2;
    const N = 20_000;
    const counts = adv.map(() => 0);
    for (let t = 0; t < N; t++) for (const i of balanceSys1(adv, G, { mode: 'uniform', rng })) counts[i]!++;
    const p = G / M;
    for (const c of counts) expect(Math.abs(c / N - p)).toBeLessThan(5 * Math.sqrt((p * (1 - p)) / N));
  });
});
