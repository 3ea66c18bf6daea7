/**
 * The scales and axes every uPlot chart of the app shares (MetricChart, OverlayChart, MultiChart), so that:
 * - a series of one point has an x range of a few steps, or two minutes of time, not uPlot's magnitude-based padding
 *   (which made one timestamp span years);
 * - steps are labelled with whole numbers only;
 * - a flat series gets a band of ±10 % around its value (0 to 1 when the value is 0), a metric whose unit is a share
 *   or a score (0–1, engine/pure/metricCatalog.ts) is never drawn beyond [0, 1] by padding, and values that are never
 *   negative get no negative axis (2 % of room below 0 for a line at 0).
 */
import uPlot from 'uplot';

/** Whole-number tick spacings for a step axis (uPlot picks the smallest that keeps labels apart). */
export const STEP_INCRS = [
  1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 2500, 5000, 10_000, 20_000, 25_000, 50_000, 100_000, 200_000,
  500_000, 1_000_000,
];

/** Half-width of the x range around a lone point: steps, or seconds on a time axis. */
const LONE_STEP_PAD = 2;
const LONE_TIME_PAD_S = 60;

/** Slack beyond [0, 1] for bounded metrics, so a line at 0 or 1 is not drawn on the plot's edge. */
const BOUNDED_SLACK = 0.02;

export function xRange(time: boolean): uPlot.Range.Function {
  return (_u, min, max) => {
    if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [0, 1];
    if (min === max) {
      const pad = time ? LONE_TIME_PAD_S : LONE_STEP_PAD;
      return [time ? min - pad : Math.max(0, min - pad), max + pad];
    }
    return [min, max];
  };
}

/**
 * The x range for data whose x are all one value, or null. uPlot's own x auto-scaling does not call a scale's range
 * function: for a lone time it adds 86400 / ms (1000 days with x in seconds), so the charts set this range themselves.
 */
export function loneXRange(xs: readonly number[], time: boolean): [number, number] | null {
  if (xs.length === 0 || xs[0] !== xs[xs.length - 1]) return null;
  return xRange(time)(undefined as unknown as uPlot, xs[0]!, xs[0]!, 'x') as [number, number];
}

/** The y range of values from min to max; `bounded`: a share or score in [0, 1]. */
export function yExtent(min: number | null, max: number | null, bounded: boolean): [number, number] {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return bounded ? [0, 1] : [-1, 1];
  let lo: number;
  let hi: number;
  if (min === max) {
    const pad = Math.abs(min) * 0.1 || 1;
    [lo, hi] = [min - pad, max + pad];
  } else {
    const r = uPlot.rangeNum(min, max, 0.1, true);
    [lo, hi] = [r[0] ?? min, r[1] ?? max];
  }
  if (bounded && min >= 0 && max <= 1) {
    lo = Math.max(lo, -BOUNDED_SLACK);
    hi = Math.min(hi, 1 + BOUNDED_SLACK);
    if (min === 0 && max === 0) hi = 1;
  } else if (min >= 0 && lo < 0) {
    // values never below 0 (counts, losses, shares): no negative axis, just room for a line at 0
    if (min === 0 && max === 0) hi = 1;
    lo = -hi * BOUNDED_SLACK;
  }
  return [lo, hi];
}

export function yRange(bounded: boolean): uPlot.Range.Function {
  return (_u, min, max) => yExtent(min, max, bounded);
}

/** Axis labels that stay readable for tiny and huge values (a loss of 1e-8 must not read "-0"). */
export function tick(value: number): string {
  if (value === 0) return '0';
  const magnitude = Math.abs(value);
  if (magnitude >= 1e5 || magnitude < 1e-3) return value.toExponential(1);
  return String(Number(value.toPrecision(4)));
}

/** The x axis: whole steps, or uPlot's time axis. */
export function xAxis(time: boolean): uPlot.Axis {
  return time
    ? {}
    : {
        label: 'step',
        incrs: STEP_INCRS,
        values: (_u, ticks) => ticks.map((t) => (Number.isInteger(t) ? String(t) : '')),
      };
}
