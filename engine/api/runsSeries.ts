/**
 * getRunsMetricSeries (contract.ts): several runs' series of the same metrics in one call, for the overlay chart of the
 * Runs view and a run page's progress, each decimated as getMetricSeries does (engine/runs/decimate.ts), with what a
 * progress line needs: the step of the total (run.json's budget.steps) and the recent seconds per step (for an ETA).
 * A run that cannot be read answers its own `error`, so one removed run does not blank a 20-run overlay.
 */
import { decimate, metricSeries } from '../runs/decimate';
import type { MetricPoint } from '../runs/metricPoint';
import { readRunMeta } from '../runs/runFolder';
import type { ApiParsedRequest, ApiResponse } from './contract';

/** Steps at the end of the log the ETA's rate is measured over (recent speed, not the average since the start). */
export const RATE_WINDOW = 20;

/** The run's configured budget.steps, or null where run.json has none. */
export function totalStepsOf(config: unknown): number | null {
  const budget = typeof config === 'object' && config !== null ? (config as { budget?: unknown }).budget : undefined;
  const steps = typeof budget === 'object' && budget !== null ? (budget as { steps?: unknown }).steps : undefined;
  return typeof steps === 'number' && Number.isFinite(steps) && steps > 0 ? steps : null;
}

/**
 * Seconds per step over the last RATE_WINDOW lines with a time, or null with fewer than two. A resume's pause between
 * lines is left out: only gaps of consecutive steps count.
 */
export function secondsPerStep(points: readonly MetricPoint[]): number | null {
  let seconds = 0;
  let steps = 0;
  for (let i = points.length - 1, seen = 0; i > 0 && seen < RATE_WINDOW; i--, seen++) {
    const a = points[i - 1]!;
    const b = points[i]!;
    const ds = b.step - a.step;
    const dt = b.time - a.time;
    if (ds !== 1 || !Number.isFinite(dt) || dt < 0) continue;
    seconds += dt;
    steps += ds;
  }
  return steps > 0 ? seconds / steps : null;
}

export interface RunsSeriesDeps {
  metricsOf(runId: string): MetricPoint[];
  dirOf(runId: string): string;
}

export function runsMetricSeries(req: ApiParsedRequest<'getRunsMetricSeries'>, deps: RunsSeriesDeps): ApiResponse<'getRunsMetricSeries'> {
  const runs: ApiResponse<'getRunsMetricSeries'>['runs'] = [];
  for (const runId of new Set(req.runIds)) {
    try {
      const dir = deps.dirOf(runId);
      const meta = readRunMeta(dir);
      const points = deps.metricsOf(runId);
      const series: ApiResponse<'getRunsMetricSeries'>['runs'][number]['series'] = {};
      for (const name of req.names) {
        const buckets = decimate(metricSeries(points, name, { x: req.x }), req.width);
        if (buckets.length === 0) continue;
        series[name] = { x: buckets.map((b) => b.x), min: buckets.map((b) => b.min), max: buckets.map((b) => b.max), last: buckets.map((b) => b.last) };
      }
      runs.push({
        runId,
        points: points.length,
        lastStep: points.at(-1)?.step ?? null,
        totalSteps: totalStepsOf(meta.config),
        secondsPerStep: secondsPerStep(points),
        lastTime: points.length && Number.isFinite(points.at(-1)!.time) ? points.at(-1)!.time : null,
        series,
      });
    } catch (error) {
      runs.push({ runId, points: 0, lastStep: null, totalSteps: null, secondsPerStep: null, lastTime: null, series: {}, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return { runs };
}
