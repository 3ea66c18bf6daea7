/**
 * Verdicts for the studies' claims (issue 17): "holds", "does not hold" or "inconclusive", each decided by a stated
 * test at a stated level, never by a bare comparison of means.
 *
 * A claim says one figure exceeds another. The test is run one-sided in the claim's direction and one-sided against
 * it, each at level α (default 0.05): the claim **holds** when the first rejects, **does not hold** when the second
 * does (the data contradict it), and is **inconclusive** otherwise (no difference this design can detect). Tests:
 * - `itemsVerdict`: two checkpoints right/wrong on the same items: exact McNemar (pairedStats.ts).
 * - `seedsVerdict`: two arms' per-seed figures (independent runs): exact permutation test of the difference of means.
 * - `pairedSeedsVerdict` / `shiftVerdict`: per-seed differences (the same run early vs late, or a gain over a fixed
 *   base figure): exact sign-flip permutation test of their mean against 0.
 * Permutation tests assume nothing about the distribution, but few seeds bound how small p can be (3 vs 3 seeds:
 * 1/20; 3 paired seeds: 1/8): the verdict says so when that bound is above α, since then nothing could reject.
 */
import { binomialHalfCdf } from '../../../engine/scoring/pairedStats';

export type Verdict = 'holds' | 'does not hold' | 'inconclusive';

export interface VerdictResult {
  verdict: Verdict;
  /** The estimated effect in the claim's direction (claimed − other; mean difference; discordant-pair balance). */
  effect: number;
  /** One-sided p-value for the claim's direction, and for the opposite one. */
  pClaim: number;
  pOpposite: number;
  alpha: number;
  /** The smallest p-value the test can give with this many observations. */
  minP: number;
  /** One line naming the test, its sizes, p and α (for a report). */
  test: string;
}

export const DEFAULT_ALPHA = 0.05;
/** Exact enumeration up to this many arrangements; beyond it the studies have no business (≥ 10 seeds per arm). */
const MAX_ARRANGEMENTS = 2_000_000;

const mean = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;
const fmtP = (p: number) => (p < 0.001 ? p.toExponential(1) : p.toFixed(3));

function checkAlpha(alpha: number): void {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`verdict: alpha must be in (0, 1), got ${alpha}`);
}

function checkFinite(xs: readonly number[], what: string): void {
  if (xs.length === 0) throw new RangeError(`verdict: ${what} has no values`);
  if (xs.some((x) => !Number.isFinite(x))) {
    throw new RangeError(`verdict: ${what} has a value that is not a finite number`);
  }
}

function decide(pClaim: number, pOpposite: number, alpha: number): Verdict {
  if (pClaim <= alpha) return 'holds';
  if (pOpposite <= alpha) return 'does not hold';
  return 'inconclusive';
}

function describe(name: string, r: Omit<VerdictResult, 'test' | 'verdict'>): string {
  const bound =
    r.minP > r.alpha
      ? `; the smallest p this design can reach is ${fmtP(r.minP)}, so it cannot reject at α = ${r.alpha}`
      : '';
  return `${name}, one-sided p = ${fmtP(r.pClaim)} for the claim (${fmtP(r.pOpposite)} against it), α = ${r.alpha}${bound}`;
}

/** Binomial coefficient as a float (small arguments). */
function choose(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return Math.round(c);
}

/**
 * Exact two-sample permutation test: every split of the pooled values into groups of |claimed| and |other|.
 * pClaim = P(mean difference ≥ observed), pOpposite = P(≤ observed), ties counted (a small tolerance absorbs rounding).
 */
export function seedsVerdict(
  claimed: readonly number[],
  other: readonly number[],
  alpha = DEFAULT_ALPHA,
): VerdictResult {
  checkAlpha(alpha);
  checkFinite(claimed, 'the claimed arm');
  checkFinite(other, 'the other arm');
  const pooled = [...claimed, ...other];
  const n = claimed.length;
  const N = pooled.length;
  const total = choose(N, n);
  if (total > MAX_ARRANGEMENTS) {
    throw new RangeError(
      `seedsVerdict: ${total} arrangements of ${n} + ${N - n} seeds is more than an exact test enumerates here`,
    );
  }
  const sum = pooled.reduce((s, x) => s + x, 0);
  const diffOf = (sA: number) => sA / n - (sum - sA) / (N - n);
  const observed = diffOf(claimed.reduce((s, x) => s + x, 0));
  const tol = 1e-12 * Math.max(1, ...pooled.map(Math.abs));
  let ge = 0;
  let le = 0;
  // Enumerate the n-subsets by index, with running sums.
  const walk = (start: number, left: number, sA: number): void => {
    if (left === 0) {
      const d = diffOf(sA);
      if (d >= observed - tol) ge++;
      if (d <= observed + tol) le++;
      return;
    }
    for (let i = start; i <= N - left; i++) walk(i + 1, left - 1, sA + pooled[i]!);
  };
  walk(0, n, 0);
  const r = { effect: observed, pClaim: ge / total, pOpposite: le / total, alpha, minP: 1 / total };
  return {
    ...r,
    verdict: decide(r.pClaim, r.pOpposite, alpha),
    test: describe(`exact permutation test over seeds (${n} vs ${N - n})`, r),
  };
}

