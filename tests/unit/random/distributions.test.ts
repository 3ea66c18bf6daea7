import { describe, expect, it } from 'vitest';
import { Rng } from '../../../engine/random/prng';
import {
  beta,
  categorical,
  drawWithoutReplacementWeighted,
  drawWithReplacementWeighted,
  gamma,
  invGamma,
  normal,
} from '../../../engine/random/distributions';

function moments(draw: () => number, n: number): { mean: number; variance: number; bad: number } {
  let s = 0;
  let s2 = 0;
  let bad = 0;
  for (let i = 0; i < n; i++) {
    const x = draw();
    if (!Number.isFinite(x)) bad++;
    s += x;
    s2 += x * x;
  }
  const mean = s / n;
  return { mean, variance: s2 / n - mean * mean, bad };
}

/** Pearson chi-square of observed counts against expected probabilities. */
function chiSquare(counts: number[], probs: number[]): number {
  const n = counts.reduce((a, b) => a + b, 0);
  return counts.reduce((s, c, i) => s + (c - n * probs[i]!) ** 2 / (n * probs[i]!), 0);
}

// Upper 0.1% points of chi-square, by degrees of freedom.
const CHI2_999: Record<number, number> = { 1: 10.83, 2: 13.82, 3: 16.27, 4: 18.47, 5: 20.52, 11: 31.26 };

describe('sampler moments (docs/algorithms.md §7.15)', () => {
  it('Beta(2,3) has mean 0.4 and variance 0.04, and stays in [0, 1]', () => {
    const rng = new Rng(1);
    const N = 40_000;
    let outside = 0;
    const m = moments(() => {
      const x = beta(rng, 2, 3);
      if (x < 0 || x > 1) outside++;
      return x;
    }, N);
    expect(outside).toBe(0);
    expect(m.bad).toBe(0);
    expect(Math.abs(m.mean - 0.4)).toBeLessThan(5 * Math.sqrt(0.04 / N));
    expect(Math.abs(m.variance - 0.04)).toBeLessThan(0.002);
  });

  it('InvGamma(3, 2) has mean 1', () => {
    const rng = new Rng(2);
    const N = 100_000;
    const m = moments(() => invGamma(rng, 3, 2), N);
    // Var = β²/((α−1)²(α−2)) = 1.
    expect(Math.abs(m.mean - 1)).toBeLessThan(5 * Math.sqrt(1 / N));
  });

  it('Gamma(k, 1) has mean k and variance k for k = 0.5 (the k < 1 path), 1 and 3.5', () => {
    for (const [k, seed] of [
      [0.5, 3],
      [1, 4],
      [3.5, 5],
    ] as const) {
      const rng = new Rng(seed);
      const N = 40_000;
      const m = moments(() => gamma(rng, k), N);
      expect(m.bad).toBe(0);
      expect(Math.abs(m.mean - k)).toBeLessThan(5 * Math.sqrt(k / N));
      expect(Math.abs(m.variance - k) / k).toBeLessThan(0.06);
    }
  });

  it('Beta with tiny shapes gives finite draws in [0, 1] (no 0/0), symmetric about 1/2', () => {
    const rng = new Rng(6);
    const N = 20_000;
    let outside = 0;
    const m = moments(() => {
      const x = beta(rng, 0.01, 0.01);
      if (!(x >= 0 && x <= 1)) outside++;
      return x;
    }, N);
    expect(outside).toBe(0);
    expect(Math.abs(m.mean - 0.5)).toBeLessThan(5 * Math.sqrt(0.25 / N));
  });

  it('normal(mean, std) has that mean and variance', () => {
    const rng = new Rng(7);
    const N = 40_000;
    const m = moments(() => normal(rng, 3, 2), N);
    expect(Math.abs(m.mean - 3)).toBeLessThan(5 * Math.sqrt(4 / N));
    expect(Math.abs(m.variance - 4) / 4).toBeLessThan(0.04);
  });

  it('rejects invalid parameters', () => {
    const rng = new Rng(8);
    expect(() => gamma(rng, 0)).toThrow(/gamma shape/);
    expect(() => beta(rng, 1, -1)).toThrow(/beta b/);
    expect(() => invGamma(rng, 2, 0)).toThrow(/invGamma scale/);
    expect(() => normal(rng, 0, -1)).toThrow(/std/);
  });

  it('is reproducible from the seed', () => {
    const a = new Rng(9);
    const b = new Rng(9);
    expect(Array.from({ length: 50 }, () => beta(a, 2, 5))).toEqual(Array.from({ length: 50 }, () => beta(b, 2, 5)));
  });
});

