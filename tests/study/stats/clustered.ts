/**
 * Statistics for per-item outcomes whose items are clustered in worlds (issue 17): a study evaluates many items,
 * but items of one world (MARS: one generated world's questions; MARTI: problems whose target starts with the same
 * operation) share what makes them easy or hard, so they are not independent and the usual standard error
 * sd/√n is too small. Everything here resamples or re-signs whole worlds, never single items.
 *
 * - `clusteredMean`: the mean with the naive SE and the cluster-robust SE (CR1: the Liang–Zeger sandwich for a mean,
 *   Var = G/(G−1) · Σ_g (Σ_{i∈g} (y_i − ȳ))² / n², with G worlds and n items).
 * - `clusterBootstrap`: a percentile interval from resampling worlds with replacement (ratio estimator).
 * - `pairedClusterVerdict`: two arms scored on the same items: a sign-flip test on the per-world sums of the paired
 *   differences (exact up to 2^20 worlds' arrangements, Monte Carlo beyond), with its CR1 SE and cluster-bootstrap
 *   interval. Valid when, with no difference between the arms, each world's difference is as likely negative as
 *   positive, and worlds are independent; items inside a world may be correlated in any way.
 * - `unpairedClusterVerdict`: the same comparison ignoring the pairing (a z-test with each arm's CR1 SE), for arms
 *   evaluated on different items, and to show what pairing gains.
 * - `seedAveraged`: one outcome per item, the mean over a run's seeds, so arms with several seeds pair per item.
 */
import { z } from 'zod';
import { DEFAULT_ALPHA, type Verdict, type VerdictResult } from './verdict';

/** One item's outcome in one evaluation: its id, the world it belongs to and its score (0/1, or a fraction). */
export const itemOutcomeSchema = z.strictObject({
  item: z.string().min(1),
  world: z.string().min(1),
  score: z.number().finite(),
});
export type ItemOutcome = z.infer<typeof itemOutcomeSchema>;

/** Uniform draws in [0, 1): pass a seeded generator so a figure is reproducible. */
export type Uniform = () => number;

/** Exact enumeration of world sign assignments up to 2^EXACT_WORLDS; Monte Carlo beyond. */
const EXACT_WORLDS = 20;

export interface ClusteredMean {
  mean: number;
  /** Items and worlds. */
  n: number;
  worlds: number;
  /** sd/√n, as if items were independent. */
  naiveSe: number;
  /** CR1 cluster-robust SE over worlds; NaN with a single world (nothing to estimate it from). */
  clusterSe: number;
}

function checkOutcomes(xs: readonly ItemOutcome[], what: string): void {
  if (xs.length === 0) throw new RangeError(`${what}: no items`);
  for (const x of xs) {
    if (!Number.isFinite(x.score)) throw new RangeError(`${what}: item ${x.item} has a score that is not finite`);
  }
}

/** Items grouped by world, in order of first appearance. */
function byWorld<T extends { world: string }>(xs: readonly T[]): T[][] {
  const m = new Map<string, T[]>();
  for (const x of xs) {
    let g = m.get(x.world);
    if (!g) m.set(x.world, (g = []));
    g.push(x);
  }
  return [...m.values()];
}

/** Mean, naive SE and CR1 cluster-robust SE of item scores. */
export function clusteredMean(xs: readonly ItemOutcome[]): ClusteredMean {
  checkOutcomes(xs, 'clusteredMean');
  const n = xs.length;
  const mean = xs.reduce((s, x) => s + x.score, 0) / n;
  const ss = xs.reduce((s, x) => s + (x.score - mean) ** 2, 0);
  const naiveSe = n > 1 ? Math.sqrt(ss / (n - 1) / n) : NaN;
  const groups = byWorld(xs);
  const G = groups.length;
  const meat = groups.reduce((s, g) => s + g.reduce((t, x) => t + x.score - mean, 0) ** 2, 0);
  const clusterSe = G > 1 ? Math.sqrt(((G / (G - 1)) * meat) / (n * n)) : NaN;
  return { mean, n, worlds: G, naiveSe, clusterSe };
}

