/**
 * The shapes of a run's status and of one row of the run list, as zod schemas with no Node imports, so that the run
 * folder and index (Node) and the api contract (which must stay free of Node imports) validate with the same schema.
 */
import { z } from 'zod';

export const RUN_STATUSES = ['created', 'running', 'stopped', 'finished', 'failed', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

const metricStatsSchema = z.object({ last: z.number().nullable(), min: z.number().nullable(), max: z.number().nullable() });

/** One row of the run list (runIndex.ts RunSummary, whose fields are documented there). */
export const runSummarySchema = z.object({
  id: z.string(),
  status: z.enum([...RUN_STATUSES, 'corrupt']),
  error: z.string().optional(),
  algorithm: z.string().optional(),
  preset: z.string().optional(),
  createdAt: z.string().optional(),
  statusAt: z.string().optional(),
  steps: z.number().nullable(),
  metrics: z.record(z.string(), metricStatsSchema),
  tags: z.array(z.string()),
  notes: z.string(),
  checkpoints: z.number(),
  lastCheckpointStep: z.number().optional(),
  mtime: z.number(),
  headline: z.object({ key: z.string(), label: z.string(), value: z.number().nullable() }).optional(),
});
