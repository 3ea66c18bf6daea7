/**
 * Paired statistics for two checkpoints evaluated on the same items (`compare`). Pairing matters: both see the same
 * items, so the item-to-item variation that unpaired tests count as noise cancels, and smaller differences show.
 */

export interface McNemarResult {
  /** Items `a` got wrong and `b` got right. */
  n01: number;
  /** Items `a` got right and `b` got wrong. */
  n10: number;
  /** Exact two-sided binomial test of n01 against n01 + n10 discordant pairs at p = 1/2; 1 when there are none. */
  pValue: number;
}

function checkPaired(a: readonly unknown[], b: readonly unknown[], what: string): void {
  if (a.length !== b.length) {
    throw new RangeError(
      `${what}: the two checkpoints were scored on ${a.length} and ${b.length} items; pairing needs the same items`,
    );
  }
}

/**
 * P(X ≤ k) for X ~ Binomial(n, 1/2). Summed downwards from k as ratios to the k-th term, which is taken in log space,
 * so that n in the thousands neither underflows 2^−n nor overflows the binomial coefficient.
 */
export function binomialHalfCdf(k: number, n: number): number {
  if (k < 0) return 0;
  if (k >= n) return 1;
  let logTermK = -n * Math.LN2; // log C(n, k) − n log 2
  for (let j = 1; j <= k; j++) logTermK += Math.log((n - k + j) / j);
  let sum = 0;
  let ratio = 1; // term i / term k
  for (let i = k; i >= 0; i--) {
    sum += ratio;
    if (ratio < sum * 1e-17) break;
    ratio *= i / (n - i + 1); // C(n, i−1) / C(n, i)
  }
  return Math.min(1, Math.exp(logTermK + Math.log(sum)));
}

/** McNemar's test on paired right/wrong outcomes, exact (binomial) rather than χ², so it holds for few discordant pairs. */
export function mcnemar(a: readonly boolean[], b: readonly boolean[]): McNemarResult {
  checkPaired(a, b, 'mcnemar');
  let n01 = 0;
  let n10 = 0;
  for (let i = 0; i < a.length; i++) {
    if (!a[i] && b[i]) n01++;
    else if (a[i] && !b[i]) n10++;
  }
  const n = n01 + n10;
  const pValue = n === 0 ? 1 : Math.min(1, 2 * binomialHalfCdf(Math.min(n01, n10), n));
  return { n01, n10, pValue };
}

export interface BootstrapOptions {
  /** Number of resamples (default 2000). */
  resamples?: number;
  /** Coverage of the interval (default 0.95). */
  confidence?: number;
  /** Uniform draws in [0, 1): pass a seeded generator so a comparison is reproducible. */
  rng: () => number;
}

export interface BootstrapInterval {
  /** mean(b − a) over the items: positive when `b` scores higher. */
  meanDiff: number;
  low: number;
  high: number;
}

/** Linear interpolation between order statistics (type 7, as numpy's default percentile). */
function quantileSorted(xs: readonly number[], q: number): number {
  const h = (xs.length - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, xs.length - 1);
  return xs[lo]! + (h - lo) * (xs[hi]! - xs[lo]!);
}

/** Percentile bootstrap interval of the mean paired difference b − a (items resampled with replacement). */
export function pairedBootstrap(a: readonly number[], b: readonly number[], opts: BootstrapOptions): BootstrapInterval {
  checkPaired(a, b, 'pairedBootstrap');
  const n = a.length;
  if (n === 0) throw new RangeError('pairedBootstrap: no items to compare');
  const resamples = opts.resamples ?? 2000;
  const confidence = opts.confidence ?? 0.95;
  if (!Number.isInteger(resamples) || resamples < 1) {
    throw new RangeError(`pairedBootstrap: resamples must be an integer ≥ 1, got ${resamples}`);
  }
  if (!(confidence > 0 && confidence < 1)) {
    throw new RangeError(`pairedBootstrap: confidence must be in (0, 1), got ${confidence}`);
  }
  const d = a.map((x, i) => b[i]! - x);
  const meanDiff = d.reduce((s, x) => s + x, 0) / n;
  const means = new Array<number>(resamples);
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    for (let i = 0; i < n; i++) s += d[Math.min(n - 1, Math.floor(opts.rng() * n))]!;
    means[r] = s / n;
  }
  means.sort((x, y) => x - y);
  const alpha = 1 - confidence;
  return { meanDiff, low: quantileSorted(means, alpha / 2), high: quantileSorted(means, 1 - alpha / 2) };
}