export interface ClusterInterval {
  mean: number;
  low: number;
  high: number;
  /** The sd of the resampled means. */
  se: number;
}

function quantileSorted(xs: readonly number[], q: number): number {
  const h = (xs.length - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(lo + 1, xs.length - 1);
  return xs[lo]! + (h - lo) * (xs[hi]! - xs[lo]!);
}

/** Percentile interval of a mean over items from resampling worlds (sums and counts per world: a ratio estimator). */
function bootstrapWorlds(
  sums: readonly number[],
  counts: readonly number[],
  opts: { rng: Uniform; resamples?: number; confidence?: number },
): ClusterInterval {
  const resamples = opts.resamples ?? 2000;
  const confidence = opts.confidence ?? 0.95;
  if (!Number.isInteger(resamples) || resamples < 1) {
    throw new RangeError(`cluster bootstrap: resamples must be an integer ≥ 1, got ${resamples}`);
  }
  if (!(confidence > 0 && confidence < 1)) {
    throw new RangeError(`cluster bootstrap: confidence must be in (0, 1), got ${confidence}`);
  }
  const G = sums.length;
  const total = (xs: readonly number[]) => xs.reduce((s, x) => s + x, 0);
  const mean = total(sums) / total(counts);
  const means = new Array<number>(resamples);
  for (let r = 0; r < resamples; r++) {
    let s = 0;
    let c = 0;
    for (let k = 0; k < G; k++) {
      const g = Math.min(G - 1, Math.floor(opts.rng() * G));
      s += sums[g]!;
      c += counts[g]!;
    }
    means[r] = s / c;
  }
  means.sort((a, b) => a - b);
  const m = total(means) / resamples;
  const se = Math.sqrt(means.reduce((s, x) => s + (x - m) ** 2, 0) / Math.max(1, resamples - 1));
  const alpha = 1 - confidence;
  return { mean, low: quantileSorted(means, alpha / 2), high: quantileSorted(means, 1 - alpha / 2), se };
}

/** Cluster bootstrap over worlds of the mean item score. */
export function clusterBootstrap(
  xs: readonly ItemOutcome[],
  opts: { rng: Uniform; resamples?: number; confidence?: number },
): ClusterInterval {
  checkOutcomes(xs, 'clusterBootstrap');
  const groups = byWorld(xs);
  return bootstrapWorlds(
    groups.map((g) => g.reduce((s, x) => s + x.score, 0)),
    groups.map((g) => g.length),
    opts,
  );
}

/** One item's outcome averaged over the seeds of a run (every seed must have scored the same items). */
export function seedAveraged(perSeed: readonly (readonly ItemOutcome[])[]): ItemOutcome[] {
  if (perSeed.length === 0) throw new RangeError('seedAveraged: no seeds');
  const first = perSeed[0]!;
  checkOutcomes(first, 'seedAveraged');
  return first.map((x, i) => {
    let s = 0;
    for (const [k, seed] of perSeed.entries()) {
      const y = seed[i];
      if (!y || y.item !== x.item || y.world !== x.world) {
        throw new RangeError(`seedAveraged: seed ${k} did not score item ${x.item} (${x.world}) in the same place`);
      }
      s += y.score;
    }
    return { item: x.item, world: x.world, score: s / perSeed.length };
  });
}

export interface PairedDiff {
  item: string;
  world: string;
  /** claimed − other. */
  diff: number;
}

/** Pairs two evaluations by item id: each item must be in both, in the same world. */
export function pairItems(claimed: readonly ItemOutcome[], other: readonly ItemOutcome[]): PairedDiff[] {
  checkOutcomes(claimed, 'pairItems (claimed)');
  checkOutcomes(other, 'pairItems (other)');
  const o = new Map(other.map((x) => [x.item, x]));
  if (o.size !== other.length) throw new RangeError('pairItems: an item id appears twice in the other arm');
  if (claimed.length !== other.length) {
    throw new RangeError(`pairItems: ${claimed.length} and ${other.length} items; pairing needs the same items`);
  }
  return claimed.map((c) => {
    const y = o.get(c.item);
    if (!y) throw new RangeError(`pairItems: item ${c.item} is in one arm only; pairing needs the same items`);
    if (y.world !== c.world) throw new RangeError(`pairItems: item ${c.item} is in world ${c.world} and ${y.world}`);
    return { item: c.item, world: c.world, diff: c.score - y.score };
  });
}

function decide(pClaim: number, pOpposite: number, alpha: number): Verdict {
  if (pClaim <= alpha) return 'holds';
  if (pOpposite <= alpha) return 'does not hold';
  return 'inconclusive';
}

const fmtP = (p: number) => (p < 0.001 ? p.toExponential(1) : p.toFixed(3));

function describe(name: string, r: Omit<VerdictResult, 'test' | 'verdict'>): string {
  const bound =
    r.minP > r.alpha
      ? `; the smallest p this design can reach is ${fmtP(r.minP)}, so it cannot reject at α = ${r.alpha}`
      : '';
  return `${name}, one-sided p = ${fmtP(r.pClaim)} for the claim (${fmtP(r.pOpposite)} against it), α = ${r.alpha}${bound}`;
}

export interface PairedClusterResult extends VerdictResult {
  /** Items and worlds compared. */
  n: number;
  worlds: number;
  /** SEs of the mean difference: as if items were independent, and CR1 over worlds. */
  naiveSe: number;
  clusterSe: number;
  /** Cluster-bootstrap percentile interval of the mean difference. */
  low: number;
  high: number;
}

/**
 * Claim "`claimed` scores higher than `other` on the same items": sign-flip test over worlds of the per-world sums of
 * the paired differences (exact for ≤ 20 worlds, otherwise `draws` Monte Carlo draws with p = (1 + hits)/(1 + draws)).
 */
export function pairedClusterVerdict(
  claimed: readonly ItemOutcome[],
  other: readonly ItemOutcome[],
  opts: { rng: Uniform; alpha?: number; draws?: number; resamples?: number; confidence?: number },
): PairedClusterResult {
  const alpha = opts.alpha ?? DEFAULT_ALPHA;
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`pairedClusterVerdict: alpha must be in (0, 1), got ${alpha}`);
  const pairs = pairItems(claimed, other);
  const n = pairs.length;
  const groups = byWorld(pairs);
  const G = groups.length;
  const sums = groups.map((g) => g.reduce((s, p) => s + p.diff, 0));
  const observed = sums.reduce((s, x) => s + x, 0);
  const tol = 1e-9 * Math.max(1, ...sums.map(Math.abs));
  let ge = 0;
  let le = 0;
  let total: number;
  let exact: boolean;
  if (G <= EXACT_WORLDS) {
    exact = true;
    total = 2 ** G;
    for (let mask = 0; mask < total; mask++) {
      let s = 0;
      for (let g = 0; g < G; g++) s += mask & (1 << g) ? -sums[g]! : sums[g]!;
      if (s >= observed - tol) ge++;
      if (s <= observed + tol) le++;
    }
  } else {
    exact = false;
    const draws = opts.draws ?? 20000;
    for (let r = 0; r < draws; r++) {
      let s = 0;
      for (let g = 0; g < G; g++) s += opts.rng() < 0.5 ? -sums[g]! : sums[g]!;
      if (s >= observed - tol) ge++;
      if (s <= observed + tol) le++;
    }
    // the observed arrangement counts as one of the draws (a valid Monte Carlo p-value)
    ge++;
    le++;
    total = draws + 1;
  }
  const diffs = pairs.map((p) => ({ item: p.item, world: p.world, score: p.diff }));
  const cm = clusteredMean(diffs);
  const boot = bootstrapWorlds(
    sums,
    groups.map((g) => g.length),
    opts,
  );
  // A world whose differences sum to zero takes no part (both signs give the same sum): the smallest p counts the rest.
  const active = sums.filter((s) => Math.abs(s) > tol).length;
  const r = {
    effect: observed / n,
    pClaim: ge / total,
    pOpposite: le / total,
    alpha,
    minP: exact ? 2 ** -active : 1 / total,
  };
  return {
    ...r,
    verdict: decide(r.pClaim, r.pOpposite, alpha),
    test: describe(
      `${exact ? 'exact' : 'Monte Carlo'} sign-flip test over worlds on paired item differences (${n} items in ${G} worlds; mean difference ${cm.mean.toFixed(3)}, cluster SE ${cm.clusterSe.toFixed(3)}, naive SE ${cm.naiveSe.toFixed(3)}, 95% cluster-bootstrap interval ${boot.low.toFixed(3)} to ${boot.high.toFixed(3)})`,
      r,
    ),
    n,
    worlds: G,
    naiveSe: cm.naiveSe,
    clusterSe: cm.clusterSe,
    low: boot.low,
    high: boot.high,
  };
}

