/**
 * getRunsMetricSeries (contract.ts): several runs' series of the same metrics in one call, for the overlay chart of the
 * Runs view and a run page's progress, each decimated as getMetricSeries does (engine/runs/summary/decimate.ts), with what a
 * progress line needs: the step of the total (run.json's budget.steps) and the recent seconds per step (for an ETA).
 * A run that cannot be read answers its own `error`, so one removed run does not blank a 20-run overlay. The columns
 * come from metricColumns.ts (only the metrics asked, cached by run), not the host's whole-line cache; a run not read
 * yet starts from its pre-parsed rows (engine/runs/summary/metricRows.ts, kept by the run loop) and parses only the log after.
 */
import fs from 'node:fs';
import path from 'node:path';
import { decimateColumns } from '../../runs/summary/decimate';
import { RUN_FILES } from '../../runs/folder/home';
import { openExistingHomeFile } from '../../runs/folder/homeFile';
import { setOwn } from '../../runs/summary/metricPoint';
import { readRunMeta } from '../../runs/folder/runFolder';
import { rowColumns } from '../../runs/summary/summarySidecar';
import { clearMetricColumns, metricColumns, type Column } from './metricColumns';
import type { ApiParsedRequest, ApiResponse } from '../contract/contract';

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
export function secondsPerStep(lines: readonly { step: number; time: number }[]): number | null {
  let seconds = 0;
  let count = 0;
  for (let i = lines.length - 1, seen = 0; i > 0 && seen < RATE_WINDOW; i--, seen++) {
    const ds = lines[i]!.step - lines[i - 1]!.step;
    const dt = lines[i]!.time - lines[i - 1]!.time;
    if (ds !== 1 || !Number.isFinite(dt) || dt < 0) continue;
    seconds += dt;
    count += ds;
  }
  return count > 0 ? seconds / count : null;
}

/**
 * Bytes read from the end of metrics.jsonl for the progress: first FIRST_TAIL_BYTES (RATE_WINDOW lines of a seqgrpo
 * or MARS run fit), doubled while fewer lines came, up to TAIL_BYTES (those of even a MARTI run fit many times).
 */
const FIRST_TAIL_BYTES = 16 << 10;
const TAIL_BYTES = 256 << 10;

/** The last complete lines' step and time (RATE_WINDOW + 1 of them at most), read from the end of the file. */
export function tailClock(file: string): { step: number; time: number }[] {
  let fd: number;
  try {
    fd = openExistingHomeFile(file);
  } catch {
    return [];
  }
  try {
    const size = fs.fstatSync(fd).size;
    for (let window = FIRST_TAIL_BYTES; ; window *= 2) {
      const from = Math.max(0, size - Math.min(window, TAIL_BYTES));
      const buf = Buffer.alloc(size - from);
      fs.readSync(fd, buf, 0, buf.length, from);
      const text = buf.toString('utf8');
      const lines = text.slice(0, text.lastIndexOf('\n') + 1).split('\n');
      // The first piece may be the end of a line cut by the window; the last is empty (after the final newline).
      const out: { step: number; time: number }[] = [];
      for (const line of (from > 0 ? lines.slice(1) : lines).slice(-(RATE_WINDOW + 2))) {
        try {
          const r = JSON.parse(line) as { step?: unknown; time?: unknown };
          if (typeof r.step === 'number' && Number.isFinite(r.step)) {
            out.push({ step: r.step, time: typeof r.time === 'number' ? r.time : NaN });
          }
        } catch {
          // a torn line: not a step
        }
      }
      if (from === 0 || window >= TAIL_BYTES || lines.length >= RATE_WINDOW + 4) return out;
    }
  } finally {
    fs.closeSync(fd);
  }
}

export interface RunsSeriesDeps {
  dirOf(runId: string): string;
}

type Series = ApiResponse<'getRunsMetricSeries'>['runs'][number]['series'][string];

/** Decimated series by run, metric, x and width, kept while its column is the same and has not grown (a warm overlay is instant). */
const decimatedCache = new Map<string, { column: Column; length: number; series: Series }>();
const MAX_DECIMATED = 400;

function decimated(runId: string, name: string, req: { x: 'step' | 'time'; width: number }, column: Column): Series {
  const key = `${runId}\n${name}\n${req.x}\n${req.width}`;
  const hit = decimatedCache.get(key);
  if (hit && hit.column === column && hit.length === column.x.length) return hit.series;
  const buckets = decimateColumns(column, req.width);
  const series = {
    x: buckets.map((b) => b.x),
    min: buckets.map((b) => b.min),
    max: buckets.map((b) => b.max),
    last: buckets.map((b) => b.last),
  };
  decimatedCache.delete(key);
  decimatedCache.set(key, { column, length: column.x.length, series });
  while (decimatedCache.size > MAX_DECIMATED) decimatedCache.delete(decimatedCache.keys().next().value!);
  return series;
}

/** Forgets every cached column and decimation (the benchmark's cold start; a test's fresh state). */
export function clearSeriesCaches(): void {
  decimatedCache.clear();
  clearMetricColumns();
}

export function runsMetricSeries(
  req: ApiParsedRequest<'getRunsMetricSeries'>,
  deps: RunsSeriesDeps,
): ApiResponse<'getRunsMetricSeries'> {
  const runs: ApiResponse<'getRunsMetricSeries'>['runs'] = [];
  for (const runId of new Set(req.runIds)) {
    try {
      const dir = deps.dirOf(runId);
      const meta = readRunMeta(dir);
      const file = path.join(dir, RUN_FILES.metrics);
      const clock = tailClock(file);
      const series: ApiResponse<'getRunsMetricSeries'>['runs'][number]['series'] = {};
      // Every metric asked in one read of the log, or of the run's pre-parsed rows and the log past them.
      const columns = metricColumns(runId, file, req.names, req.x, () => rowColumns(dir, req.names, req.x));
      for (const [i, name] of req.names.entries()) {
        const buckets = decimated(runId, name, req, columns[i]!);
        if (buckets.x.length === 0) continue;
        setOwn(series, name, buckets);
      }
      const last = clock.at(-1);
      runs.push({
        runId,
        lastStep: last?.step ?? null,
        totalSteps: totalStepsOf(meta.config),
        secondsPerStep: secondsPerStep(clock),
        lastTime: last && Number.isFinite(last.time) ? last.time : null,
        series,
      });
    } catch (error) {
      runs.push({
        runId,
        lastStep: null,
        totalSteps: null,
        secondsPerStep: null,
        lastTime: null,
        series: {},
        error: error instanceof Error ? error.message : String(error),
      });
    }
  }
  return { runs };
}