describe('categorical and weighted draws with replacement', () => {
  const w = [1, 0, 2, 5];
  const p = [1 / 8, 0, 2 / 8, 5 / 8];

  it('categorical frequencies approach w/Σw and zero weights are never drawn', () => {
    const rng = new Rng(10);
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < 40_000; i++) counts[categorical(rng, w)]!++;
    expect(counts[1]).toBe(0);
    expect(chiSquare([counts[0]!, counts[2]!, counts[3]!], [p[0]!, p[2]!, p[3]!])).toBeLessThan(CHI2_999[2]!);
  });

  it('drawWithReplacementWeighted frequencies approach w/Σw (§7.8)', () => {
    const rng = new Rng(11);
    const counts = [0, 0, 0, 0];
    for (const i of drawWithReplacementWeighted(rng, w, 40_000)) counts[i]!++;
    expect(counts[1]).toBe(0);
    expect(chiSquare([counts[0]!, counts[2]!, counts[3]!], [p[0]!, p[2]!, p[3]!])).toBeLessThan(CHI2_999[2]!);
    expect(drawWithReplacementWeighted(rng, w, 0)).toEqual([]);
  });

  it('rejects weights that cannot be drawn from', () => {
    const rng = new Rng(12);
    expect(() => categorical(rng, [])).toThrow(/no weights/);
    expect(() => categorical(rng, [0, 0])).toThrow(/all weights are 0/);
    expect(() => categorical(rng, [1, -1])).toThrow(/weight 1 is -1/);
    expect(() => drawWithReplacementWeighted(rng, [1, Number.NaN], 3)).toThrow(/weight 1 is NaN/);
  });
});

describe('drawWithoutReplacementWeighted (Efraimidis–Spirakis, §2.7)', () => {
  it('with k = 1, selection frequencies approach w_i/Σw', () => {
    const rng = new Rng(13);
    const w = [1, 2, 3, 4];
    const counts = [0, 0, 0, 0];
    const N = 40_000;
    for (let i = 0; i < N; i++) counts[drawWithoutReplacementWeighted(rng, w, 1)[0]!]!++;
    expect(
      chiSquare(
        counts,
        w.map((x) => x / 10),
      ),
    ).toBeLessThan(CHI2_999[3]!);
  });

  it('with k = 2, ordered pairs follow successive weighted draws without replacement', () => {
    const rng = new Rng(14);
    const w = [1, 2, 3];
    const W = 6;
    const pairs: [number, number][] = [
      [0, 1],
      [0, 2],
      [1, 0],
      [1, 2],
      [2, 0],
      [2, 1],
    ];
    const probs = pairs.map(([i, j]) => (w[i]! / W) * (w[j]! / (W - w[i]!)));
    const counts = pairs.map(() => 0);
    for (let n = 0; n < 30_000; n++) {
      const [i, j] = drawWithoutReplacementWeighted(rng, w, 2) as [number, number];
      counts[pairs.findIndex(([a, b]) => a === i && b === j)]!++;
    }
    expect(counts.reduce((a, b) => a + b, 0)).toBe(30_000);
    expect(chiSquare(counts, probs)).toBeLessThan(CHI2_999[5]!);
  });

  it('returns distinct indices, never a zero-weight one, and a permutation when k = number of positive weights', () => {
    const rng = new Rng(15);
    for (let n = 0; n < 200; n++) {
      const got = drawWithoutReplacementWeighted(rng, [0.5, 0, 3, 1e-6, 2], 4);
      expect([...got].sort()).toEqual([0, 2, 3, 4]);
    }
    expect(drawWithoutReplacementWeighted(rng, [1, 2], 0)).toEqual([]);
  });

  it('refuses to draw more distinct items than have positive weight', () => {
    expect(() => drawWithoutReplacementWeighted(new Rng(16), [1, 0, 1], 3)).toThrow(/only 2 of 3 have a weight > 0/);
    expect(() => drawWithoutReplacementWeighted(new Rng(16), [1, 1], -1)).toThrow(/integer ≥ 0/);
  });

  it('is reproducible from the seed', () => {
    const w = [3, 1, 4, 1, 5, 9, 2, 6];
    expect(drawWithoutReplacementWeighted(new Rng(17), w, 5)).toEqual(
      drawWithoutReplacementWeighted(new Rng(17), w, 5),
    );
  });
});