/** Φ(x), the standard normal CDF (erfc by Numerical Recipes' Chebyshev fit, relative error < 1.2e-7). */
export function normalCdf(x: number): number {
  const z = Math.abs(x) / Math.SQRT2;
  const t = 1 / (1 + 0.5 * z);
  const erfc =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t *
          (1.00002368 +
            t *
              (0.37409196 +
                t *
                  (0.09678418 +
                    t *
                      (-0.18628806 +
                        t *
                          (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? 1 - erfc / 2 : erfc / 2;
}

/**
 * Claim "`claimed` scores higher than `other`" without pairing: z = (mean_c − mean_o)/√(SE_c² + SE_o²) with each
 * arm's CR1 SE, one-sided normal p-values (a large-sample test: use it with ≥ 10 or so worlds per arm).
 */
export function unpairedClusterVerdict(
  claimed: readonly ItemOutcome[],
  other: readonly ItemOutcome[],
  alpha = DEFAULT_ALPHA,
): VerdictResult {
  if (!(alpha > 0 && alpha < 1)) throw new RangeError(`unpairedClusterVerdict: alpha must be in (0, 1), got ${alpha}`);
  const a = clusteredMean(claimed);
  const b = clusteredMean(other);
  const se = Math.sqrt(a.clusterSe ** 2 + b.clusterSe ** 2);
  const effect = a.mean - b.mean;
  if (!Number.isFinite(se)) {
    throw new RangeError('unpairedClusterVerdict: each arm needs items in at least two worlds for a cluster SE');
  }
  const z = se > 0 ? effect / se : effect > 0 ? Infinity : effect < 0 ? -Infinity : 0;
  const r = { effect, pClaim: 1 - normalCdf(z), pOpposite: normalCdf(z), alpha, minP: 0 };
  return {
    ...r,
    verdict: decide(r.pClaim, r.pOpposite, alpha),
    test: describe(
      `unpaired z-test with cluster-robust SEs (${a.n} items in ${a.worlds} worlds vs ${b.n} in ${b.worlds}; difference ${effect.toFixed(3)} ± ${se.toFixed(3)})`,
      r,
    ),
  };
}

/**
 * Several tests of ONE claim that must agree (e.g. across seeds, and across items on the same runs): it holds when
 * every test rejects for it, does not hold when every test rejects against it, and is inconclusive otherwise (an
 * intersection–union rule: each test keeps its own level, so the whole stays at level α).
 */
export function agreeing(parts: readonly (VerdictResult & { label?: string })[]): { verdict: Verdict; test: string } {
  if (parts.length === 0) throw new RangeError('agreeing: no tests');
  const verdict: Verdict = parts.every((p) => p.verdict === 'holds')
    ? 'holds'
    : parts.every((p) => p.verdict === 'does not hold')
      ? 'does not hold'
      : 'inconclusive';
  return { verdict, test: parts.map((p) => (p.label ? `${p.label}: ${p.test}` : p.test)).join('; ') };
}
