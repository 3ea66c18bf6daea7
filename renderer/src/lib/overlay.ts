/**
 * Overlaying runs on one chart (the Runs view): colours, the arms of a study (runs that differ only in their seed), and
 * an arm's seeds drawn as their mean with a band. An arm is the runs sharing preset (or algorithm) and tags: a study
 * launched as one preset per variant, tagged by variant, with several seeds each. Seeds are aligned by linear
 * interpolation on the union of their x (decimated buckets of different runs need not share x), only inside each seed's
 * own range; the band is min–max over seeds, or the mean ± its standard error.
 */
import type { ApiRunSummary, ApiSeries } from '../../../engine/api/contract/contract';

/** Ten distinct colours (Tableau 10); past ten, lines repeat them dashed. */
export const PALETTE = [
  '#4e79a7',
  '#f28e2b',
  '#e15759',
  '#76b7b2',
  '#59a14f',
  '#edc948',
  '#b07aa1',
  '#ff9da7',
  '#9c755f',
  '#bab0ac',
];

export function colourOf(i: number): { colour: string; dashed: boolean } {
  return { colour: PALETTE[i % PALETTE.length]!, dashed: i >= PALETTE.length };
}

export type BandMode = 'minmax' | 'se';
export const BAND_NOTE: Record<BandMode, string> = {
  minmax: 'line: mean over the arm’s seeds; band: min–max over seeds',
  se: 'line: mean over the arm’s seeds; band: mean ± standard error over seeds',
};

/** The arm a run belongs to: its preset (or algorithm) and its tags. */
export function armKey(run: Pick<ApiRunSummary, 'preset' | 'algorithm' | 'tags'>): string {
  return [run.preset ?? run.algorithm ?? '?', ...[...run.tags].sort()].join(' · ');
}

export interface Arm {
  key: string;
  runIds: string[];
}

/** Runs grouped into arms, in the order their first run comes. */
export function armsOf(runs: readonly Pick<ApiRunSummary, 'id' | 'preset' | 'algorithm' | 'tags'>[]): Arm[] {
  const arms = new Map<string, Arm>();
  for (const run of runs) {
    const key = armKey(run);
    let arm = arms.get(key);
    if (!arm) arms.set(key, (arm = { key, runIds: [] }));
    arm.runIds.push(run.id);
  }
  return [...arms.values()];
}

/** y of a sorted series at x by linear interpolation; null outside its range. */
function at(xs: readonly number[], ys: readonly number[], x: number): number | null {
  const n = xs.length;
  if (n === 0 || x < xs[0]! || x > xs[n - 1]!) return null;
  let lo = 0;
  let hi = n - 1;
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (xs[mid]! <= x) lo = mid;
    else hi = mid;
  }
  if (xs[lo] === x) return ys[lo]!;
  if (xs[hi] === x) return ys[hi]!;
  const t = (x - xs[lo]!) / (xs[hi]! - xs[lo]!);
  return ys[lo]! + t * (ys[hi]! - ys[lo]!);
}

export interface MeanBand {
  x: number[];
  mean: number[];
  lo: number[];
  hi: number[];
  /** Seeds that had a value at each x. */
  n: number[];
}

/** The mean of several seeds' series (their `last` values) with a band, on the union of their x. */
export function meanBand(seeds: readonly ApiSeries[], mode: BandMode): MeanBand {
  const xs = [...new Set(seeds.flatMap((s) => s.x))].sort((a, b) => a - b);
  const out: MeanBand = { x: [], mean: [], lo: [], hi: [], n: [] };
  for (const x of xs) {
    const values: number[] = [];
    for (const s of seeds) {
      const y = at(s.x, s.last, x);
      if (y !== null && Number.isFinite(y)) values.push(y);
    }
    if (values.length === 0) continue;
    const n = values.length;
    const mean = values.reduce((a, b) => a + b, 0) / n;
    let lo = mean;
    let hi = mean;
    if (mode === 'minmax') {
      lo = Math.min(...values);
      hi = Math.max(...values);
    } else if (n > 1) {
      const sd = Math.sqrt(values.reduce((a, v) => a + (v - mean) ** 2, 0) / (n - 1));
      lo = mean - sd / Math.sqrt(n);
      hi = mean + sd / Math.sqrt(n);
    }
    out.x.push(x);
    out.mean.push(mean);
    out.lo.push(lo);
    out.hi.push(hi);
    out.n.push(n);
  }
  return out;
}
