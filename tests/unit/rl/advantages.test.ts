import { describe, expect, it } from 'vitest';
import { groupAdvantages, groupZScore } from '../../../engine/rl/advantages';
import { Rng } from '../../../engine/random/prng';

/** Exact zero, accepting −0 (Object.is-based matchers would not). */
const allExactlyZero = (xs: number[]): boolean => xs.every((x) => x === 0);

describe('groupZScore (docs/algorithms.md §1.2)', () => {
  it('reproduces the §2.5 worked example: r=[1,0] → ±0.7071 and r=[1,1,1,0] → [0.5,0.5,0.5,−1.5]', () => {
    const a2 = groupZScore([1, 0]);
    expect(a2[0]).toBeCloseTo(Math.SQRT1_2, 5);
    expect(a2[1]).toBeCloseTo(-Math.SQRT1_2, 5);
    const a1 = groupZScore([1, 1, 1, 0]);
    [0.5, 0.5, 0.5, -1.5].forEach((x, i) => expect(a1[i]).toBeCloseTo(x, 5));
  });

  it('uses the unbiased std and adds eps to σ', () => {
    // r = [2, 4, 9]: μ = 5, Σ(r−μ)² = 9 + 1 + 16 = 26, σ = sqrt(26/2) = sqrt(13).
    const s = Math.sqrt(13);
    const z = groupZScore([2, 4, 9], { eps: 0.5 });
    [-3 / (s + 0.5), -1 / (s + 0.5), 4 / (s + 0.5)].forEach((x, i) => expect(z[i]).toBeCloseTo(x, 12));
    const pop = groupZScore([2, 4, 9], { eps: 0, stdMode: 'population' });
    const sp = Math.sqrt(26 / 3);
    [-3 / sp, -1 / sp, 4 / sp].forEach((x, i) => expect(pop[i]).toBeCloseTo(x, 12));
    expect(groupZScore([1, 0], { stdMode: 'population', eps: 0 })).toEqual([1, -1]);
  });

  it('gives exactly zero for all-equal groups, including non-binary values whose float mean differs from them', () => {
    const tenths = [0.1, 0.1, 0.1];
    // The premise of the range test: the float mean is not 0.1, so (r − μ)/(σ + eps) would not be 0.
    expect(tenths.reduce((a, b) => a + b) / 3).not.toBe(0.1);
    expect(allExactlyZero(groupZScore(tenths))).toBe(true);
    const sevenths = new Array(7).fill(0.1);
    expect(sevenths.reduce((a, b) => a + b) / 7).not.toBe(0.1);
    expect(allExactlyZero(groupZScore(sevenths))).toBe(true);
    expect(allExactlyZero(groupZScore([1, 1, 1, 1]))).toBe(true);
    expect(allExactlyZero(groupZScore([0, 0]))).toBe(true);
    expect(allExactlyZero(groupZScore([0.7, 0.7, 0.7], { stdMode: 'population', eps: 1e-9 }))).toBe(true);
  });

  it('treats a spread ≤ 1e-12 as all equal and a larger one as informative', () => {
    expect(allExactlyZero(groupZScore([0.5, 0.5 + 1e-13, 0.5]))).toBe(true);
    const z = groupZScore([0.5, 0.5 + 1e-9, 0.5], { eps: 0 });
    expect(z[1]).toBeGreaterThan(1);
  });

  it('singleton groups: zero by default, r/(1+eps) (mean 0, std 1) in verl mode', () => {
    expect(allExactlyZero(groupZScore([0.8]))).toBe(true);
    expect(allExactlyZero(groupZScore([0.8], { singleton: 'zero' }))).toBe(true);
    expect(groupZScore([0.8], { singleton: 'verl' })[0]).toBeCloseTo(0.8 / (1 + 1e-6), 14);
    expect(groupZScore([0.8], { singleton: 'verl', eps: 0 })).toEqual([0.8]);
    expect(groupZScore([-2], { singleton: 'verl', eps: 0 })).toEqual([-2]);
    expect(groupZScore([])).toEqual([]);
  });

  it('z-scores of non-degenerate groups sum to ≈ 0 and have unit (unbiased) std', () => {
    const rng = new Rng(21);
    for (let g = 0; g < 50; g++) {
      const n = 2 + rng.int(15);
      const r = Array.from({ length: n }, () => (rng.next() < 0.3 ? rng.int(2) : rng.normal()));
      if (Math.max(...r) - Math.min(...r) <= 1e-12) continue;
      const z = groupZScore(r, { eps: 1e-9 });
      const sum = z.reduce((a, b) => a + b, 0);
      expect(Math.abs(sum)).toBeLessThan(1e-9);
      const ss = z.reduce((a, b) => a + b * b, 0);
      expect(Math.sqrt(ss / (n - 1))).toBeCloseTo(1, 6);
    }
  });

  it('rejects non-finite rewards and a bad eps', () => {
    expect(() => groupZScore([1, Number.NaN])).toThrow(/reward 1 is NaN/);
    expect(() => groupZScore([1, 0], { eps: -1 })).toThrow(/eps/);
  });
});

describe('groupAdvantages', () => {
  it('normalises within each group of any size and keeps the input order', () => {
    const ids = ['q1', 'q2', 'q1', 'q3', 'q2', 'q1', 'q2', 'q2'];
    const r = [1, 0.3, 1, 5, 0.3, 0, 0.3, 0.3];
    const a = groupAdvantages(ids, r);
    const q1 = groupZScore([1, 1, 0]);
    expect([a[0], a[2], a[5]]).toEqual(q1);
    expect(allExactlyZero([a[1]!, a[4]!, a[6]!, a[7]!])).toBe(true); // q2: all equal
    expect(a[3]).toBe(0); // q3: singleton
    expect(groupAdvantages(['t', 't'], [1, 0], { eps: 1e-9 })[0]).toBeCloseTo(Math.SQRT1_2, 8);
  });

  it('checks that ids and rewards line up', () => {
    expect(() => groupAdvantages(['a'], [1, 2])).toThrow(/1 group ids but 2 rewards/);
  });
});
