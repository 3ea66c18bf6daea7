import { describe, expect, it } from 'vitest';
import { decimate, metricSeries, type XY } from '../../../engine/runs/summary/decimate';
import type { MetricPoint } from '../../../engine/runs/summary/metricPoint';

function series(n: number, f: (i: number) => number): XY[] {
  return Array.from({ length: n }, (_, i) => ({ x: i, y: f(i) }));
}

describe('decimate', () => {
  it('keeps a single spike among 100k points, and the global min and max, at width 200', () => {
    const spikeAt = 61_337;
    const pts = series(100_000, (i) => (i === spikeAt ? 1e6 : i === 12_345 ? -50 : Math.sin(i / 1000)));
    const buckets = decimate(pts, 200);
    expect(buckets.length).toBeLessThanOrEqual(200);
    expect(buckets.length).toBeGreaterThan(190);
    expect(Math.max(...buckets.map((b) => b.max))).toBe(1e6);
    expect(Math.min(...buckets.map((b) => b.min))).toBe(-50);
    expect(buckets.reduce((a, b) => a + b.n, 0)).toBe(100_000);
    // The spike's bucket ends before the next one starts, and `last` is the last value of its bucket.
    const withSpike = buckets.find((b) => b.max === 1e6)!;
    expect(withSpike.last).toBe(pts[withSpike.x]!.y);
    for (let i = 1; i < buckets.length; i++) expect(buckets[i]!.x).toBeGreaterThan(buckets[i - 1]!.x);
  });

  it('last is the last value of each bucket and x its position', () => {
    const pts = series(1000, (i) => i * 2);
    const buckets = decimate(pts, 10);
    expect(buckets).toHaveLength(10);
    for (const b of buckets) {
      expect(b.last).toBe(b.x * 2);
      expect(b.max).toBe(b.last);
    }
    expect(buckets.at(-1)!.x).toBe(999);
  });

  it('returns each point as its own bucket when there are no more points than the width', () => {
    const pts = [
      { x: 1, y: 5 },
      { x: 2, y: NaN },
      { x: 4, y: -1 },
    ];
    expect(decimate(pts, 200)).toEqual([
      { x: 1, min: 5, max: 5, last: 5, n: 1, nonFinite: 0 },
      { x: 4, min: -1, max: -1, last: -1, n: 1, nonFinite: 0 },
    ]);
  });

  it('leaves non-finite values out of min/max/last and counts them; an all-NaN stretch is a gap', () => {
    const pts = series(1000, (i) => (i >= 500 && i < 600 ? NaN : i === 10 ? Infinity : 1));
    const buckets = decimate(pts, 10);
    expect(buckets.map((b) => b.x)).not.toContain(599);
    expect(buckets).toHaveLength(9);
    expect(buckets[0]).toMatchObject({ min: 1, max: 1, n: 99, nonFinite: 1 });
    expect(buckets.every((b) => Number.isFinite(b.min) && Number.isFinite(b.max))).toBe(true);
  });

  it('decimates only the requested x range', () => {
    const pts = series(10_000, (i) => i);
    const buckets = decimate(pts, 50, { xMin: 2000, xMax: 2999 });
    expect(buckets.length).toBeLessThanOrEqual(50);
    expect(buckets[0]!.min).toBe(2000);
    expect(buckets.at(-1)!.last).toBe(2999);
  });

  it('handles empty input and a single x', () => {
    expect(decimate([], 100)).toEqual([]);
    const same = Array.from({ length: 500 }, (_, i) => ({ x: 7, y: i }));
    expect(decimate(same, 100)).toEqual([{ x: 7, min: 0, max: 499, last: 499, n: 500, nonFinite: 0 }]);
  });
});

describe('metricSeries', () => {
  const records: MetricPoint[] = [
    { step: 1, time: 100, loss: 2 },
    { step: 2, time: 101, reward: 1 },
    { step: 3, time: 103, loss: NaN },
  ];
  it('takes one metric by step, skipping lines without it', () => {
    expect(metricSeries(records, 'loss')).toEqual([
      { x: 1, y: 2 },
      { x: 3, y: NaN },
    ]);
  });
  it('takes it by time on request', () => {
    expect(metricSeries(records, 'reward', { x: 'time' })).toEqual([{ x: 101, y: 1 }]);
  });
});
