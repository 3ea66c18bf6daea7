/**
 * An evaluation's results: what a trainer's `evaluate` gives (engine/training/trainer.ts EvalResult) and what
 * `<home>/evals/<key>/eval.json` caches (engine/runs/evaluation/evaluation.ts), with the checkpoint and the hash of its weights.
 * Each item may carry its whole episode or search tree (the Compare view shows two side by side).
 */
import { z } from 'zod';
import { trajectoryRecordSchema } from './trajectories';
import { versionField } from './version';

export const evalItemSchema = z.object({
  id: z.string(),
  correct: z.boolean(),
  score: z.number(),
  output: z.string().optional(),
  target: z.string().optional(),
  /** The item's episode or tree, in the form trajectories.jsonl holds it (without a step). */
  record: trajectoryRecordSchema.optional(),
});

export const evalResultSchema = z.object({
  version: versionField(),
  /** Everything that fixes which items are evaluated and how: part of the cache key. */
  identity: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  metrics: z.record(z.string(), z.number()),
  items: z.array(evalItemSchema),
});

/** eval.json: a result and the checkpoint it was computed from. */
export const evalFileSchema = evalResultSchema.extend({
  checkpoint: z.string(),
  weightsSha256: z.string().regex(/^[0-9a-f]{64}$/),
});

export type EvalItem = z.output<typeof evalItemSchema>;
export type EvalResultRecord = z.output<typeof evalResultSchema>;
export type EvalFile = z.output<typeof evalFileSchema>;
