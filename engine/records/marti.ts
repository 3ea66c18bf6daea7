/**
 * MARTI's trajectories.jsonl record: one search tree, every node with its program, tests, posteriors and what the
 * search drew to expand it (engine/marti/trainer.ts treeRecord; the tree explorer draws it). Evaluation trees
 * (`mode: 'eval'`, an evaluation item's `record`) have the same form; a live tree (live.json, the step in flight) has
 * `live: true` and the `budget` of nodes it will reach, and no advantages yet.
 */
import { z } from 'zod';
import { versionField } from './version';

/** A posterior as the search summarises it (engine/marti/search/posterior.ts summarizePosterior). */
export const posteriorSummarySchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('beta'), n: z.number(), a: z.number(), b: z.number(), mean: z.number() }),
  z.object({
    kind: z.literal('gaussian'),
    n: z.number(),
    m: z.number(),
    kappa: z.number(),
    nu: z.number(),
    tau2: z.number(),
    mean: z.number(),
  }),
]);

/** One GEN/CONT decision on the way down (engine/marti/search/abmcts.ts SelectionStep). */
export const selectionStepSchema = z.object({
  nodeId: z.int().nonnegative(),
  gen: posteriorSummarySchema,
  cont: posteriorSummarySchema,
  genDraw: z.number(),
  contDraw: z.number(),
  decision: z.enum(['GEN', 'CONT']),
  children: z
    .array(z.object({ nodeId: z.int().nonnegative(), posterior: posteriorSummarySchema, draw: z.number() }))
    .optional(),
  chosenChild: z.int().nonnegative().optional(),
});

/** What the search drew when it selected a node's expansion (abmcts.ts ExpansionTrace). */
export const expansionTraceSchema = z.object({
  path: z.array(selectionStepSchema),
  forcedGen: z.boolean(),
  agent: z.object({
    method: z.enum(['only', 'forced', 'thompson', 'ucb']),
    /** Per agent: its statistics and the value compared (null stands for +∞, an untried agent under UCB). */
    candidates: z.array(
      z.object({ agentId: z.string(), n: z.number(), posterior: posteriorSummarySchema, value: z.number().nullable() }),
    ),
    chosen: z.string(),
  }),
});

export const testOutcomeSchema = z.object({
  passed: z.int().nonnegative(),
  total: z.int().nonnegative(),
  score: z.number().nullable(),
});

export const martiNodeSchema = z.object({
  /** Expansion order: the root is 0. */
  id: z.int().nonnegative(),
  parentId: z.int().nonnegative().nullable(),
  depth: z.int().nonnegative(),
  /** null for the root. */
  agent: z.string().nullable(),
  paramId: z.string().nullable(),
  prompt: z.string().nullable(),
  completion: z.string().nullable(),
  program: z.string().nullable(),
  feedback: z.string().nullable(),
  parseError: z.string().nullable(),
  finish: z.string().nullable(),
  public: testOutcomeSchema.nullable(),
  private: testOutcomeSchema.nullable(),
  /** null: unknown (an imported MARTI node whose evaluation left no score, engine/interop/import/). */
  score: z.number().nullable(),
  genObservation: z.number().nullable(),
  expansion: expansionTraceSchema.nullable(),
  posteriors: z.object({ gen: posteriorSummarySchema, cont: posteriorSummarySchema }).optional(),
  advantage: z.number().nullable(),
  shapedReward: z.number().nullable(),
  /** Whether the node's sample trained its agent this step ('buffered': kept for a later update). */
  trained: z.union([z.boolean(), z.literal('buffered')]),
  tokens: z.int().nonnegative(),
});

export const martiTreeSchema = z.object({
  kind: z.literal('marti.tree'),
  version: versionField(),
  mode: z.string(),
  treeId: z.string(),
  taskId: z.string(),
  statement: z.string(),
  target: z.string(),
  publicTests: z.array(z.object({ input: z.unknown(), expected: z.unknown() })),
  /** The team's agent ids, in config order (read-only: the trainer hands over its search config's list). */
  agents: z.array(z.string()).readonly(),
  /** null where a node's score is unknown (imported trees only). */
  metrics: z.object({
    nodes: z.number(),
    pass1: z.number().nullable(),
    passN: z.number().nullable(),
    avgPass1: z.number().nullable(),
    gap: z.number().nullable(),
  }),
  agentShares: z.record(z.string(), z.number()),
  nodes: z.array(martiNodeSchema),
  /** A tree of the step in flight, still growing (live.json): its final record replaces it. */
  live: z.boolean().optional(),
  /** Nodes the tree will have when its search ends (live trees only). */
  budget: z.int().positive().optional(),
});

export type PosteriorSummary = z.output<typeof posteriorSummarySchema>;
export type ExpansionTrace = z.output<typeof expansionTraceSchema>;
export type TestOutcome = z.output<typeof testOutcomeSchema>;
export type MartiNode = z.output<typeof martiNodeSchema>;
export type MartiTreeRecord = z.output<typeof martiTreeSchema>;
