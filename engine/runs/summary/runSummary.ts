/**
 * The shapes of a run's status and of one row of the run list, as zod schemas with no Node imports, so that the run
 * folder and index (Node) and the api contract (which must stay free of Node imports) validate with the same schema.
 */
import { z } from 'zod';

export const RUN_STATUSES = ['created', 'running', 'stopped', 'finished', 'failed', 'interrupted'] as const;
export type RunStatus = (typeof RUN_STATUSES)[number];

const metricStatsSchema = z.object({
  last: z.number().nullable(),
  min: z.number().nullable(),
  max: z.number().nullable(),
});
type MetricStatsShape = z.infer<typeof metricStatsSchema>;

/**
 * Statistics by metric name. Not z.record: zod drops a "__proto__" key from records, and metric names are data (a
 * metrics line may name any); every value is still checked, and the object is kept as given.
 */
export const metricsByNameSchema = z.custom<Record<string, MetricStatsShape>>(
  (v) =>
    typeof v === 'object' &&
    v !== null &&
    !Array.isArray(v) &&
    Object.values(v).every((s) => metricStatsSchema.safeParse(s).success),
  { message: 'expected an object of {last, min, max} by metric name' },
);

/**
 * What one row of the run list carries of a run's labels and error, whatever its run.json holds (a crafted one may
 * have 200,000 tags or megabytes of notes): the tags and notes a window can set (api contract setRunLabels), and an
 * error of a few lines. The run page's meta (getRun) has them whole.
 */
export const SUMMARY_BOUNDS = { tags: 32, tagChars: 64, notesChars: 10_000, errorChars: 2_000 } as const;

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
  totalSteps: z.number().optional(),
  metrics: metricsByNameSchema,
  tags: z.array(z.string()),
  notes: z.string(),
  checkpoints: z.number(),
  lastCheckpointStep: z.number().optional(),
  mtime: z.number(),
  headline: z.object({ key: z.string(), label: z.string(), value: z.number().nullable() }).optional(),
});
