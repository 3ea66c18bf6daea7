/**
 * The OpenAI-compatible request forms `serve-model` accepts (zod), and how a chat becomes the model's prompt.
 *
 * Unknown fields are ignored, as OpenAI-compatible servers do; fields this server cannot honour (n > 1, echo, best_of)
 * are refused with a 400 naming them. Two vLLM extensions are understood: `include_stop_str_in_output` (the stop
 * token or string stays in the text, as it does in mars-lab's own rollouts) and `skip_special_tokens` (default false
 * here: MARS's tags are special tokens and must reach the client).
 *
 * Chat template: the prompt is the tokenizer's `<bos>`, then every message's content in order, joined by one space
 * (an assistant message continues the text; roles add no tokens). So a chat whose user message is MARTI's prompt
 * text, or MARS's `<sys2> question <sep>` followed by the turns and `<info>` blocks, is the very token sequence the
 * in-process rollout feeds the model. /v1/completions takes the raw prompt text (or token ids) and adds nothing: a
 * raw prompt that starts with `<bos>` is exactly what the rollout sends.
 */
import { z } from 'zod';

const stopSchema = z.union([z.string().max(1000), z.array(z.string().max(1000)).max(16)]).nullish();
const common = {
  model: z.string().max(500),
  max_tokens: z.int().min(0).max(1_000_000).nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  stop: stopSchema,
  stream: z.boolean().nullish(),
  n: z.literal(1, { error: 'serve-model answers one choice per request: leave n out or set it to 1' }).nullish(),
  seed: z.int().nullish(),
  include_stop_str_in_output: z.boolean().nullish(),
  skip_special_tokens: z.boolean().nullish(),
};

export const completionRequestSchema = z.looseObject({
  ...common,
  prompt: z.union([
    z.string().max(4_000_000),
    z.array(z.string().max(4_000_000)).length(1),
    z.array(z.int().min(0)).min(1).max(1_000_000),
  ]),
  logprobs: z.int().min(0).max(20).nullish(),
  echo: z.literal(false, { error: 'serve-model does not echo the prompt: leave echo out' }).nullish(),
  best_of: z.literal(1, { error: 'serve-model does not support best_of' }).nullish(),
});

const messageSchema = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content: z.union([
    z.string().max(4_000_000),
    z.array(z.looseObject({ type: z.literal('text'), text: z.string().max(4_000_000) })).max(1000),
  ]),
});

export const chatRequestSchema = z.looseObject({
  ...common,
  messages: z.array(messageSchema).min(1).max(10_000),
  max_completion_tokens: z.int().min(0).max(1_000_000).nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.int().min(0).max(20).nullish(),
});

export type CompletionRequest = z.output<typeof completionRequestSchema>;
export type ChatRequest = z.output<typeof chatRequestSchema>;

export function stopList(stop: CompletionRequest['stop']): string[] {
  return stop == null ? [] : typeof stop === 'string' ? [stop] : stop;
}

/** The chat template above: `<bos>` and the messages' contents joined by a space. */
export function chatPromptText(messages: ChatRequest['messages'], bos: string): string {
  const text = messages
    .map((m) => (typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(' ')))
    .join(' ');
  return text.startsWith(bos) ? text : `${bos} ${text}`;
}

/** A request the server answers with an OpenAI-style error (status, type, code). */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly type = 'invalid_request_error',
    readonly code: string | null = null,
  ) {
    super(message);
  }
}

/** An OpenAI-style error body. */
export function errorBody(
  message: string,
  type: string,
  code: string | null = null,
  param: string | null = null,
): string {
  return JSON.stringify({ error: { message, type, param, code } });
}
