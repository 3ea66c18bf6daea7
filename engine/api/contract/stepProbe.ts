/**
 * The contract's time probe (contract.ts composes it; issue 33, item 3): a launch's expected time a step, measured by
 * `mars-lab probe` in a worker (engine/runs/probe/stepTimeProbe.ts) and extrapolated to one step of the config. The
 * result schema also checks the worker's answer line where the host reads it (stepProbeMethods.ts).
 */
import { z } from 'zod';
import { launchSchema, type MethodSchemas } from './common';

const seconds = z.number().nonnegative();
const pair = z.tuple([z.number(), z.number()]);

export const stepProbeResultSchema = z.object({
  algorithm: z.string(),
  samplingSeconds: seconds,
  updateSeconds: seconds,
  totalSeconds: seconds,
  /** The fitted parts (stepTimeEstimate.ts): a chunk's fixed and per-token seconds, chunks a step; a pass's fixed and per-row seconds. */
  parts: z.object({
    chunkFixed: seconds,
    chunkPerToken: seconds,
    chunks: z.number().int().positive(),
    stepFixed: seconds,
    perRow: seconds,
  }),
  /** One step as the config sets it. */
  step: z.object({
    rows: z.number().int().positive(),
    chunkRows: z.number().int().positive(),
    replyTokens: z.number().int().positive(),
    rowTokens: z.number().int().positive(),
    promptTokens: z.number().int().nonnegative(),
    epochs: z.number().int().positive(),
    miniBatches: z.number().int().positive(),
  }),
  /** What was timed, in seconds: two sampling lengths of one chunk, and update passes of one row and of several. */
  measured: z.object({
    loadSeconds: seconds,
    sampling: z.object({ rows: z.number().int().positive(), tokens: pair, seconds: pair }),
    update: z.object({ rows: pair, tokens: z.number().int().positive(), seconds: pair }),
  }),
  basis: z.object({ backend: z.string(), kernel: z.string(), threads: z.number(), model: z.string() }),
  probeSeconds: seconds,
  note: z.string(),
});
export type ApiStepProbe = z.infer<typeof stepProbeResultSchema>;

/** A window's name for its probe, to cancel it and to tell its progress events from another window's. */
const probeIdSchema = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, 'letters, digits, _ and - (at most 64)');

export const stepProbeSchemas = {
  /** Measures a launch's step time in a worker (tens of seconds; progress as stepProbeProgress events). */
  probeStepTime: {
    request: launchSchema.extend({ probeId: probeIdSchema }),
    response: z.object({ result: stepProbeResultSchema }),
  },
  /** Ends a probe this host started (its worker is terminated; probeStepTime then fails with 'cancelled'). */
  cancelStepProbe: {
    request: z.strictObject({ probeId: probeIdSchema }),
    response: z.object({ cancelled: z.boolean() }),
  },
} as const satisfies MethodSchemas;
