/**
 * Group-relative advantages (docs/algorithms.md §1.2): the one z-score both trainers call.
 */

export interface ZScoreOptions {
  /** Added to σ. MARS default 1e-6 (verl); MARTI-MARS² uses 1e-9. */
  eps?: number;
  /** 'unbiased' divides by n−1 as torch.std does (default); 'population' by n. */
  stdMode?: 'unbiased' | 'population';
  /** A lone reward: 'zero' (default, no baseline) or 'verl' (mean 0, std 1, so A = r/(1+eps)). */
  singleton?: 'zero' | 'verl';
}

/** Rewards whose spread is at most this are treated as all equal (§1.2): their float mean need not equal them. */
const ALL_EQUAL_RANGE = 1e-12;

/** z(r_1..r_n; eps) of §1.2. Degenerate groups (all equal, or a singleton in 'zero' mode) get exactly 0. */
export function groupZScore(rewards: readonly number[], opts: ZScoreOptions = {}): number[] {
  const eps = opts.eps ?? 1e-6;
  const stdMode = opts.stdMode ?? 'unbiased';
  const singleton = opts.singleton ?? 'zero';
  if (!(eps >= 0) || !Number.isFinite(eps)) {
    throw new Error(`groupZScore: eps must be a finite number ≥ 0, got ${eps}.`);
  }
  rewards.forEach((r, i) => {
    if (!Number.isFinite(r)) throw new Error(`groupZScore: reward ${i} is ${r}; rewards must be finite.`);
  });
  const n = rewards.length;
  if (n === 0) return [];
  if (n === 1) {
    // verl sets mean 0 and std 1 for a singleton, then applies its usual (r − μ)/(σ + eps).
    return singleton === 'verl' ? [rewards[0]! / (1 + eps)] : [0];
  }
  let lo = Infinity;
  let hi = -Infinity;
  for (const r of rewards) {
    if (r < lo) lo = r;
    if (r > hi) hi = r;
  }
  if (hi - lo <= ALL_EQUAL_RANGE) return rewards.map(() => 0);
  let mean = 0;
  for (const r of rewards) mean += r;
  mean /= n;
  let ss = 0;
  for (const r of rewards) ss += (r - mean) * (r - mean);
  const std = Math.sqrt(ss / (stdMode === 'unbiased' ? n - 1 : n));
  return rewards.map((r) => (r - mean) / (std + eps));
}

/**
 * z-scores within each group of arbitrary size (§1.2, §3.12 "never assume a fixed-size reshape"), returned in the
 * order of the input.
 */
export function groupAdvantages(
  groupIds: readonly string[],
  rewards: readonly number[],
  opts: ZScoreOptions = {},
): number[] {
  if (groupIds.length !== rewards.length) {
    throw new Error(`groupAdvantages: ${groupIds.length} group ids but ${rewards.length} rewards.`);
  }
  const members = new Map<string, number[]>();
  groupIds.forEach((g, i) => {
    const list = members.get(g);
    if (list) list.push(i);
    else members.set(g, [i]);
  });
  const out = new Array<number>(rewards.length);
  for (const idx of members.values()) {
    const z = groupZScore(
      idx.map((i) => rewards[i]!),
      opts,
    );
    idx.forEach((i, j) => (out[i] = z[j]!));
  }
  return out;
}
