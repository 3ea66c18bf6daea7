/**
 * The contract's evaluations (contract.ts composes it): a checkpoint scored on its run's held-out items, two compared
 * on the same items, and an evaluation with endpoint agents launched from the app as a run.
 */
import { z } from 'zod';
import { configIssueSchema, launchSchema, rawConfigSchema, runIdSchema, type MethodSchemas } from './common';

const checkpointRefSchema = z.strictObject({ runId: runIdSchema, step: z.number().int().nonnegative() });

const evalItemSchema = z.looseObject({
  id: z.string(),
  correct: z.boolean(),
  score: z.number(),
  output: z.string().optional(),
  target: z.string().optional(),
});

export const checkpointEvalSchema = z.object({
  checkpoint: z.string(),
  runId: z.string(),
  step: z.number(),
  identity: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  metrics: z.record(z.string(), z.number().nullable()),
  items: z.array(evalItemSchema),
  cached: z.boolean(),
});
export type ApiCheckpointEval = z.infer<typeof checkpointEvalSchema>;

/** The methods of evaluation: checkpoints, and endpoint agents. */
export const evaluationSchemas = {
  /** Scores a checkpoint on its run's held-out items, in a separate process; cached under <home>/evals/. */
  evaluateCheckpoint: { request: checkpointRefSchema, response: checkpointEvalSchema },
  /** Both checkpoints on the same held-out items (A's): metric table, flipped items, McNemar, paired bootstrap. */
  compareCheckpoints: {
    request: z.strictObject({ a: checkpointRefSchema, b: checkpointRefSchema }),
    response: z.object({
      identity: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
      a: checkpointEvalSchema,
      b: checkpointEvalSchema,
      metrics: z.array(
        z.object({ name: z.string(), a: z.number().nullable(), b: z.number().nullable(), diff: z.number().nullable() }),
      ),
      flippedToWrong: z.array(z.string()),
      flippedToRight: z.array(z.string()),
      mcnemar: z.object({ n01: z.number(), n10: z.number(), pValue: z.number() }),
      scoreDiff: z.object({ meanDiff: z.number(), low: z.number(), high: z.number() }),
    }),
  },
  /**
   * An evaluation with endpoint agents (MARS systems, MARTI agents) as `mars-lab eval` runs it, launched from the app:
   * the launch's config through the run config schema, then every system or agent an endpoint, key variables that are
   * names set in the app's environment, files inside the folders a window may name (endpointEvalMethods.ts).
   */
  validateEndpointEval: {
    request: launchSchema.extend({ fresh: z.boolean().optional() }),
    response: z.discriminatedUnion('ok', [
      z.object({ ok: z.literal(true), config: rawConfigSchema }),
      z.object({ ok: z.literal(false), issues: z.array(configIssueSchema) }),
    ]),
  },
  /**
   * Starts it as a run (its own process; answers once the folder exists): live in Runs, stopped by stopRun (requests in
   * flight cancelled, answered ones kept), resumed by resumeRun; `fresh` asks every request again.
   */
  startEndpointEval: {
    request: launchSchema.extend({ fresh: z.boolean().optional() }),
    response: z.object({ runId: z.string() }),
  },
} as const satisfies MethodSchemas;
