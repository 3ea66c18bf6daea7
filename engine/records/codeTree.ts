/**
 * What `mars-lab code tree --out DIR` writes (engine/marti/python/pythonTreeLines.ts): `trees-plain.jsonl` and
 * `trees-tplus.jsonl`, one line per problem with every node of its search tree (program, reply, verdict, feedback, the
 * prompt it was written from and, since issue 31 item 7, each test's outcome and error), and `summary.json` with the
 * figures. Not a run folder: the app opens such a folder in its Code trees view (engine/api/host/codeTreeMethods.ts),
 * which reads the lines with these schemas. Fields added later are optional, so a folder written before reads.
 *
 * A `martipy` training run (engine/marti/python/trainer.ts) writes the same trees into its trajectories.jsonl as
 * `code.tree` records: each node also carries its GRPO advantage within the tree.
 */
import { z } from 'zod';
import { versionField } from './version';

export const codeTestOutcomeSchema = z.object({
  /** The test's source: an MBPP assert, or HumanEval's `check(entry_point)`. */
  test: z.string(),
  passed: z.boolean(),
  /** `Type: message`, or the sandbox's reason (a timeout, a limit); null when it passed. */
  error: z.string().nullable(),
  /** The line that raised it, when known. */
  at: z.string().nullable(),
});

export const codeTreeNodeSchema = z.object({
  /** Expansion order, from 1 (the root, the problem, is not written). */
  id: z.int().positive(),
  /** 0: a fresh program written from the problem; else the node it refines. */
  parent: z.int().nonnegative(),
  depth: z.int().positive(),
  agent: z.string(),
  /** Every test passed. */
  passed: z.boolean(),
  score: z.number(),
  /** passed, failed, timeout, memory, output-limit, crashed, sandbox-error or no-code. */
  status: z.string(),
  reason: z.string(),
  /** null: no code block in the reply. */
  program: z.string().nullable(),
  reply: z.string(),
  reply_tokens: z.int().nonnegative(),
  finish: z.string(),
  /** The feedback a refinement of this node reads (plain or rich, the tree's form). */
  feedback: z.string(),
  /** The user message the node was written from. */
  prompt: z.string(),
  tests: z.array(codeTestOutcomeSchema).optional(),
});

export const codeTreeLineSchema = z.object({
  task_id: z.string(),
  /** The problem as the model is shown it (HumanEval: the prompt to continue; MBPP: the statement). */
  prompt: z.string().optional(),
  format: z.enum(['humaneval', 'mbpp']).optional(),
  entry_point: z.string().nullable().optional(),
  nodes: z.array(codeTreeNodeSchema),
});

/** summary.json: read loosely (the figures are shown as they are); the fields the app names are checked. */
export const codeTreeSummarySchema = z.looseObject({
  model: z.string().optional(),
  tasks: z.string().optional(),
  problems: z.number().optional(),
  nodes: z.number().optional(),
  seed: z.number().optional(),
  isolation: z.string().optional(),
});

/** A training step's tree (trajectories.jsonl, kind `code.tree`): the lines above, each node with its advantage. */
export const codeTreeRecordSchema = codeTreeLineSchema.extend({
  kind: z.literal('code.tree'),
  version: versionField(),
  nodes: z.array(
    codeTreeNodeSchema.extend({
      /** The node's advantage in its tree's group (0 for every node of a tree whose rewards are all equal). */
      advantage: z.number(),
    }),
  ),
});

export type CodeTreeRecord = z.output<typeof codeTreeRecordSchema>;
export type CodeTestOutcome = z.output<typeof codeTestOutcomeSchema>;
export type CodeTreeNode = z.output<typeof codeTreeNodeSchema>;
export type CodeTreeLine = z.output<typeof codeTreeLineSchema>;
export type CodeTreeSummary = z.output<typeof codeTreeSummarySchema>;
