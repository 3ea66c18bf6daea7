/**
 * The contract's presets and configs (contract.ts composes it): the presets a launch may start from, the run config's
 * JSON Schema the launch form is drawn from, and the validation of a launch before it starts.
 */
import { z } from 'zod';
import { configIssueSchema, empty, launchSchema, rawConfigSchema, type MethodSchemas } from './common';

const presetInfoSchema = z.object({
  name: z.string(),
  description: z.string(),
  algorithm: z.string(),
  expectedRuntime: z.object({
    cpuSeconds: z.number().nullable(),
    gpuSeconds: z.number().nullable(),
    measuredOn: z.string(),
  }),
  /** The preset's partial config as written; the schema's defaults fill the rest. */
  config: rawConfigSchema,
  /** The one a newcomer should run first (listed first); sized for a GPU only. */
  recommended: z.boolean().optional(),
  gpuOnly: z.boolean().optional(),
});
export type ApiPreset = z.infer<typeof presetInfoSchema>;

/**
 * A real-model run's memory plan (chatgrpo), read from the model's header: what a step needs here and what may be used.
 * Absent for runs of mars-lab's own models (their check is the config's, an issue on the field).
 */
const memoryPlanSchema = z.object({ need: z.number(), limit: z.number(), what: z.string() });
export type ApiMemoryPlan = z.infer<typeof memoryPlanSchema>;

/** The methods of presets and configs. */
export const presetSchemas = {
  listPresets: { request: empty, response: z.object({ presets: z.array(presetInfoSchema) }) },
  /** The run config as JSON Schema (draft 2020-12), from which the launch form is drawn. */
  configSchema: { request: empty, response: z.object({ schema: z.record(z.string(), z.unknown()) }) },
  /**
   * The config a launch would run, with defaults filled in, or every issue with its dotted field path; for a run of a
   * real model, its memory plan here (a step that does not fit is an issue on task.groupSize).
   */
  validateConfig: {
    request: launchSchema,
    response: z.discriminatedUnion('ok', [
      z.object({ ok: z.literal(true), config: rawConfigSchema, memory: memoryPlanSchema.optional() }),
      z.object({ ok: z.literal(false), issues: z.array(configIssueSchema), memory: memoryPlanSchema.optional() }),
    ]),
  },
} as const satisfies MethodSchemas;
