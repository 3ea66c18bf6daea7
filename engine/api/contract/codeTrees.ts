/**
 * The contract's code trees (contract.ts composes it; issue 31, item 7): the folders `mars-lab code tree --out DIR`
 * wrote (trees-plain.jsonl, trees-tplus.jsonl, summary.json; engine/records/codeTree.ts), for the app's Code trees
 * view. The host lists those under `<home>/code-trees/`; a window may open any other such folder by its path, which the
 * host checks like every path from a window (inside the home, resources/ or MARS_LAB_ALLOW_PATHS, symlinks followed).
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

export const codeTreeSchemas = {
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
