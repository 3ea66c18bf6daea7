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

/** A series as two columns of one length, x sorted (engine/api/views/metricColumns.ts reads them so). */
export interface Columns {
  x: ArrayLike<number>;
  y: ArrayLike<number>;
}

/** First index with x(i) ≥ x (x sorted). */
function lowerBound(n: number, xAt: (i: number) => number, x: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xAt(mid) < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** First index with x(i) > x. */
function upperBound(n: number, xAt: (i: number) => number, x: number): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (xAt(mid) <= x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Reduce a series sorted by x to at most `width` buckets of equal x span. A bucket whose points all have non-finite y
 * is left out (a gap on the chart). With no more points than `width`, every point is its own bucket.
 */
export function decimate(points: readonly XY[], width: number, opts: DecimateOptions = {}): Bucket[] {
  return decimateBy(
    points.length,
    (i) => points[i]!.x,
    (i) => points[i]!.y,
    width,
    opts,
  );
}

/** decimate() of a series held as columns, without making a point object of each (20 runs of 10^5 points). */
export function decimateColumns(columns: Columns, width: number, opts: DecimateOptions = {}): Bucket[] {
  const { x, y } = columns;
  return decimateBy(
    x.length,
    (i) => x[i]!,
    (i) => y[i]!,
    width,
    opts,
  );
}

function decimateBy(
  count: number,
  xAt: (i: number) => number,
  yAt: (i: number) => number,
  width: number,
  opts: DecimateOptions,
): Bucket[] {
  const w = Math.max(1, Math.floor(width));
  const start = opts.xMin === undefined ? 0 : lowerBound(count, xAt, opts.xMin);
  const end = opts.xMax === undefined ? count : upperBound(count, xAt, opts.xMax);
  const out: Bucket[] = [];
  if (end <= start) return out;

  if (end - start <= w) {
    for (let i = start; i < end; i++) {
      const x = xAt(i);
      const y = yAt(i);
      if (Number.isFinite(y) && Number.isFinite(x)) out.push({ x, min: y, max: y, last: y, n: 1, nonFinite: 0 });
    }
    return out;
  }

  const x0 = xAt(start);
  const span = xAt(end - 1) - x0;
  let current: Bucket | null = null;
  let currentIndex = -1;
  let pendingNonFinite = 0;
  for (let i = start; i < end; i++) {
    const x = xAt(i);
    if (!Number.isFinite(x)) continue;
    const y = yAt(i);
    const index = span > 0 ? Math.min(w - 1, Math.floor(((x - x0) / span) * w)) : 0;
    if (index !== currentIndex) {
      if (current) out.push(current);
      current = null;
      currentIndex = index;
      pendingNonFinite = 0;
    }
    if (!Number.isFinite(y)) {
      if (current) current.nonFinite++;
      else pendingNonFinite++;
      continue;
    }
    if (!current) {
      current = { x, min: y, max: y, last: y, n: 1, nonFinite: pendingNonFinite };
      continue;
    }
    current.x = x;
    current.last = y;
    current.n++;
    if (y < current.min) current.min = y;
    if (y > current.max) current.max = y;
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
    out.push({ x: r[xKey], y });
  }
  return out;
}
