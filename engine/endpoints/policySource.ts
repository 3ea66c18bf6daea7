/**
 * Where a system's or an agent's text comes from (zod): the run's own TF.js model (`{ "kind": "model" }`, the default
 * everywhere) or an OpenAI-compatible endpoint — vLLM, SGLang, llama.cpp's server, Ollama, or mars-lab's own
 * `serve-model`:
 *
 *   { "kind": "endpoint", "baseUrl": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen2.5-7B-Instruct",
 *     "apiKeyEnv": "VLLM_KEY", "sampling": { "temperature": 0 }, "concurrency": 8 }
 *
 * The API key is named by an environment variable, never written in a config: configs are copied into run folders.
 * Endpoint sources are for evaluation (`mars-lab eval`); training stays with the engine's own models.
 */
import { z } from 'zod';

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export const endpointSamplingSchema = z.strictObject({
  /** Pins the temperature of every call; by default each call sends the evaluation's own (eval.temperature, …). */
  temperature: z.number().min(0).max(2).optional(),
  /** Pins top-p; by default the evaluation's own (sampler.topP). */
  topP: z.number().gt(0).max(1).optional(),
  /** Sent as `seed` (servers that honour it make sampled evaluations repeatable). */
  seed: z.int().min(0).max(2 ** 31 - 1).optional(),
});

export const endpointSourceSchema = z.strictObject({
  kind: z.literal('endpoint'),
  baseUrl: z
    .string()
    .max(2000)
    .refine((u) => /^https?:\/\/[^\s]+$/.test(u) && URL.canParse(u), { error: 'must be an http:// or https:// URL such as http://127.0.0.1:8000/v1' }),
  model: z.string().min(1).max(500),
  apiKeyEnv: z.string().regex(ENV_NAME, { error: 'must be the name of an environment variable (letters, digits, _), never the key itself' }).optional(),
  sampling: endpointSamplingSchema.prefault({}),
  concurrency: z.int().min(1).max(1024).default(8),
  timeoutMs: z.int().min(100).max(3_600_000).default(120_000),
  maxRetries: z.int().min(0).max(20).default(4),
  /** Receive answers as server-sent events (the default waits for the whole answer). */
  stream: z.boolean().default(false),
});

export const modelSourceSchema = z.strictObject({ kind: z.literal('model') });

export const policySourceSchema = z.discriminatedUnion('kind', [modelSourceSchema, endpointSourceSchema]);

export type EndpointSource = z.output<typeof endpointSourceSchema>;
export type PolicySource = z.output<typeof policySourceSchema>;

/** A source without anything secret or machine-local that changes its answers: what an evaluation's identity names. */
export function sourceIdentity(s: PolicySource): string {
  if (s.kind === 'model') return 'model';
  return JSON.stringify({ baseUrl: s.baseUrl, model: s.model, sampling: s.sampling });
}
