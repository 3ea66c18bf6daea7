/**
 * Where a system's or an agent's text comes from (zod): the run's own TF.js model (`{ "kind": "model" }`, the default
 * everywhere) or an OpenAI-compatible endpoint — vLLM, SGLang, llama.cpp's server, Ollama, or mars-lab's own
 * `serve-model`:
 *
 *   { "kind": "endpoint", "baseUrl": "http://127.0.0.1:8000/v1", "model": "Qwen/Qwen2.5-7B-Instruct",
 *     "apiKeyEnv": "VLLM_KEY", "sampling": { "temperature": 0 }, "concurrency": 8 }
 *
 * The API key is named by an environment variable, never written in a config: configs are copied into run folders.
 *
 * `instructions` says how a prompt reaches the model: "none" sends the run's raw prompt text to /v1/completions (what a
 * mars-lab checkpoint behind serve-model was trained on: the evaluation is the in-process one); "chat" sends a chat
 * whose system message teaches the format (MARS's tags, System 1's distillation, MARTI's language) with one worked
 * example from a training world, and reads the answer tolerantly (engine/runs/evaluation/chat/). "auto", the default, asks
 * the server's GET /v1/models once: a model serve-model owns ("owned_by": "mars-lab") gets "none", any other listed
 * model "chat"; a server that cannot be asked (or lists no models) gets "none". Its verdict is journaled.
 * Endpoint sources are for evaluation (`mars-lab eval`); training stays with the engine's own models.
 */
import { z } from 'zod';
import { field } from '../training/configSections';

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

export const INSTRUCTIONS = ['auto', 'none', 'chat'] as const;
export type Instructions = (typeof INSTRUCTIONS)[number];

export const endpointSamplingSchema = z.strictObject({
  temperature: field(
    z.number().min(0).max(2).optional(),
    'Temperature',
    "Pins the temperature of every call; by default each call sends the evaluation's own (eval.temperature and the search's).",
  ),
  topP: field(
    z.number().gt(0).max(1).optional(),
    'Top-p',
    "Pins top-p of every call; by default the evaluation's own (sampler.topP).",
  ),
  seed: field(
    z
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .optional(),
    'Seed',
    'Sent as `seed`: servers that honour it make sampled evaluations repeatable.',
  ),
});

export const endpointSourceSchema = z.strictObject({
  kind: field(
    z.literal('endpoint'),
    'Endpoint',
    'An OpenAI-compatible server (vLLM, SGLang, llama.cpp, Ollama, mars-lab serve-model).',
  ),
  baseUrl: field(
    z
      .string()
      .max(2000)
      .refine((u) => /^https?:\/\/[^\s]+$/.test(u) && URL.canParse(u), {
        error: 'must be an http:// or https:// URL such as http://127.0.0.1:8000/v1',
      }),
    'Base URL',
    "The server's OpenAI-compatible root, with its /v1, e.g. http://127.0.0.1:8000/v1.",
  ),
  model: field(z.string().min(1).max(500), 'Model', 'The model id the server serves (GET /v1/models lists them).'),
  apiKeyEnv: field(
    z
      .string()
      .regex(ENV_NAME, {
        error: 'must be the name of an environment variable (letters, digits, _), never the key itself',
      })
      .optional(),
    'API key variable',
    'The environment variable that holds the API key (the key itself is never written in a config, a run folder or a log).',
  ),
  sampling: field(
    endpointSamplingSchema.prefault({}),
    'Sampling',
    "Settings that override the evaluation's own for this endpoint.",
  ),
  concurrency: field(
    z.int().min(1).max(1024).default(8),
    'Concurrency',
    'Most requests in flight at once; the rest wait (back-pressure).',
  ),
  timeoutMs: field(
    z.int().min(100).max(3_600_000).default(120_000),
    'Timeout (ms)',
    'How long one request may take before it is retried or fails.',
  ),
  maxRetries: field(
    z.int().min(0).max(20).default(4),
    'Retries',
    'Retries with exponential backoff on 408/409/429/5xx and lost connections.',
  ),
  stream: field(z.boolean().default(false), 'Stream', 'Receive answers as server-sent events instead of whole.'),
  instructions: field(
    z.enum(INSTRUCTIONS).default('auto'),
    'Instructions',
    'How prompts reach the model: "none" (the raw prompt, for a mars-lab checkpoint behind serve-model), "chat" (a system message teaching the format with a worked example, for a real chat model), or "auto" (asks GET /v1/models: "none" for serve-model, "chat" for anything else).',
  ),
});

export const modelPolicySchema = z.strictObject({
  kind: field(z.literal('model'), 'Own model', "The run's own TF.js model (the checkpoint being evaluated)."),
});

export const policySourceSchema = field(
  z.discriminatedUnion('kind', [modelPolicySchema, endpointSourceSchema]),
  'Policy source',
  "The run's own model, or an OpenAI-compatible endpoint.",
);

export type EndpointSource = z.output<typeof endpointSourceSchema>;
export type PolicySource = z.output<typeof policySourceSchema>;

/** A source without anything secret or machine-local that changes its answers: what an evaluation's identity names. */
export function sourceIdentity(s: PolicySource): string {
  if (s.kind === 'model') return 'model';
  // "auto" is left out, so evaluations named before instructions existed keep their folder (and journal)
  return JSON.stringify({
    baseUrl: s.baseUrl,
    model: s.model,
    sampling: s.sampling,
    ...(s.instructions !== 'auto' ? { instructions: s.instructions } : {}),
  });
}
