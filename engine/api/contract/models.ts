/**
 * The contract's models (contract.ts composes it; issue 33, item 1): the models mars-lab knows, each one's card (what
 * `mars-lab model info` says: architecture, parameters, tensor types, context, tokenizer, template, and the memory to
 * sample, train fully and train LoRA here), a model folder or file the user adds, and fetching a catalogue model.
 * A window names a model by its id, never by a path the host would open unchecked: paths enter only through addModel,
 * which the host checks like every path from a window.
 */
import { z } from 'zod';
import { empty, type MethodSchemas } from './common';

/** `fetch:<name>` (a model `model fetch` knows), `base:<algorithm>/<folder>` (shipped), `path:<absolute path>` (added). */
export const modelIdSchema = z
  .string()
  .min(1)
  .max(4200)
  .regex(/^(fetch|base|path):./, { error: 'a model id: fetch:NAME, base:ALGORITHM/FOLDER or path:/ABSOLUTE/PATH' });

const modelEntrySchema = z.object({
  id: modelIdSchema,
  name: z.string(),
  kind: z.enum(['fetch', 'base', 'path']),
  /** One line: where it comes from, what it is. */
  description: z.string(),
  /** Where it lies on the host; null for a catalogue model not fetched yet. */
  path: z.string().nullable(),
  /** A catalogue model: whether it is in the cache. */
  fetched: z.boolean(),
  /** The download's size when known (catalogue models). */
  bytes: z.number().nullable(),
});
export type ApiModelEntry = z.infer<typeof modelEntrySchema>;

const memorySchema = z.object({
  shape: z.object({ sampleRows: z.number(), trainRows: z.number(), seq: z.number(), loraRank: z.number() }),
  sample: z.number(),
  full: z.number(),
  lora: z.number(),
  limit: z.object({ bytes: z.number(), what: z.string() }),
});

const modelCardSchema = z.object({
  id: modelIdSchema,
  path: z.string(),
  format: z.string(),
  architecture: z.string(),
  name: z.string().nullable(),
  parameters: z.number(),
  tensorTypes: z.record(z.string(), z.number()),
  context: z.number().nullable(),
  vocabulary: z.number().nullable(),
  tokenizer: z.object({ kind: z.string(), detail: z.string().nullable() }).nullable(),
  chatTemplate: z.object({ origin: z.string(), roles: z.array(z.string()), generationPrompt: z.boolean() }).nullable(),
  /** The licence the files state (GGUF general.license, config or README front matter), null when none says. */
  license: z.string().nullable(),
  /** Why this engine cannot run it, null when it can. */
  unsupported: z.string().nullable(),
  /** null when the architecture is not one this engine computes. */
  memory: memorySchema.nullable(),
});
export type ApiModelCard = z.infer<typeof modelCardSchema>;

const listResponse = z.object({ models: z.array(modelEntrySchema) });

/** The methods of models. */
export const modelSchemas = {
  listModels: { request: empty, response: listResponse },
  modelCard: {
    request: z.strictObject({
      id: modelIdSchema,
      /** The memory figures' shape, as `model info --rows --seq --lora-rank`. */
      rows: z.int().min(1).max(4096).default(16),
      seq: z.int().min(1).max(131072).default(256),
      loraRank: z.int().min(1).max(1024).default(16),
    }),
    response: modelCardSchema,
  },
  /** Adds a model folder or .gguf file on the host (inside the allowed folders) to the list; the list as it is now. */
  addModel: { request: z.strictObject({ path: z.string().min(1).max(4096) }), response: listResponse },
  /** Fetches a catalogue model into the cache (progress as 'modelFetch' events); the list as it is now. */
  fetchModel: {
    request: z.strictObject({ name: z.string().min(1).max(64) }),
    response: listResponse,
  },
} as const satisfies MethodSchemas;

const chatTurnSchema = z.strictObject({
  role: z.enum(['user', 'assistant']),
  content: z.string().max(200_000),
});

/** The chat playground's methods (issue 33, item 2): a reply streamed as 'chatDelta' events, ended by 'chatEnd'. */
export const chatSchemas = {
  chatStart: {
    request: z.strictObject({
      id: modelIdSchema,
      /** A system message, sent first when not empty. */
      system: z.string().max(200_000).default(''),
      /** The conversation so far, ending with the user's turn. */
      messages: z.array(chatTurnSchema).min(1).max(200),
      temperature: z.number().min(0).max(2).default(0.7),
      topP: z.number().gt(0).max(1).default(0.95),
      maxTokens: z.int().min(1).max(8192).default(256),
    }),
    response: z.object({ chatId: z.string() }),
  },
  /** The lab's own prompts as a chat model receives them (MARS System 1 and 2, MARTI toy and Python), to try. */
  labPrompts: {
    request: empty,
    response: z.object({
      prompts: z.array(z.object({ id: z.string(), label: z.string(), system: z.string(), user: z.string() })),
    }),
  },
  /** Cancels a reply at once (the model's server stops its row); true when it was still running. */
  chatStop: {
    request: z.strictObject({ chatId: z.string().min(1).max(100) }),
    response: z.object({ stopped: z.boolean() }),
  },
} as const satisfies MethodSchemas;
