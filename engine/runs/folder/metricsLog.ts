/**
 * A run's whole metrics log, read once at the end of something (show, export, a study's final figures): every line,
 * a torn last line reported as a warning, each line as a MetricPoint.
 */
import { readJsonl } from './jsonl';
import { metricLineProblem, toMetricPoint, type MetricPoint } from '../summary/metricPoint';
import { runFilePaths } from './runFolder';

/** The whole metrics log of a run (a final read: a torn last line is reported). */
export function readMetrics(dir: string): { records: MetricPoint[]; warnings: string[] } {
  const r = readJsonl<Record<string, unknown>>(runFilePaths(dir).metrics, { validate: metricLineProblem });
  return { records: r.records.map(toMetricPoint), warnings: r.warnings };
}
