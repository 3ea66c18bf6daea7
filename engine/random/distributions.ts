/**
 * Samplers driven by an explicit `Rng` (docs/algorithms.md §1.4, §2.7), so every draw belongs to a named, seeded stream.
 */
import type { Rng } from './prng';

function checkPositive(what: string, x: number): void {
  if (!(x > 0) || !Number.isFinite(x)) throw new Error(`${what} must be a finite number > 0, got ${x}.`);
}

/** Uniform in (0, 1]: safe to take the log of. */
function openUniform(rng: Rng): number {
  return 1 - rng.next();
}

/**
 * log of a Gamma(k, 1) draw (§1.4). Working in logs keeps draws for small k finite: U^(1/k) underflows to 0 for
 * k ≲ 0.01, and Beta needs the ratio of two such draws.
 */
function logGamma(rng: Rng, k: number): number {
  if (k < 1) return logGamma(rng, k + 1) + Math.log(openUniform(rng)) / k;
  // Marsaglia & Tsang (2000), "A simple method for generating gamma variables".
  const d = k - 1 / 3;
  const c = 1 / Math.sqrt(9 * d);
  for (;;) {
    const x = rng.normal();
    let v = 1 + c * x;
    if (v <= 0) continue;
    v = v * v * v;
    const u = openUniform(rng);
    const x2 = x * x;
    if (u < 1 - 0.0331 * x2 * x2) return Math.log(d * v);
    const logDv = Math.log(v);
    if (Math.log(u) < 0.5 * x2 + d * (1 - v + logDv)) return Math.log(d) + logDv;
  }
}

/** Gamma(k, 1) by Marsaglia–Tsang; for k < 1, Gamma(k+1)·U^(1/k) (§1.4). */
export function gamma(rng: Rng, k: number): number {
  checkPositive('gamma shape k', k);
  return Math.exp(logGamma(rng, k));
}

/** Beta(a, b) = X/(X+Y) with X ~ Gamma(a), Y ~ Gamma(b) (§1.4), computed from log draws so tiny shapes give no 0/0. */
export function beta(rng: Rng, a: number, b: number): number {
  checkPositive('beta a', a);
  checkPositive('beta b', b);
  const lx = logGamma(rng, a);
  const ly = logGamma(rng, b);
  // X/(X+Y) = 1/(1 + exp(ly − lx)); exp overflow to ∞ correctly yields 0.
  return 1 / (1 + Math.exp(ly - lx));
}

/** InvGamma(shape α, scale β) = β / Gamma(α, 1) (§1.4). Its mean is β/(α−1) for α > 1. */
export function invGamma(rng: Rng, shape: number, scale: number): number {
  checkPositive('invGamma shape', shape);
  checkPositive('invGamma scale', scale);
  return scale * Math.exp(-logGamma(rng, shape));
}

/** Normal(mean, std²). */
export function normal(rng: Rng, mean: number, std: number): number {
  if (!(std >= 0) || !Number.isFinite(std)) throw new Error(`normal std must be a finite number ≥ 0, got ${std}.`);
  return mean + std * rng.normal();
}

function checkWeights(what: string, w: ArrayLike<number>): number {
  if (w.length === 0) throw new Error(`${what}: there are no weights to draw from.`);
  let total = 0;
  for (let i = 0; i < w.length; i++) {
    const x = w[i]!;
    if (!(x >= 0) || !Number.isFinite(x)) {
      throw new Error(`${what}: weight ${i} is ${x}; weights must be finite and ≥ 0.`);
    }
    total += x;
  }
  if (!(total > 0)) throw new Error(`${what}: all weights are 0, so nothing can be drawn.`);
  return total;
}

/** Index i with probability probs[i]/Σprobs (the weights need not be normalised). */
export function categorical(rng: Rng, probs: ArrayLike<number>): number {
  const total = checkWeights('categorical', probs);
  const u = rng.next() * total;
  let acc = 0;
  let lastPositive = -1;
  for (let i = 0; i < probs.length; i++) {
    const p = probs[i]!;
    if (p <= 0) continue;
    acc += p;
    lastPositive = i;
    if (u < acc) return i;
  }
  // Only reachable when rounding leaves u ≥ the float sum; the last positive weight owns that sliver.
  return lastPositive;
}

/**
 * k indices drawn with replacement, each with probability w_i/Σw (§2.7 `drawWithReplacement`). Uses a cumulative
 * table and binary search, so many draws from one weight vector cost O(n + k log n).
 */
export function drawWithReplacementWeighted(rng: Rng, weights: ArrayLike<number>, k: number): number[] {
  if (!Number.isInteger(k) || k < 0) {
    throw new Error(`drawWithReplacementWeighted: k must be an integer ≥ 0, got ${k}.`);
  }
  if (k === 0) return [];
  const total = checkWeights('drawWithReplacementWeighted', weights);
  const cum = new Float64Array(weights.length);
  let acc = 0;
  for (let i = 0; i < weights.length; i++) cum[i] = acc += weights[i]!;
  const out: number[] = [];
  for (let j = 0; j < k; j++) {
    const u = rng.next() * total;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (u < cum[mid]!) hi = mid;
      else lo = mid + 1;
    }
    // The first index whose cumulative sum exceeds u always has a positive weight, because u < Σw = cum[n−1].
    out.push(lo);
  }
  return out;
}

/**
 * k distinct indices, weighted, by Efraimidis–Spirakis (2006) keys u^(1/w_i): the k largest keys win (§2.7).
 * Keys are compared as log(u)/w_i, which orders the same and does not underflow for small weights.
 * The result is in descending key order, which is distributed as k successive weighted draws without replacement.
 * Zero-weight items are never drawn; asking for more items than have positive weight is an error.
 */
export function drawWithoutReplacementWeighted(rng: Rng, weights: ArrayLike<number>, k: number): number[] {
  if (!Number.isInteger(k) || k < 0) {
    throw new Error(`drawWithoutReplacementWeighted: k must be an integer ≥ 0, got ${k}.`);
  }
  if (k === 0) return [];
  checkWeights('drawWithoutReplacementWeighted', weights);
  const keyed: { i: number; key: number }[] = [];
  for (let i = 0; i < weights.length; i++) {
    const w = weights[i]!;
    // A key is drawn for every item, zero weights included, so the stream advances by n whatever the weights are.
    const key = Math.log(openUniform(rng)) / w;
    if (w > 0) keyed.push({ i, key });
  }
  if (k > keyed.length) {
    throw new Error(
      `drawWithoutReplacementWeighted: asked for ${k} distinct items but only ${keyed.length} of ${weights.length} have a weight > 0.`,
    );
  }
  keyed.sort((x, y) => y.key - x.key || x.i - y.i);
  return keyed.slice(0, k).map((e) => e.i);
}
