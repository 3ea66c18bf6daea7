import { describe, expect, it } from 'vitest';
import { lrAt, validateSchedule } from '../../../engine/rl/schedule';

describe('lr schedules', () => {
  it('constant', () => {
    expect([0, 1, 1000].map((s) => lrAt({ kind: 'constant', lr: 3e-4 }, s))).toEqual([3e-4, 3e-4, 3e-4]);
  });

  it('linearWarmup ramps lr·(s+1)/W, then holds', () => {
    const s = { kind: 'linearWarmup', lr: 1e-3, warmupSteps: 4 } as const;
    expect(lrAt(s, 0)).toBeCloseTo(2.5e-4, 15);
    expect(lrAt(s, 1)).toBeCloseTo(5e-4, 15);
    expect(lrAt(s, 3)).toBeCloseTo(1e-3, 15);
    expect(lrAt(s, 4)).toBe(1e-3);
    expect(lrAt(s, 500)).toBe(1e-3);
    expect(lrAt({ kind: 'linearWarmup', lr: 1e-3, warmupSteps: 0 }, 0)).toBe(1e-3);
  });

  it('cosine warms up, passes the midpoint at (lr+min)/2 and ends at minLr', () => {
    const s = { kind: 'cosine', lr: 1e-3, minLr: 1e-4, warmupSteps: 10, totalSteps: 110 } as const;
    expect(lrAt(s, 0)).toBeCloseTo(1e-4, 15);
    expect(lrAt(s, 9)).toBeCloseTo(1e-3, 15);
    expect(lrAt(s, 10)).toBeCloseTo(1e-3, 15);
    expect(lrAt(s, 60)).toBeCloseTo(5.5e-4, 15);
    // A quarter of the way: min + (lr − min)·(1 + cos(π/4))/2.
    expect(lrAt(s, 35)).toBeCloseTo(1e-4 + 9e-4 * 0.5 * (1 + Math.SQRT1_2), 15);
    expect(lrAt(s, 110)).toBeCloseTo(1e-4, 15);
    expect(lrAt(s, 10_000)).toBeCloseTo(1e-4, 15);
    for (let t = 10; t < 110; t++) expect(lrAt(s, t + 1)).toBeLessThanOrEqual(lrAt(s, t));
  });

  it('validates its fields, naming them', () => {
    expect(() => validateSchedule({ kind: 'cosine', lr: 1e-3, minLr: 1e-2, warmupSteps: 0, totalSteps: 10 })).toThrow(
      /minLr/,
    );
    expect(() => validateSchedule({ kind: 'cosine', lr: 1e-3, minLr: 0, warmupSteps: 20, totalSteps: 10 })).toThrow(
      /totalSteps/,
    );
    expect(() => validateSchedule({ kind: 'linearWarmup', lr: 1e-3, warmupSteps: 1.5 })).toThrow(/warmupSteps/);
    expect(() => validateSchedule({ kind: 'constant', lr: -1 })).toThrow(/lr must/);
    expect(() => lrAt({ kind: 'constant', lr: 1 }, -1)).toThrow(/step/);
  });
});
