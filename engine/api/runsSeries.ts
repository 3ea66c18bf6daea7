/**
 * getRunsMetricSeries (contract.ts): several runs' series of the same metrics in one call, for the overlay chart of the
 * Runs view and a run page's progress, each decimated as getMetricSeries does (engine/runs/decimate.ts), with what a
 * progress line needs: the step of the total (run.json's budget.steps) and the recent seconds per step (for an ETA).
 * A run that cannot be read answers its own `error`, so one removed run does not blank a 20-run overlay. The columns
 * come from metricColumns.ts (only the metrics asked, cached by run), not the host's whole-line cache.
 */
import path from 'node:path';
import { decimate } from '../runs/decimate';
import { RUN_FILES } from '../runs/home';
import { readRunMeta } from '../runs/runFolder';
import { metricColumn } from './metricColumns';
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
 * lines is left out: only gaps of consecutive steps count. `steps` and `times` are the lines' step and time columns.
 */
export function secondsPerStep(steps: readonly number[], times: readonly number[]): number | null {
  let seconds = 0;
  let count = 0;
  for (let i = steps.length - 1, seen = 0; i > 0 && seen < RATE_WINDOW; i--, seen++) {
    const ds = steps[i]! - steps[i - 1]!;
    const dt = times[i]! - times[i - 1]!;
    if (ds !== 1 || !Number.isFinite(dt) || dt < 0) continue;
    seconds += dt;
    count += ds;
  }
  return count > 0 ? seconds / count : null;
}

export interface RunsSeriesDeps {
  dirOf(runId: string): string;
}

export function runsMetricSeries(req: ApiParsedRequest<'getRunsMetricSeries'>, deps: RunsSeriesDeps): ApiResponse<'getRunsMetricSeries'> {
  const runs: ApiResponse<'getRunsMetricSeries'>['runs'] = [];
  for (const runId of new Set(req.runIds)) {
    try {
      const dir = deps.dirOf(runId);
      const meta = readRunMeta(dir);
      const file = path.join(dir, RUN_FILES.metrics);
      // Every line's step and time: the progress, and the count of lines (lines without a time are rare: none from the run loop).
      const clock = metricColumn(runId, file, 'time', 'step');
      const series: ApiResponse<'getRunsMetricSeries'>['runs'][number]['series'] = {};
      for (const name of req.names) {
        const column = metricColumn(runId, file, name, req.x);
        const points = column.x.map((x, i) => ({ x, y: column.y[i]! }));
        const buckets = decimate(points, req.width);
        if (buckets.length === 0) continue;
        series[name] = { x: buckets.map((b) => b.x), min: buckets.map((b) => b.min), max: buckets.map((b) => b.max), last: buckets.map((b) => b.last) };
      }
      const lastTime = clock.y.at(-1);
      runs.push({
        runId,
        points: clock.x.length,
        lastStep: clock.x.at(-1) ?? null,
        totalSteps: totalStepsOf(meta.config),
        secondsPerStep: secondsPerStep(clock.x, clock.y),
        lastTime: lastTime !== undefined && Number.isFinite(lastTime) ? lastTime : null,
        series,
      });
    } catch (error) {
      runs.push({ runId, points: 0, lastStep: null, totalSteps: null, secondsPerStep: null, lastTime: null, series: {}, error: error instanceof Error ? error.message : String(error) });
    }
  }
  return { runs };
}