/**
 * Exact sign-flip test that the mean of `diffs` exceeds 0 (paired differences, or gains over a fixed figure): every
 * assignment of signs to the nonzero differences.
 */
export function shiftVerdict(
  diffs: readonly number[],
  alpha = DEFAULT_ALPHA,
  name = 'exact sign-flip test',
): VerdictResult {
  checkAlpha(alpha);
  checkFinite(diffs, 'the differences');
  const d = diffs.filter((x) => x !== 0);
  const n = d.length;
  if (2 ** n > MAX_ARRANGEMENTS) {
    throw new RangeError(`shiftVerdict: 2^${n} sign assignments is more than an exact test enumerates here`);
  }
  const observed = mean(diffs);
  const total = 2 ** n;
  const tol = 1e-12 * Math.max(1, ...d.map(Math.abs));
  let ge = 0;
  let le = 0;
  for (let mask = 0; mask < total; mask++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += mask & (1 << i) ? -d[i]! : d[i]!;
    const m = s / diffs.length;
    if (m >= observed - tol) ge++;
    if (m <= observed + tol) le++;
  }
  const r = { effect: observed, pClaim: ge / total, pOpposite: le / total, alpha, minP: 1 / total };
  return {
    ...r,
    verdict: decide(r.pClaim, r.pOpposite, alpha),
    test: describe(`${name} (${diffs.length} seeds${n < diffs.length ? `, ${diffs.length - n} ties dropped` : ''})`, r),
  };
}

/** Claim "after > before", per seed (the same run measured twice): sign-flip test on after − before. */
export function pairedSeedsVerdict(
  after: readonly number[],
  before: readonly number[],
  alpha = DEFAULT_ALPHA,
): VerdictResult {
  if (after.length !== before.length) {
    throw new RangeError(
      `pairedSeedsVerdict: ${after.length} and ${before.length} seeds; pairing needs the same seeds`,
    );
  }
  return shiftVerdict(
    after.map((x, i) => x - before[i]!),
    alpha,
    'exact sign-flip test on per-seed differences',
  );
}

/**
 * Claim "`claimed` beats `other` on the same items": exact McNemar, one-sided. n01 = items only `claimed` got right,
 * n10 = items only `other` got right; under no difference n01 ~ Binomial(n01 + n10, 1/2).
 */
export function itemsVerdict(
  claimed: readonly boolean[],
  other: readonly boolean[],
  alpha = DEFAULT_ALPHA,
): VerdictResult {
  checkAlpha(alpha);
  if (claimed.length !== other.length) {
    throw new RangeError(`itemsVerdict: ${claimed.length} and ${other.length} items; pairing needs the same items`);
  }
  let n01 = 0;
  let n10 = 0;
  claimed.forEach((c, i) => {
    if (c && !other[i]) n01++;
    else if (!c && other[i]) n10++;
  });
  const n = n01 + n10;
  // P(X ≥ n01) = P(X ≤ n10) by symmetry of Binomial(n, 1/2).
  const r = {
    effect: claimed.length ? (n01 - n10) / claimed.length : 0,
    pClaim: n === 0 ? 1 : binomialHalfCdf(n10, n),
    pOpposite: n === 0 ? 1 : binomialHalfCdf(n01, n),
    alpha,
    minP: n === 0 ? 1 : 2 ** -n,
  };
  return {
    ...r,
    verdict: decide(r.pClaim, r.pOpposite, alpha),
    test: describe(`exact McNemar test on ${claimed.length} paired items (${n01} vs ${n10} discordant)`, r),
  };
}

/**
 * A claim made of several comparisons (e.g. an ordering a < b < c): it holds when every part holds, does not hold
 * when any part is contradicted, and is inconclusive otherwise. Each part keeps its own level (no correction: every
 * part must reject on its own, which is stricter than one test of the whole).
 */
export function allOf(parts: readonly (VerdictResult & { label?: string })[]): { verdict: Verdict; test: string } {
  if (parts.length === 0) throw new RangeError('allOf: no comparisons');
  const verdict: Verdict = parts.every((p) => p.verdict === 'holds')
    ? 'holds'
    : parts.some((p) => p.verdict === 'does not hold')
      ? 'does not hold'
      : 'inconclusive';
  return { verdict, test: parts.map((p) => (p.label ? `${p.label}: ${p.test}` : p.test)).join('; ') };
}

/** One report line: `- claim: **verdict** (figures; test).`, or "not measurable here" when the figures are missing. */
export function claimLine(claim: string, result: { verdict: Verdict; test: string } | null, figures: string): string {
  if (!result) return `- ${claim}: **not measurable here** (${figures}).`;
  return `- ${claim}: **${result.verdict}** (${figures}; ${result.test}).`;
}
