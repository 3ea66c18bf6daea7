/**
 * MARS²-T+ depth-guided GEN credit (docs/algorithms.md §3.10 (b); the form mars-lab uses is decided in
 * docs/algorithms/tplus.md). A new node at depth d, with c nodes already at that depth, credits its parent's GEN arm
 * with r̄ = ω(d, c)·s, where ω(d, c) = (1 + α·d)/(1 + β·c): deep nodes count more, crowded depths less.
 *
 * Under the Beta posterior the credit acts on pseudo-counts: s·ω is added to a (successes) and 1 − s to b (failures),
 * so a passing deep node raises GEN's credit beyond an unweighted pass, a crowded one raises it less, and a failure
 * counts as it always did. (It used to be ω·s clamped to [0, 1] as one observation, which with 0/1 scores can never
 * exceed an unweighted pass: the depth bonus did nothing and only the crowding penalty acted.) Under the Gaussian
 * posterior ω·s is observed as it is.
 */
import { observe, type Posterior } from './posterior';

/** §3.10 (b): ω(d, c) = (1 + α·d)/(1 + β·c). */
export interface DepthWeighting {
  alpha: number;
  beta: number;
}

/** §4 T+ defaults [D]. */
export const DEFAULT_DEPTH_WEIGHTING: Readonly<DepthWeighting> = Object.freeze({ alpha: 0.5, beta: 0.25 });

/** `true` = the §4 defaults; an object is checked (finite α ≥ 0, β ≥ 0); anything else is off. */
export function parseDepthWeighting(input: DepthWeighting | boolean | null | undefined): DepthWeighting | null {
  if (input === true) return { ...DEFAULT_DEPTH_WEIGHTING };
  if (!input || typeof input !== 'object') return null;
  const { alpha, beta } = input;
  if (!(alpha >= 0) || !(beta >= 0) || !Number.isFinite(alpha) || !Number.isFinite(beta)) {
    throw new Error(`depthWeighting needs finite α ≥ 0 and β ≥ 0, got α=${alpha}, β=${beta}.`);
  }
  return { alpha, beta };
}

/** §3.10 (b): ω(d, c) = (1 + α·d)/(1 + β·c); increasing in d, decreasing in c. */
export function depthWeight(d: number, c: number, w: DepthWeighting): number {
  return (1 + w.alpha * d) / (1 + w.beta * c);
}

/**
 * Credits a GEN posterior with score s at weight ω (docs/algorithms/tplus.md): Beta a += ω·s, b += 1 − s (s in
 * [0, 1]); Gaussian observes ω·s. Returns the credit r̄ = ω·s (what the node records as its GEN observation).
 */
export function observeGenCredit(p: Posterior, s: number, omega: number): number {
  if (!Number.isFinite(s) || !Number.isFinite(omega) || omega < 0) {
    throw new Error(`GEN credit needs a finite score and a finite weight ≥ 0, got s=${s}, ω=${omega}.`);
  }
  const credit = omega * s;
  if (p.kind !== 'beta') {
    observe(p, credit);
    return credit;
  }
  if (s < 0 || s > 1) throw new Error(`Beta posterior observation must be in [0, 1], got ${s}.`);
  p.a += credit;
  p.b += 1 - s;
  p.n += 1;
  return credit;
}
