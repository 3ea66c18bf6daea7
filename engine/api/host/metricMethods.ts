/**
 * The host's methods for metric series: one run's metrics as decimated columns (metricColumns.ts, decimate.ts), and
 * several runs' overlay with their progress (runsSeries.ts). The window draws what it is sent and computes nothing.
 */
import path from 'node:path';
import { decimate } from '../../runs/summary/decimate';
import { RUN_FILES } from '../../runs/folder/home';
import { setOwn } from '../../runs/summary/metricPoint';
import type { ApiResponse } from '../contract/contract';
import { metricColumns } from '../views/metricColumns';
import { runsMetricSeries } from '../views/runsSeries';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';

export function createMetricMethods(ctx: HostContext): Pick<ApiHandlers, 'getMetricSeries' | 'getRunsMetricSeries'> {
  const { index, dirOf } = ctx;
  return {
    async getMetricSeries({ runId, names, x, width, xMin, xMax }) {
      const file = path.join(dirOf(runId), RUN_FILES.metrics);
      // The index gives the names, lines and last step; the series are columns of only those metrics (metricColumns.ts).
      const indexed = index.get(runId);
      const wanted = names ?? Object.keys(indexed?.summary.metrics ?? {});
      const columns = metricColumns(runId, file, wanted, x);
      const series: ApiResponse<'getMetricSeries'>['series'] = {};
      wanted.forEach((name, i) => {
        const { x: xs, y: ys } = columns[i]!;
        const buckets = decimate(
          xs.map((xv, j) => ({ x: xv, y: ys[j]! })),
          width,
          { xMin, xMax },
        );
        setOwn(series, name, {
          x: buckets.map((b) => b.x),
          min: buckets.map((b) => b.min),
          max: buckets.map((b) => b.max),
          last: buckets.map((b) => b.last),
        });
      });
      return { points: indexed?.metricLines ?? 0, lastStep: indexed?.summary.steps ?? null, series };
    },

    async getRunsMetricSeries(req) {
      return runsMetricSeries(req, { dirOf });
    },
  };
}
