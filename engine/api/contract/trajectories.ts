/**
 * The contract's trajectories (contract.ts composes it): the filter of a search, the lines of trajectories.jsonl and
 * the step in flight for the inspectors, and the rollouts two runs logged, paired by prompt and compared.
 */
import { z } from 'zod';
import { runIdSchema, type MethodSchemas } from './common';

/** Which trajectories a search keeps (engine/runs/trajectories/trajectoryQuery.ts says what each field means per record kind). */
export const trajectoryFilterSchema = z.strictObject({
  stepMin: z.number().int().min(0).optional(),
  stepMax: z.number().int().min(0).optional(),
  rewardMin: z.number().optional(),
  rewardMax: z.number().optional(),
  /** A MARS question family (direct, paraphrase, bridge…). */
  family: z.string().min(1).max(100).optional(),
  /** A MARTI agent id. */
  agent: z.string().min(1).max(100).optional(),
  outcome: z.enum(['solved', 'unsolved']).optional(),
  malformed: z.boolean().optional(),
  /** Case-insensitive text in the question, answers, turns, outputs, statement or programs. */
  text: z.string().min(1).max(200).optional(),
});
export type ApiTrajectoryFilter = z.infer<typeof trajectoryFilterSchema>;

/** The methods of trajectories and rollouts. */
export const trajectorySchemas = {
  /**
   * Lines of trajectories.jsonl for the inspectors (engine/runs/trajectories/trajectoryIndex.ts, trajectoryQuery.ts); `total` is the
   * count of complete lines so far. By position (0 = the first) from `offset`; or, with `step`, that step's lines
   * directly (the first step at or after it; `offset`..`stepEnd` are its positions); or, with `filter`, the lines
   * that pass it, scanned newest first from `before` (default: the end) within a byte budget: `positions` say where
   * each record is, `next` where to continue (null: every line in range was looked at). `pages` holds the text of
   * the pages MARS episodes found, by `w<world seed>:<page id>`.
   */
  getTrajectories: {
    request: z.strictObject({
      runId: runIdSchema,
      offset: z.number().int().min(0).default(0),
      limit: z.number().int().min(1).max(500).default(20),
      step: z.number().int().min(0).optional(),
      filter: trajectoryFilterSchema.optional(),
      before: z.number().int().min(0).optional(),
    }),
    response: z.object({
      total: z.number(),
      offset: z.number(),
      records: z.array(z.unknown()),
      steps: z.object({ first: z.number().nullable(), last: z.number().nullable(), count: z.number() }).optional(),
      step: z.number().nullable().optional(),
      stepEnd: z.number().optional(),
      positions: z.array(z.number()).optional(),
      next: z.number().nullable().optional(),
      scanned: z.number().optional(),
      pages: z.record(z.string(), z.object({ title: z.string(), text: z.string() })).optional(),
      /**
       * Fewer records than asked, because the lines are larger than one answer's byte bound (16 MiB): continue from
       * `offset + records.length` (by position or step) or from `next` (a filter).
       */
      truncated: z.literal(true).optional(),
    }),
  },
  /**
   * The records of the step in flight (live.json: MARTI's trees as they grow), or step null and none between steps.
   * They are not final: the step's records in trajectories.jsonl replace them (same step and tree id) when it ends.
   */
  getLiveTrajectories: {
    request: z.strictObject({ runId: runIdSchema }),
    response: z.object({ step: z.number().nullable(), records: z.array(z.unknown()) }),
  },
  /** The steps at which a run logged rollouts (trajectories.jsonl) and their kind: what compareRollouts can pair. */
  rolloutSteps: {
    request: z.strictObject({ runId: runIdSchema }),
    response: z.object({
      kind: z.string().nullable(),
      steps: z.array(z.number()),
      records: z.number(),
      skipped: z.number(),
    }),
  },
  /**
   * Two runs (or two steps of one; a side without a step: every step pooled) compared on the rollouts they logged,
   * paired by prompt, no evaluation (rolloutCompare.ts): what runs imported from verl or MARTI, which have no
   * checkpoints, can be compared on. Per shared prompt each side's mean sample score; McNemar when they are all 0/1,
   * the paired bootstrap always; the prompts listed largest difference first (at most 500).
   */
  compareRollouts: {
    request: z.strictObject({
      a: z.strictObject({ runId: runIdSchema, step: z.number().int().nonnegative().optional() }),
      b: z.strictObject({ runId: runIdSchema, step: z.number().int().nonnegative().optional() }),
    }),
    response: z.object({
      kind: z.string(),
      a: z.object({ runId: z.string(), step: z.number().nullable(), prompts: z.number(), samples: z.number() }),
      b: z.object({ runId: z.string(), step: z.number().nullable(), prompts: z.number(), samples: z.number() }),
      shared: z.number(),
      onlyA: z.number(),
      onlyB: z.number(),
      meanA: z.number().nullable(),
      meanB: z.number().nullable(),
      outcome: z.enum(['binary', 'real']),
      mcnemar: z.object({ n01: z.number(), n10: z.number(), pValue: z.number() }).nullable(),
      scoreDiff: z.object({ meanDiff: z.number(), low: z.number(), high: z.number() }).nullable(),
      prompts: z.array(
        z.object({
          key: z.string(),
          text: z.string(),
          a: z.object({ mean: z.number(), n: z.number() }),
          b: z.object({ mean: z.number(), n: z.number() }),
        }),
      ),
    }),
  },
} as const satisfies MethodSchemas;
