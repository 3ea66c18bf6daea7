import { describe, expect, it } from 'vitest';
import { binomialHalfCdf, mcnemar, pairedBootstrap } from '../../../engine/scoring/pairedStats';
import { Rng } from '../../../engine/random/prng';

/** Paired outcomes with the given counts of (a, b) = (✗,✓), (✓,✗), (✓,✓), (✗,✗). */
function pairs(n01: number, n10: number, n11: number, n00: number): [boolean[], boolean[]] {
  const a: boolean[] = [];
  const b: boolean[] = [];
  const add = (k: number, x: boolean, y: boolean) => {
    for (let i = 0; i < k; i++) {
      a.push(x);
      b.push(y);
    }
  };
  add(n01, false, true);
  add(n10, true, false);
  add(n11, true, true);
  add(n00, false, false);
  return [a, b];
}

/** P(X ≤ k), X ~ Bin(n, 1/2), in exact integer arithmetic, converted to a float at the end. */
function exactHalfCdf(k: number, n: number): number {
  let c = 1n;
  let s = 0n;
  for (let i = 0; i <= k; i++) {
    s += c;
    c = (c * BigInt(n - i)) / BigInt(i + 1);
  }
  const den = 1n << BigInt(n);
  let e = 0n;
  while ((s << e) / den < 1n << 53n) e++;
  return Number((s << e) / den) / 2 ** Number(e);
}

describe('mcnemar (exact)', () => {
  it('matches the hand-computed example n01 = 10, n10 = 2 → p = 2·(1+12+66)/4096 ≈ 0.0386', () => {
    const [a, b] = pairs(10, 2, 30, 8);
    const r = mcnemar(a, b);
    expect(r.n01).toBe(10);
    expect(r.n10).toBe(2);
    expect(r.pValue).toBeCloseTo((2 * 79) / 4096, 12);
    expect(r.pValue).toBeCloseTo(0.0386, 4);
  });

  it('is symmetric in the direction of the difference', () => {
    const [a, b] = pairs(10, 2, 5, 5);
    expect(mcnemar(b, a)).toEqual({ n01: 2, n10: 10, pValue: mcnemar(a, b).pValue });
  });

  it('gives p = 1 when the discordant pairs balance, or when there are none', () => {
    expect(mcnemar(...pairs(7, 7, 3, 3)).pValue).toBe(1);
    expect(mcnemar(...pairs(0, 0, 20, 4)).pValue).toBe(1);
    expect(mcnemar([], []).pValue).toBe(1);
    expect(mcnemar(...pairs(6, 5, 0, 0)).pValue).toBe(1);
  });

  it('ignores agreeing pairs: only the discordant ones carry information', () => {
    expect(mcnemar(...pairs(9, 1, 0, 0)).pValue).toBe(mcnemar(...pairs(9, 1, 500, 300)).pValue);
    expect(mcnemar(...pairs(9, 1, 0, 0)).pValue).toBeCloseTo((2 * 11) / 1024, 14);
  });

  it('stays accurate for thousands of discordant pairs (no overflow or underflow)', () => {
    for (const [k, n] of [
      [2400, 5000],
      [2500, 5000],
      [1000, 3000],
      [150, 1000],
    ] as const) {
      const want = exactHalfCdf(k, n);
      const got = binomialHalfCdf(k, n);
      expect(Number.isFinite(got)).toBe(true);
      expect(Math.abs(got - want) / want, `k=${k} n=${n}`).toBeLessThan(1e-9);
    }
    const r = mcnemar(...pairs(2600, 2400, 0, 0));
    expect(r.pValue).toBeGreaterThan(0.004);
    expect(r.pValue).toBeLessThan(0.006); // normal approximation: 2·Φ(−200/√5000) ≈ 0.0047
    expect(mcnemar(...pairs(3000, 0, 0, 0)).pValue).toBe(0); // 2^−2999 is below the smallest double
  });

  it('refuses outcomes of different lengths', () => {
    expect(() => mcnemar([true], [true, false])).toThrow(/same items/);
  });
});

