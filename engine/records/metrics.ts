/**
 * One line of metrics.jsonl: `{step, time, <name>: value, ...}` (engine/runs/runLoop.ts writes it; metricPoint.ts,
 * metricColumns.ts and the summaries read it). `time` is seconds since the epoch; every other key is a metric, whose
 * value is a number or null (a NaN or infinity written as JSON).
 *
 * `version` is part of the schema but is not written in the lines yet: every reader of metrics.jsonl takes each
 * number-valued key besides step and time as a metric, so a written `version` would appear as a metric named
 * "version" in every chart, table and CSV. A line without it reads as version 1.
 */
import { z } from 'zod';
import { versionField } from './version';

export const metricsLineSchema = z
  .object({
    version: versionField(),
    step: z.int().nonnegative(),
    time: z.number(),
  })
  .catchall(z.number().nullable());

export type MetricsLine = z.output<typeof metricsLineSchema>;
