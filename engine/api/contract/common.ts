/**
 * The pieces of the contract that every resource's schemas share (contract.ts composes them): a run id, a config as a
 * window gives it and what to launch from it, a config's issues by field, the empty request, and the type each
 * resource's group of method schemas satisfies. Like the rest of contract/, free of Node, DOM and Electron imports.
 */
import { z } from 'zod';
import type { ApiMethod } from './methods';

/** A run id is a folder name under runs/ (engine/runs/folder/home.ts runDir): it may never climb out of it. */
export const runIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { error: 'a run id: letters, digits, ".", "_" and "-"' })
  .refine((s) => !s.includes('..'), { error: 'a run id may not contain ".."' });

export const configIssueSchema = z.object({ path: z.string(), message: z.string() });
export type ApiConfigIssue = z.infer<typeof configIssueSchema>;

/** A config as the form or a file gives it: an object, validated by the run config schema on the host. */
export const rawConfigSchema = z.record(z.string(), z.unknown());

/** What to launch: a preset, a config, or both (the config then is the preset's, edited; the preset names the run). */
export const launchSchema = z.strictObject({
  preset: z.string().min(1).max(100).optional(),
  config: rawConfigSchema.optional(),
  /** `path=value` overrides, exactly as the CLI's `--set` takes them. */
  sets: z.array(z.string().max(10_000)).max(200).optional(),
});

export const empty = z.strictObject({});

/** One resource's methods, each with its request and response (contract.ts checks that together they are all). */
export type MethodSchemas = Partial<Record<ApiMethod, { request: z.ZodType; response: z.ZodType }>>;
