/**
 * A step's time extrapolated from a short probe (issue 33, item 3): what the probe measured (stepTimeProbe.ts) and the
 * shape of one training step, combined by plain arithmetic, so the formula is checked apart from any timing. Sampling
 * costs a fixed part per chunk of rows (the prefill and per-call work) plus a part per new token, from two measured
 * lengths; the update a fixed part per optimiser step plus a part per row, from passes of one row and of a few. Every reply
 * is taken to run to the run's reply-token limit, so the sampling figure is what a step costs at most there.
 */

/** What the probe timed, in seconds. */
export interface ProbeMeasurements {
  /** One chunk of `rows` prompts sampled for `tokens[i]` new tokens took `seconds[i]` (two lengths, after a warm-up). */
  sampling: { rows: number; tokens: [number, number]; seconds: [number, number] };
  /**
   * One policy-update pass (ℓold, the loss's forward and backward, one optimiser step) of `rows[i]` rows of `tokens`
   * tokens each took `seconds[i]` (after a warm-up pass).
   */
  update: { rows: [number, number]; tokens: number; seconds: [number, number] };
}

/** One training step as the config sets it. */
export interface StepShape {
  /** Rows sampled a step (questions × group). */
  rows: number;
  /** Rows sampled at once; more go in chunks, one after another. */
  chunkRows: number;
  /** New tokens a reply may have. */
  replyTokens: number;
  /** Tokens of one training row: the prompt and a whole reply. */
  rowTokens: number;
  /** Passes over the batch (rl.epochs) and optimiser steps a pass (rl.miniBatches). */
  epochs: number;
  miniBatches: number;
}

export interface StepTimeEstimate {
  samplingSeconds: number;
  updateSeconds: number;
  totalSeconds: number;
  /** The fitted parts, in seconds: per chunk and per token of a chunk; per optimiser step and per row of a pass. */
  parts: { chunkFixed: number; chunkPerToken: number; chunks: number; stepFixed: number; perRow: number };
}

/** Sampling's fit: a chunk's fixed part and its part per new token, never negative (timings are noisy). */
export function samplingFit(m: ProbeMeasurements['sampling']): { fixed: number; perToken: number } {
  const [t1, t2] = m.tokens;
  const [s1, s2] = m.seconds;
  const perToken = t2 > t1 ? Math.max(0, (s2 - s1) / (t2 - t1)) : s1 / Math.max(1, t1);
  return { fixed: Math.max(0, s2 - perToken * t2), perToken };
}

/**
 * The update's fit: a pass's fixed part (the optimiser step and per-call work) and its part per row. A row's share is
 * held between half and all of the larger pass's time per row, so timing noise cannot make rows free or negative.
 */
export function updateFit(m: ProbeMeasurements['update']): { fixed: number; perRow: number } {
  const [r1, r2] = m.rows;
  const [u1, u2] = m.seconds;
  const slope = r2 > r1 ? (u2 - u1) / (r2 - r1) : u2 / r2;
  const perRow = Math.min(u2 / r2, Math.max(u2 / (2 * r2), slope));
  return { fixed: Math.max(0, u2 - perRow * r2), perRow };
}

/** One step's time from the probe's measurements (the update's row cost scaled by the run's row length). */
export function estimateStepTime(m: ProbeMeasurements, step: StepShape): StepTimeEstimate {
  const s = samplingFit(m.sampling);
  const chunks = Math.ceil(step.rows / Math.max(1, step.chunkRows));
  // A measured chunk smaller than the run's (rows capped by the probe) counts for its share of a full one.
  const chunkScale = step.chunkRows / m.sampling.rows;
  const samplingSeconds = chunks * chunkScale * (s.fixed + s.perToken * step.replyTokens);
  const u = updateFit(m.update);
  const perRow = u.perRow * (step.rowTokens / m.update.tokens);
  const updateSeconds = step.epochs * (step.miniBatches * u.fixed + step.rows * perRow);
  return {
    samplingSeconds,
    updateSeconds,
    totalSeconds: samplingSeconds + updateSeconds,
    parts: { chunkFixed: s.fixed, chunkPerToken: s.perToken, chunks, stepFixed: u.fixed, perRow },
  };
}
