/**
 * Metric series for charts: at most one bucket per pixel, each with the min, max and last value of its points, so a
 * chart of 10^5 steps drawn at 800 px still shows every spike (a plain every-k-th sample drops them).
 */
import { metricValue, type MetricPoint } from './metricPoint';

export interface XY {
  x: number;
  y: number;
}

export interface Bucket {
  /** x of the bucket's last finite point (where `last` sits on the chart). */
  x: number;
  min: number;
  max: number;
  last: number;
  /** Finite points in the bucket. */
  n: number;
  /** Points in the bucket whose y was NaN or infinite (not in min/max/last). */
  nonFinite: number;
}

export interface DecimateOptions {
  /** Only points with xMin ≤ x ≤ xMax (a zoomed chart); defaults to the whole series. */
  xMin?: number;
  xMax?: number;
}

/** First index with points[i].x ≥ x (points sorted by x). */
function lowerBound(points: readonly XY[], x: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid]!.x < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index with points[i].x > x. */
function upperBound(points: readonly XY[], x: number): number {
  let lo = 0;
  let hi = points.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (points[mid]!.x <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Reduce a series sorted by x to at most `width` buckets of equal x span. A bucket whose points all have non-finite y
 * is left out (a gap on the chart). With no more points than `width`, every point is its own bucket.
 */
export function decimate(points: readonly XY[], width: number, opts: DecimateOptions = {}): Bucket[] {
  const w = Math.max(1, Math.floor(width));
  const start = opts.xMin === undefined ? 0 : lowerBound(points, opts.xMin);
  const end = opts.xMax === undefined ? points.length : upperBound(points, opts.xMax);
  const out: Bucket[] = [];
  if (end <= start) return out;

  if (end - start <= w) {
    for (let i = start; i < end; i++) {
      const p = points[i]!;
      if (Number.isFinite(p.y) && Number.isFinite(p.x)) out.push({ x: p.x, min: p.y, max: p.y, last: p.y, n: 1, nonFinite: 0 });
    }
    return out;
  }

  const x0 = points[start]!.x;
  const span = points[end - 1]!.x - x0;
  let current: Bucket | null = null;
  let currentIndex = -1;
  let pendingNonFinite = 0;
  for (let i = start; i < end; i++) {
    const p = points[i]!;
    if (!Number.isFinite(p.x)) continue;
    const index = span > 0 ? Math.min(w - 1, Math.floor(((p.x - x0) / span) * w)) : 0;
    if (index !== currentIndex) {
      if (current) out.push(current);
      current = null;
      currentIndex = index;
      pendingNonFinite = 0;
    }
    if (!Number.isFinite(p.y)) {
      if (current) current.nonFinite++;
      else pendingNonFinite++;
      continue;
    }
    if (!current) {
      current = { x: p.x, min: p.y, max: p.y, last: p.y, n: 1, nonFinite: pendingNonFinite };
      continue;
    }
    current.x = p.x;
    current.last = p.y;
    current.n++;
    if (p.y < current.min) current.min = p.y;
    if (p.y > current.max) current.max = p.y;
  }
  if (current) out.push(current);
  return out;
}

/** The (x, y) pairs of one metric, skipping lines that did not log it; x is the step or the time. */
export function metricSeries(records: readonly MetricPoint[], name: string, opts: { x?: 'step' | 'time' } = {}): XY[] {
  const xKey = opts.x ?? 'step';
  const out: XY[] = [];
  for (const r of records) {
    // Own properties only: a series named "constructor" must not pick up Object from a line that did not log it.
    const y = metricValue(r, name);
    if (typeof y !== 'number') continue;
    out.push({ x: r[xKey]!, y });
  }
  return out;
}