describe('pairedBootstrap', () => {
  /** Scores where b beats a by `delta` on average, with item-level variation shared by both. */
  function synthetic(n: number, delta: number, seed: number): [number[], number[]] {
    const rng = new Rng(seed);
    const a: number[] = [];
    const b: number[] = [];
    for (let i = 0; i < n; i++) {
      const difficulty = rng.normal();
      a.push(difficulty + 0.3 * rng.normal());
      b.push(difficulty + delta + 0.3 * rng.normal());
    }
    return [a, b];
  }
  const rngOf = (seed: number) => {
    const r = new Rng(seed);
    return () => r.next();
  };

  it('gives the mean difference b − a and an interval that contains the true difference', () => {
    const [a, b] = synthetic(400, 0.1, 11);
    const r = pairedBootstrap(a, b, { rng: rngOf(1) });
    const mean = b.reduce((s, x, i) => s + x - a[i]!, 0) / a.length;
    expect(r.meanDiff).toBeCloseTo(mean, 12);
    expect(r.low).toBeLessThan(0.1);
    expect(r.high).toBeGreaterThan(0.1);
    expect(r.low).toBeGreaterThan(0); // a real difference of 0.1 with σ_d ≈ 0.42 and n = 400 is resolved
    expect(r.low).toBeLessThan(r.meanDiff);
    expect(r.high).toBeGreaterThan(r.meanDiff);
  });

  it('is narrower with more items and wider at higher confidence', () => {
    const [a1, b1] = synthetic(50, 0.1, 3);
    const [a2, b2] = synthetic(2000, 0.1, 3);
    const small = pairedBootstrap(a1, b1, { rng: rngOf(2) });
    const large = pairedBootstrap(a2, b2, { rng: rngOf(2) });
    expect(large.high - large.low).toBeLessThan((small.high - small.low) / 3); // ≈ √40 ≈ 6.3 times narrower
    const c99 = pairedBootstrap(a1, b1, { rng: rngOf(2), confidence: 0.99 });
    expect(c99.high - c99.low).toBeGreaterThan(small.high - small.low);
  });

  it('has about the nominal width: ±1.96 standard errors at 95%', () => {
    const [a, b] = synthetic(1000, 0, 5);
    const d = b.map((x, i) => x - a[i]!);
    const m = d.reduce((s, x) => s + x, 0) / d.length;
    const se = Math.sqrt(d.reduce((s, x) => s + (x - m) ** 2, 0) / (d.length - 1) / d.length);
    const r = pairedBootstrap(a, b, { rng: rngOf(9), resamples: 4000 });
    expect((r.high - r.low) / (2 * 1.96 * se)).toBeGreaterThan(0.9);
    expect((r.high - r.low) / (2 * 1.96 * se)).toBeLessThan(1.1);
  });

  it('is reproducible with a seeded generator and collapses when there is no difference', () => {
    const [a, b] = synthetic(100, 0.2, 8);
    expect(pairedBootstrap(a, b, { rng: rngOf(4) })).toEqual(pairedBootstrap(a, b, { rng: rngOf(4) }));
    expect(pairedBootstrap(a, a, { rng: rngOf(4) })).toEqual({ meanDiff: 0, low: 0, high: 0 });
  });

  it('refuses empty or unpaired inputs and bad options', () => {
    expect(() => pairedBootstrap([], [], { rng: Math.random })).toThrow(/no items/);
    expect(() => pairedBootstrap([1], [1, 2], { rng: Math.random })).toThrow(/same items/);
    expect(() => pairedBootstrap([1], [2], { rng: Math.random, confidence: 1 })).toThrow(/confidence/);
    expect(() => pairedBootstrap([1], [2], { rng: Math.random, resamples: 0 })).toThrow(/resamples/);
  });
});
