/**
 * The contract's runs (contract.ts composes it): run.json, a metrics line and a decimated series as sent, and the
 * methods that start, stop, resume, list, read and label runs and read their metrics.
 */
import { z } from 'zod';
import { RUN_STATUSES, runSummarySchema } from '../../runs/summary/runSummary';
import { empty, launchSchema, runIdSchema, type MethodSchemas } from './common';

export const runStatusSchema = z.enum(RUN_STATUSES);
export type RunStatus = z.infer<typeof runStatusSchema>;

/** run.json (engine/runs/folder/runFolder.ts RunMeta). */
export const runMetaSchema = z.object({
  id: z.string(),
  createdAt: z.string(),
  algorithm: z.string(),
  preset: z.string().optional(),
  config: z.unknown(),
  engineVersion: z.string(),
  backend: z.custom<object>((v) => typeof v === 'object' && v !== null).optional(),
  seed: z.number(),
  status: runStatusSchema,
  statusAt: z.string(),
  pid: z.number().int().optional(),
  tags: z.array(z.string()),
  notes: z.string(),
  lastCheckpointStep: z.number().int().nonnegative().optional(),
});
export type ApiRunMeta = z.infer<typeof runMetaSchema>;

/** A metric value as sent: null where the run logged NaN or an infinity. */
const metricValue = z.number().nullable();

/** One line of metrics.jsonl as sent: step, time (seconds since the epoch) and the metrics. */
export const metricPointSchema = z.object({ step: z.number(), time: metricValue }).catchall(metricValue);
export type ApiMetricPoint = z.infer<typeof metricPointSchema>;

/** One row of the run list (engine/runs/summary/runIndex.ts RunSummary). */
export { runSummarySchema };
export type ApiRunSummary = z.infer<typeof runSummarySchema>;

const seriesSchema = z.object({
  /** Bucket x (the step or the time of the bucket's last point) and its min, max and last value (decimate.ts). */
  x: z.array(z.number()),
  min: z.array(z.number()),
  max: z.array(z.number()),
  last: z.array(z.number()),
});
export type ApiSeries = z.infer<typeof seriesSchema>;

/** The methods of runs: their processes, the list, one run, its metrics and its labels. */
export const runSchemas = {
  /** Starts a run in its own process; answers once its folder exists. An invalid config is refused with its issues. */
  startRun: { request: launchSchema, response: z.object({ runId: z.string() }) },
  /** Asks the run's process to finish its step, write a checkpoint and stop (as Ctrl-C does in a terminal). */
  stopRun: {
    request: z.strictObject({ runId: runIdSchema }),
    response: z.object({ stopping: z.boolean(), message: z.string() }),
  },
  /** Continues a stopped, failed or interrupted run from its last checkpoint, in a new process. */
  resumeRun: { request: z.strictObject({ runId: runIdSchema }), response: z.object({ runId: z.string() }) },
  listRuns: { request: empty, response: z.object({ home: z.string(), runs: z.array(runSummarySchema) }) },
  /** One run: run.json, its summary, checkpoints, the latest events, what its logs hold. Metrics: getMetricSeries. */
  getRun: {
    request: z.strictObject({
      runId: runIdSchema,
      eventsLimit: z.number().int().min(0).max(5000).optional(),
      /** Only events before this one (0 = the first): the continuation of an answer whose events were cut. */
      eventsBefore: z.number().int().min(0).optional(),
    }),
    response: z.object({
      meta: runMetaSchema,
      summary: runSummarySchema.optional(),
      checkpoints: z.array(z.object({ step: z.number() })),
      /**
       * The last `eventsLimit` (default 200) lines of events.jsonl (before `eventsBefore`), oldest first, at most 4 MiB
       * of them; eventsTotal counts them all, and `eventsFrom` is the position of the first one sent (pass it as
       * `eventsBefore` for the ones before).
       */
      events: z.array(z.record(z.string(), z.unknown())),
      eventsTotal: z.number(),
      eventsFrom: z.number().optional(),
      metricNames: z.array(z.string()),
      metricPoints: z.number(),
      /** Step of the last metrics line; null before the first. */
      lastStep: z.number().nullable(),
      trajectories: z.number(),
      /** Whether this host launched the process now running it (stop works for terminal runs too, by their pid). */
      hostProcess: z.boolean(),
    }),
  },
  /**
   * Metric series decimated to at most `width` buckets of min/max/last (engine/runs/summary/decimate.ts), over the whole run or
   * the zoomed range [xMin, xMax]; x is the step or the time (seconds since the epoch).
   */
  getMetricSeries: {
    request: z.strictObject({
      runId: runIdSchema,
      names: z.array(z.string().max(200)).max(100).optional(),
      x: z.enum(['step', 'time']).default('step'),
      width: z.number().int().min(1).max(20_000).default(1000),
      xMin: z.number().optional(),
      xMax: z.number().optional(),
    }),
    response: z.object({
      points: z.number(),
      lastStep: z.number().nullable(),
      series: z.record(z.string(), seriesSchema),
    }),
  },
  /**
   * Several runs' series of the same metrics (the Runs view's overlay), each decimated to `width` buckets as
   * getMetricSeries does, with each run's progress: last step, total steps (budget.steps), recent seconds per step.
   * A run that cannot be read answers its `error` instead of failing the call (engine/api/views/runsSeries.ts).
   */
  getRunsMetricSeries: {
    request: z.strictObject({
      runIds: z.array(runIdSchema).min(1).max(50),
      names: z.array(z.string().max(200)).max(100),
      x: z.enum(['step', 'time']).default('step'),
      width: z.number().int().min(1).max(5000).default(600),
    }),
    response: z.object({
      runs: z.array(
        z.object({
          runId: z.string(),
          /** Step of the last complete metrics line (read from the end of the log), null before the first. */
          lastStep: z.number().nullable(),
          totalSteps: z.number().nullable(),
          secondsPerStep: z.number().nullable(),
          /** Time (seconds since the epoch) of the last metrics line. */
          lastTime: z.number().nullable(),
          series: z.record(z.string(), seriesSchema),
          error: z.string().optional(),
        }),
      ),
    }),
  },
  /** Replaces a run's tags and/or notes (kept in labels.json, laid over run.json's). */
  setRunLabels: {
    request: z.strictObject({
      runId: runIdSchema,
      tags: z.array(z.string().trim().min(1).max(64)).max(32).optional(),
      notes: z.string().max(10_000).optional(),
    }),
    response: z.object({ meta: runMetaSchema }),
  },
} as const satisfies MethodSchemas;
