/**
 * Balanced sampling of one question's System 1 samples to G, for a 1:1 ratio with System 2 (docs/algorithms.md §2.7).
 * It only chooses indices: advantages were computed on the full pool beforehand and are never recomputed.
 */
import { drawWithoutReplacementWeighted, drawWithReplacementWeighted } from '../random/distributions';
import type { Rng } from '../random/prng';

/** Config key `balance`: 'uniform' (default), 'advWeighted' (w = |A| + δ), or 'off' (keep all M). */
export type BalanceMode = 'uniform' | 'advWeighted' | 'off';

export interface BalanceOptions {
  mode: BalanceMode;
  /** δ of the advWeighted weights; default 1e-3. */
  delta?: number;
  /** The run's sub-sampling stream (§1.4). */
  rng: Rng;
}

/**
 * Where the §6.4 ablation `precompute: false` ("resample first, then normalise") belongs: NOT here. With
 * `precompute: true` (default) the trainer calls poolAdvantages on the full pools, then balanceSys1 on those
 * advantages. With `precompute: false` the trainer should call balanceSys1 first (advantages are not known yet,
 * so pass any length-M array such as zeros: 'uniform' and 'off' read only its length), then z-score the rewards of
 * the kept samples, duplicates counted as they appear in the batch. 'advWeighted' with `precompute: false` is circular and should be
 * rejected by the config schema.
 */
export interface PrecomputeSetting {
  precompute: boolean;
}

/**
 * §2.7: M = 0 → []; 'off' → all M once; M ≥ G → G distinct indices (Efraimidis–Spirakis when weighted), ascending;
 * M < G → every index once, in order, then G − M drawn with replacement.
 * Weights are 1 ('uniform') or |A_i| + δ ('advWeighted').
 */
export function balanceSys1(advantages: readonly number[], G: number, opts: BalanceOptions): number[] {
  if (!Number.isInteger(G) || G < 1) throw new Error(`balanceSys1: G must be a whole number ≥ 1, got ${G}.`);
  advantages.forEach((a, i) => {
    if (!Number.isFinite(a)) throw new Error(`balanceSys1: advantage ${i} is ${a}; advantages must be finite.`);
  });
  const delta = opts.delta ?? 1e-3;
  // δ > 0 keeps every weight positive, so all-zero advantages (all-equal rewards) still give G distinct candidates.
  if (!(delta > 0) || !Number.isFinite(delta)) {
    throw new Error(`balanceSys1: delta must be a finite number > 0, got ${delta}.`);
  }
  const M = advantages.length;
  if (M === 0) return [];
  const all = Array.from({ length: M }, (_, i) => i);
  let weights: number[];
  switch (opts.mode) {
    case 'off':
      return all;
    case 'uniform':
      weights = advantages.map(() => 1);
      break;
    case 'advWeighted':
      weights = advantages.map((a) => Math.abs(a) + delta);
      break;
    default: {
      const never: never = opts.mode;
      throw new Error(`balanceSys1: unknown mode ${String(never)}; expected 'uniform', 'advWeighted' or 'off'.`);
    }
  }
  if (M >= G) {
    // Ascending keeps the pool's order; which samples are kept is all that matters, and the batch is shuffled later.
    return drawWithoutReplacementWeighted(opts.rng, weights, G).sort((a, b) => a - b);
  }
  return [...all, ...drawWithReplacementWeighted(opts.rng, weights, G - M)];
}
