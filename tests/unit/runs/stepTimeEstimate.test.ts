/**
 * The time probe's extrapolation (engine/runs/probe/stepTimeEstimate.ts) on fixed measurements, so nothing here depends
 * on a clock: the estimate is exactly its measured parts combined (chunks × (fixed + per token × reply tokens); epochs
 * × (optimiser steps × fixed + rows × per row)), it grows with rows, reply tokens and epochs, a chunk of the run's
 * size measured directly is used as measured, and timing noise (a shorter sample that took longer, a two-row pass faster
 * than one row) never makes a part negative or free.
 */
import { describe, expect, it } from 'vitest';
import {
  estimateStepTime,
  samplingFit,
  updateFit,
  type ProbeMeasurements,
  type StepShape,
} from '../../../engine/runs/probe/stepTimeEstimate';

const measured: ProbeMeasurements = {
  sampling: { rows: 16, tokens: [1, 8], seconds: [2, 3.4] },
  update: { rows: [1, 16], tokens: 62, seconds: [0.8, 6.4] },
};
const step: StepShape = { rows: 16, chunkRows: 16, replyTokens: 16, rowTokens: 62, epochs: 1, miniBatches: 1 };

describe('a step extrapolated from the probe', () => {
  it('is its measured parts combined', () => {
    const e = estimateStepTime(measured, step);
    // sampling: 0.2 s a token, 1.8 s a chunk; update: 16 rows at 0.3733 s and 0.4267 s a pass
    expect(e.parts.chunkPerToken).toBeCloseTo(0.2, 12);
    expect(e.parts.chunkFixed).toBeCloseTo(1.8, 12);
    expect(e.samplingSeconds).toBeCloseTo(1.8 + 0.2 * 16, 12);
    expect(e.parts.perRow).toBeCloseTo(5.6 / 15, 12);
    expect(e.updateSeconds).toBeCloseTo(6.4, 12); // the measured pass was the step's own batch
    expect(e.totalSeconds).toBeCloseTo(e.samplingSeconds + e.updateSeconds, 12);
  });

  it('grows with the rows, the reply tokens, the epochs and the row length', () => {
    const base = estimateStepTime(measured, step);
    const twice = estimateStepTime(measured, { ...step, rows: 32 });
    expect(twice.parts.chunks).toBe(2);
    expect(twice.samplingSeconds).toBeCloseTo(2 * base.samplingSeconds, 12);
    expect(twice.updateSeconds).toBeGreaterThan(base.updateSeconds);
    expect(estimateStepTime(measured, { ...step, replyTokens: 64 }).samplingSeconds).toBeGreaterThan(
      base.samplingSeconds,
    );
    expect(estimateStepTime(measured, { ...step, epochs: 2 }).updateSeconds).toBeCloseTo(2 * base.updateSeconds, 12);
    expect(estimateStepTime(measured, { ...step, rowTokens: 124 }).updateSeconds).toBeGreaterThan(base.updateSeconds);
  });

  it('never makes a part negative or free when the timings are noisy', () => {
    const s = samplingFit({ rows: 16, tokens: [1, 8], seconds: [3, 2.5] });
    expect(s.perToken).toBe(0);
    expect(s.fixed).toBe(2.5);
    const u = updateFit({ rows: [1, 2], tokens: 62, seconds: [1.5, 1.2] });
    expect(u.perRow).toBeCloseTo(0.3, 12); // held at half the larger pass's time a row
    expect(u.fixed).toBeCloseTo(0.6, 12);
    const linear = updateFit({ rows: [1, 4], tokens: 62, seconds: [0.1, 4] });
    expect(linear.perRow).toBe(1); // at most the larger pass's time a row
    expect(linear.fixed).toBe(0);
  });
});
