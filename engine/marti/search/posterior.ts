/**
 * Posteriors for AB-MCTS-A's Thompson sampling (docs/algorithms.md §3.5), following SakanaAI/treequest
 * `src/treequest/algos/ab_mcts_a/prob_state.py` (`ProbabilisticDist`).
 *
 * A posterior is plain data (so trees serialise to `trajectories.jsonl` and snapshot cleanly); the functions here
 * observe into it, compute its closed-form parameters, and draw from it with an explicit seeded `Rng` (§1.4).
 *
 * - Beta (`'beta'`, mars-lab default): prior a = b = 0.5 (Jeffreys); observing s ∈ [0,1] adds s to a and 1 − s to b.
 * - Normal-Inverse-Gamma (`'gaussian'`, the release's default): prior m0 = 0, κ0 = 1, ν0 = 1, τ0² = 0.1; running n,
 *   Σx, Σx² (§3.5 [D]) give the closed form of Murphy, *PML: Advanced Topics* §3.4.3.3, and a draw is
 *   σ² ~ InvGamma(νn/2, νn·τn²/2), μ ~ Normal(mn, σ²/κn), returning μ.
 */
import type { Rng } from '../../random/prng';
import { beta as betaDraw, invGamma, normal } from '../../random/distributions';

export type PosteriorKind = 'beta' | 'gaussian';

export interface BetaPrior {
  a: number;
  b: number;
}

export interface GaussianPrior {
  m: number;
  kappa: number;
  nu: number;
  tau2: number;
}

/** §3.5: Jeffreys prior. */
export const DEFAULT_BETA_PRIOR: Readonly<BetaPrior> = Object.freeze({ a: 0.5, b: 0.5 });
/** §3.5: treequest's `GaussianPrior` defaults. */
export const DEFAULT_GAUSSIAN_PRIOR: Readonly<GaussianPrior> = Object.freeze({ m: 0, kappa: 1, nu: 1, tau2: 0.1 });

export interface PosteriorConfig {
  kind: PosteriorKind;
  betaPrior: BetaPrior;
  gaussianPrior: GaussianPrior;
}

export function defaultPosteriorConfig(kind: PosteriorKind = 'beta'): PosteriorConfig {
  return { kind, betaPrior: { ...DEFAULT_BETA_PRIOR }, gaussianPrior: { ...DEFAULT_GAUSSIAN_PRIOR } };
}

/** Beta posterior: its current shape parameters (prior included). */
export interface BetaPosterior {
  kind: 'beta';
  a: number;
  b: number;
  /** Number of observations (for inspection and for "is this arm tried" questions). */
  n: number;
}

/** NIG posterior as sufficient statistics of the observations; the prior lives in the config. */
export interface GaussianPosterior {
  kind: 'gaussian';
  n: number;
  sum: number;
  sumSq: number;
}

export type Posterior = BetaPosterior | GaussianPosterior;

/** The NIG posterior's parameters after the observations (§3.5 equations). */
export interface GaussianParams {
  m: number;
  kappa: number;
  nu: number;
  tau2: number;
}

function checkPrior(cfg: PosteriorConfig): void {
  if (cfg.kind === 'beta') {
    const { a, b } = cfg.betaPrior;
    if (!(a > 0 && b > 0 && Number.isFinite(a) && Number.isFinite(b))) {
      throw new Error(`Beta prior needs a > 0 and b > 0, got a=${a}, b=${b}.`);
    }
  } else if (cfg.kind === 'gaussian') {
    const { m, kappa, nu, tau2 } = cfg.gaussianPrior;
    if (!Number.isFinite(m) || !(kappa > 0) || !(nu > 0) || !(tau2 > 0)) {
      throw new Error(
        `Gaussian (NIG) prior needs finite m and κ, ν, τ² > 0, got m=${m}, κ=${kappa}, ν=${nu}, τ²=${tau2}.`,
      );
    }
  } else {
    throw new Error(`Unknown posterior kind '${(cfg as { kind: string }).kind}'; use 'beta' or 'gaussian'.`);
  }
}

/** A fresh posterior equal to the prior. */
export function newPosterior(cfg: PosteriorConfig): Posterior {
  checkPrior(cfg);
  if (cfg.kind === 'beta') return { kind: 'beta', a: cfg.betaPrior.a, b: cfg.betaPrior.b, n: 0 };
  return { kind: 'gaussian', n: 0, sum: 0, sumSq: 0 };
}

/** Adds one observation in place. Beta observations must lie in [0, 1] (clamp before calling where §3.10 says so). */
export function observe(p: Posterior, x: number): void {
  if (!Number.isFinite(x)) throw new Error(`Posterior observation must be finite, got ${x}.`);
  if (p.kind === 'beta') {
    if (x < 0 || x > 1) {
      throw new Error(
        `Beta posterior observation must be in [0, 1], got ${x}. Scores outside [0, 1] need posterior: 'gaussian'.`,
      );
    }
    p.a += x;
    p.b += 1 - x;
    p.n += 1;
  } else {
    p.n += 1;
    p.sum += x;
    p.sumSq += x * x;
  }
}

/** §3.5's closed form: κn, νn, mn, τn² from the prior and (n, Σx, Σx²). */
export function gaussianParams(p: GaussianPosterior, prior: GaussianPrior): GaussianParams {
  const { m: m0, kappa: k0, nu: nu0, tau2: t0 } = prior;
  const n = p.n;
  if (n === 0) return { m: m0, kappa: k0, nu: nu0, tau2: t0 };
  const mean = p.sum / n;
  // S = Σ(x_i − x̄)² = Σx² − n·x̄²; clamped because cancellation can leave a tiny negative for equal observations.
  const S = Math.max(0, p.sumSq - n * mean * mean);
  const kappa = k0 + n;
  const nu = nu0 + n;
  const m = (k0 * m0 + n * mean) / kappa;
  const tau2 = (nu0 * t0 + S + ((n * k0) / (k0 + n)) * (m0 - mean) * (m0 - mean)) / nu;
  return { m, kappa, nu, tau2 };
}

/** One Thompson draw. */
export function drawPosterior(p: Posterior, cfg: PosteriorConfig, rng: Rng): number {
  if (p.kind === 'beta') return betaDraw(rng, p.a, p.b);
  const g = gaussianParams(p, cfg.gaussianPrior);
  const sigma2 = invGamma(rng, g.nu / 2, (g.nu * g.tau2) / 2);
  return normal(rng, g.m, Math.sqrt(sigma2 / g.kappa));
}

/** The posterior mean of the arm's value: a/(a+b) for Beta, mn for NIG. */
export function posteriorMean(p: Posterior, cfg: PosteriorConfig): number {
  if (p.kind === 'beta') return p.a / (p.a + p.b);
  return gaussianParams(p, cfg.gaussianPrior).m;
}

/** A JSON-friendly summary for inspection (stored on each node at expansion time). */
export type PosteriorSummary =
  | { kind: 'beta'; n: number; a: number; b: number; mean: number }
  | { kind: 'gaussian'; n: number; m: number; kappa: number; nu: number; tau2: number; mean: number };

export function summarizePosterior(p: Posterior, cfg: PosteriorConfig): PosteriorSummary {
  if (p.kind === 'beta') return { kind: 'beta', n: p.n, a: p.a, b: p.b, mean: p.a / (p.a + p.b) };
  const g = gaussianParams(p, cfg.gaussianPrior);
  return { kind: 'gaussian', n: p.n, m: g.m, kappa: g.kappa, nu: g.nu, tau2: g.tau2, mean: g.m };
}

export function clonePosterior(p: Posterior): Posterior {
  return { ...p };
}
