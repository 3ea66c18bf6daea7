/**
 * Issue 17: study verdicts come from a test at a stated level, not from a bare comparison of means. The studies are
 * hours long, so the verdict functions are checked here on constructed inputs, against brute force, and on the
 * per-seed figures of the MARS study of 2026-11-30 (docs/results/mars.json), where the bare comparison had printed
 * "does not hold" for differences well inside the seed spread.
 */
import { describe, expect, it } from 'vitest';
import {
  allOf,
  claimLine,
  itemsVerdict,
  pairedSeedsVerdict,
  seedsVerdict,
  shiftVerdict,
} from '../../study/stats/verdict';

/** Brute force: every permutation of the pooled values, the first |a| as the claimed group. */
function bruteForceP(a: number[], b: number[]): number {
  const pooled = [...a, ...b];
  const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
  const obs = mean(a) - mean(b);
  let ge = 0;
  let all = 0;
  const permute = (rest: number[], taken: number[]): void => {
    if (!rest.length) {
      all++;
      if (mean(taken.slice(0, a.length)) - mean(taken.slice(a.length)) >= obs - 1e-12) ge++;
      return;
    }
    rest.forEach((x, i) => permute([...rest.slice(0, i), ...rest.slice(i + 1)], [...taken, x]));
  };
  permute(pooled, []);
  return ge / all;
}

describe('study verdicts (issue 17)', () => {
  it('two arms over seeds: the exact permutation p equals brute force', () => {
    const a = [1, 2, 3];
    const b = [0, 2.5, -1];
    const r = seedsVerdict(a, b);
    expect(r.pClaim).toBeCloseTo(bruteForceP(a, b), 12);
    expect(r.pOpposite).toBeCloseTo(bruteForceP(b, a), 12);
    expect(r.minP).toBeCloseTo(1 / 20, 15);
  });

  it('complete separation of 3 vs 3 seeds holds at 0.05 (p = 1/20); the reverse does not hold', () => {
    const hi = [0.3, 0.31, 0.32];
    const lo = [0.1, 0.11, 0.12];
    expect(seedsVerdict(hi, lo)).toMatchObject({ verdict: 'holds', pClaim: 0.05 });
    expect(seedsVerdict(lo, hi)).toMatchObject({ verdict: 'does not hold', pOpposite: 0.05 });
    expect(seedsVerdict(hi, lo, 0.01).verdict).toBe('inconclusive'); // 1/20 > 0.01: this design cannot reject at 0.01
    expect(seedsVerdict(hi, lo, 0.01).test).toMatch(/cannot reject at α = 0.01/);
  });

  it('a higher mean inside the seed spread is inconclusive, not "holds" or "does not hold"', () => {
    // MARS study, held-out exact match per seed: full vs System 1 off (0.086 vs 0.100) and vs frozen (0.086 vs 0.103).
    const full = [0.09166666666666666, 0.11666666666666667, 0.05];
    const off = [0.175, 0.08333333333333333, 0.041666666666666664];
    const frozen = [0.13333333333333333, 0.09166666666666666, 0.08333333333333333];
    expect(seedsVerdict(full, off).verdict).toBe('inconclusive');
    expect(seedsVerdict(full, frozen).verdict).toBe('inconclusive');
    // and a bare comparison in the other direction would have said "holds"
    expect(seedsVerdict([0.101, 0.2, 0.0], [0.1, 0.1, 0.1]).verdict).toBe('inconclusive');
  });

  it('paired seeds: sign-flip p = 1/2^n; 3 seeds can never reject at 0.05, 6 concordant seeds do', () => {
    const r3 = pairedSeedsVerdict([2, 3, 4], [1, 1, 1]);
    expect(r3).toMatchObject({ verdict: 'inconclusive', pClaim: 1 / 8, minP: 1 / 8 });
    expect(r3.test).toMatch(/smallest p this design can reach is 0.125/);
    expect(pairedSeedsVerdict([2, 3, 4, 5, 6, 7], [1, 1, 1, 1, 1, 1])).toMatchObject({
      verdict: 'holds',
      pClaim: 1 / 64,
    });
    expect(pairedSeedsVerdict([1, 1, 1, 1, 1, 1], [2, 3, 4, 5, 6, 7]).verdict).toBe('does not hold');
    // mixed signs: p counts every assignment at least as extreme
    const r = shiftVerdict([3, 1, -1, 2]);
    expect(r.pClaim).toBeCloseTo(3 / 16, 15); // sums ≥ 5 of ±3 ±1 ±1 ±2: 3+1+1+2 = 7, 3+1−1+2 = 5, 3−1+1+2 = 5
    expect(() => pairedSeedsVerdict([1, 2], [1])).toThrow(/same seeds/);
  });

  it('paired items: exact one-sided McNemar', () => {
    // 20 items only the claimed checkpoint got right, 3 only the other: P(X ≥ 20 | Bin(23, ½)) = 2048 / 2^23
    const claimed = [...Array(20).fill(true), ...Array(3).fill(false), ...Array(50).fill(true)];
    const other = [...Array(20).fill(false), ...Array(3).fill(true), ...Array(50).fill(true)];
    const r = itemsVerdict(claimed, other);
    expect(r.verdict).toBe('holds');
    expect(r.pClaim).toBeCloseTo(2048 / 2 ** 23, 15);
    expect(itemsVerdict(other, claimed).verdict).toBe('does not hold');
    expect(itemsVerdict([true, false], [false, true]).verdict).toBe('inconclusive');
  });

  it('an ordering holds only when every comparison holds; report lines state the test and level', () => {
    const yes = seedsVerdict([0.3, 0.31, 0.32], [0.1, 0.11, 0.12]);
    const maybe = seedsVerdict([0.2, 0.1, 0.3], [0.15, 0.25, 0.2]);
    const no = seedsVerdict([0.1, 0.11, 0.12], [0.3, 0.31, 0.32]);
    expect(allOf([yes, yes]).verdict).toBe('holds');
    expect(allOf([yes, maybe]).verdict).toBe('inconclusive');
    expect(allOf([yes, maybe, no]).verdict).toBe('does not hold');
    const line = claimLine('Full MARS beats System 1 off', maybe, '0.200 vs 0.200');
    expect(line).toMatch(
      /^- Full MARS beats System 1 off: \*\*inconclusive\*\* \(0\.200 vs 0\.200; exact permutation test over seeds \(3 vs 3\), one-sided p = .*α = 0\.05\)\.$/,
    );
    expect(claimLine('x', null, 'variant not run')).toBe('- x: **not measurable here** (variant not run).');
  });
});
