/**
 * The contract's code trees (contract.ts composes it; issue 31, item 7): the folders `mars-lab code tree --out DIR`
 * wrote (trees-plain.jsonl, trees-tplus.jsonl, summary.json; engine/records/codeTree.ts), for the app's Code trees
 * view. The host lists those under `<home>/code-trees/`; a window may open any other such folder by its path, which the
 * host checks like every path from a window (inside the home, resources/ or MARS_LAB_ALLOW_PATHS, symlinks followed).
 * And the launch of one from the app (the Launch view's "Grow code trees"): a HumanEval or MBPP task file checked as it
 * is typed (checkCodeTasks), then `mars-lab code tree` started as a worker process into `<home>/code-trees/<name>`.
 */
import { z } from 'zod';
import { codeTreeLineSchema } from '../../records/codeTree';
import { empty, type MethodSchemas } from './common';

export const codeTreeSearchSchema = z.enum(['plain', 'tplus']);

const outputSchema = z.object({
  /** The folder, absolute on the host. */
  path: z.string(),
  name: z.string(),
  /** The searches whose trees it holds. */
  searches: z.array(codeTreeSearchSchema),
  model: z.string().nullable(),
  tasks: z.string().nullable(),
  problems: z.number().nullable(),
  /** The newest of its files, ISO 8601. */
  modifiedAt: z.string(),
  /** For a folder this host is growing (startCodeTree): running, stopped, failed or done, with its last line. */
  state: z.enum(['running', 'stopped', 'failed', 'done']).nullable(),
  note: z.string().nullable(),
});
export type ApiCodeTreeOutput = z.infer<typeof outputSchema>;

/** One search's figures as summary.json holds them (pythonTrees.ts summariseTrees, and the times). */
const figuresSchema = z.looseObject({
  problems: z.number().optional(),
  firstNodePass: z.number().optional(),
  bestOfTree: z.record(z.string(), z.number()).optional(),
  rootNodes: z.number().optional(),
  rootPass: z.number().optional(),
  refineNodes: z.number().optional(),
  refinePass: z.number().optional(),
  seconds: z.number().optional(),
});
export type ApiCodeTreeFigures = z.infer<typeof figuresSchema>;

/** A HumanEval / MBPP task file: a path inside the allowed folders, or `humaneval` (the copy `data fetch` brought). */
const tasksField = z.string().min(1).max(4096);

export const codeTreeSchemas = {
  /** Reads a task file as `code tree` would: its format and problems, or a UserError naming the file and the fix. */
  checkCodeTasks: {
    request: z.strictObject({ tasks: tasksField, format: z.enum(['auto', 'humaneval', 'mbpp']).default('auto') }),
    response: z.object({
      path: z.string(),
      format: z.enum(['humaneval', 'mbpp']),
      problems: z.int(),
      /** The first problems' ids. */
      first: z.array(z.string()),
    }),
  },
  /** Starts `mars-lab code tree` into `<home>/code-trees/<name>` with a listed model (its id) or an endpoint. */
  startCodeTree: {
    request: z.strictObject({
      tasks: tasksField,
      format: z.enum(['auto', 'humaneval', 'mbpp']).default('auto'),
      /** A model of listModels (fetch:…, path:…), or an endpoint. */
      model: z.string().min(1).max(4200).optional(),
      endpoint: z
        .strictObject({
          baseUrl: z.string().min(1).max(2000),
          model: z.string().min(1).max(500),
          apiKeyEnv: z
            .string()
            .regex(/^[A-Za-z_][A-Za-z0-9_]{0,99}$/, { error: 'the NAME of an environment variable' })
            .optional(),
        })
        .optional(),
      /** `code tree --problems`: N, A:B or ids separated by commas. */
      problems: z
        .string()
        .max(2000)
        .regex(/^(\d+|\d+:\d+|[^\s,-][^,]*(,[^,]+)*)$/, { error: 'N, A:B or ids separated by commas' })
        .optional(),
      nodes: z.int().min(1).max(256).default(8),
      search: z.enum(['plain', 'tplus', 'both']).default('both'),
      greedy: z.boolean().default(true),
      /** The folder's name under `<home>/code-trees/` (default: the time and the task file's name). */
      name: z
        .string()
        .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$/, { error: 'letters, digits, ".", "_" and "-" (at most 80)' })
        .refine((s) => !s.includes('..'), { error: 'a name may not contain ".."' })
        .optional(),
    }),
    response: z.object({ name: z.string(), path: z.string() }),
  },
  /** Stops a tree this host is growing (SIGTERM): what it wrote so far stays (summary.json after each part). */
  stopCodeTree: {
    request: z.strictObject({ name: z.string().min(1).max(80) }),
    response: z.object({ stopped: z.boolean() }),
  },
  /** The code-tree folders under `<home>/code-trees/`, newest first. */
  listCodeTrees: {
    request: empty,
    response: z.object({ folder: z.string(), outputs: z.array(outputSchema) }),
  },
  /** One search's trees of a code-tree folder: an absolute path, or a folder's name under `<home>/code-trees/`. */
  getCodeTrees: {
    request: z.strictObject({ path: z.string().min(1).max(4096), search: codeTreeSearchSchema.optional() }),
    response: outputSchema.extend({
      search: codeTreeSearchSchema,
      isolation: z.string().nullable(),
      figures: figuresSchema.nullable(),
      trees: z.array(codeTreeLineSchema),
    }),
  },
} as const satisfies MethodSchemas;
