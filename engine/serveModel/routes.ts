/**
 * serve-model's generation routes, `POST /v1/completions` and `POST /v1/chat/completions` in OpenAI's shapes: the
 * body checked against its schema (protocol.ts), the model and prompt checked (requests.ts), the job run whole or
 * streamed (streaming.ts), and the answer with its log-probs (logprobs.ts) and token usage.
 */
import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import { ChatTemplateError, type ChatMessage } from '../model/chat/chatTemplate';
import type { Tokenizer } from '../model/tokenizers/tokenizer';
import type { jobMaker } from './jobs';
import { chatLogprobs, completionLogprobs } from './logprobs';
import { chatPromptText, chatRequestSchema, completionRequestSchema, HttpError, type ChatRequest } from './protocol';
import { checkModel, promptIds, sendJson, zodProblem } from './requests';
import { runJob, type JobRunner } from './streaming';

/** What the routes need: the job runner, the tokenizer, the served model's id, how prompts become ids. */
export interface RouteContext extends JobRunner {
  tok: Tokenizer;
  modelName: string;
  /** The tokenizer's bos token text ('' without one), which mars-lab's joined chat prompt starts with. */
  bosText: string;
  /** A raw prompt's ids (a real model's tokenizer adds the bos its config asks for). */
  encode: (text: string) => number[];
  /**
   * A real model's chat prompt: the messages through its chat template with the generation prompt; null for a real
   * model without a template (chat is refused); absent for a mars-lab checkpoint (protocol.ts chatPromptText).
   */
  chatPrompt?: ((messages: ChatMessage[]) => number[]) | null;
  jobOf: ReturnType<typeof jobMaker>['jobOf'];
}

/** The request's messages as chat templates take them (text parts joined by a space, as chatPromptText does). */
function templateMessages(messages: ChatRequest['messages']): ChatMessage[] {
  return messages.map((m) => ({
    role: m.role,
    content: typeof m.content === 'string' ? m.content : m.content.map((p) => p.text).join(' '),
  }));
}

/** The chat's prompt ids: through the model's template, or mars-lab's joined text for its own checkpoints. */
function chatPromptIds(ctx: RouteContext, messages: ChatRequest['messages']): number[] {
  if (ctx.chatPrompt === undefined) return promptIds(ctx.tok, chatPromptText(messages, ctx.bosText));
  if (ctx.chatPrompt === null) {
    throw new HttpError(400, `${ctx.modelName} has no chat template (a base model): send raw text to /v1/completions`);
  }
  let ids: number[];
  try {
    ids = ctx.chatPrompt(templateMessages(messages));
  } catch (err) {
    // The message starts with the template's origin, a path on this machine: the client is told what failed only.
    if (err instanceof ChatTemplateError) {
      throw new HttpError(400, `messages: ${err.message.slice(Math.max(0, err.message.indexOf('the chat template')))}`);
    }
    throw err;
  }
  if (ids.length === 0) throw new HttpError(400, 'messages: the chat template rendered them to no tokens');
  return ids;
}

export async function completions(ctx: RouteContext, body: unknown, res: http.ServerResponse): Promise<void> {
  const { tok } = ctx;
  const parsed = completionRequestSchema.safeParse(body);
  if (!parsed.success) throw new HttpError(400, zodProblem(parsed.error));
  const r = parsed.data;
  checkModel(r.model, ctx.modelName);
  const prompt = promptIds(tok, r.prompt, ctx.encode);
  const job = ctx.jobOf(r, prompt, r.max_tokens ?? 16, r.logprobs ?? 0);
  const id = `cmpl-${randomUUID()}`;
  const base = { id, object: 'text_completion', created: Math.floor(Date.now() / 1000), model: ctx.modelName };
  if (r.stream) {
    await runJob(ctx, job, res, true, (piece, ids, lps, tops, finish, stopReason) => ({
      ...base,
      choices: [
        {
          index: 0,
          text: piece,
          logprobs: completionLogprobs(tok, ids, lps, tops, r.logprobs),
          finish_reason: finish,
          stop_reason: finish ? (stopReason ?? null) : null,
        },
      ],
    }));
    return;
  }
  const g = await runJob(ctx, job, res, false, () => null);
  const v = ctx.visible(job, g);
  sendJson(
    res,
    200,
    JSON.stringify({
      ...base,
      choices: [
        {
          index: 0,
          text: v.text,
          logprobs: completionLogprobs(tok, v.ids, v.logProbs, v.tops, r.logprobs),
          finish_reason: v.finish,
          stop_reason: g.stopReason,
        },
      ],
      usage: {
        prompt_tokens: prompt.length,
        completion_tokens: g.tokens.length,
        total_tokens: prompt.length + g.tokens.length,
      },
    }),
  );
}

export async function chat(ctx: RouteContext, body: unknown, res: http.ServerResponse): Promise<void> {
  const { tok } = ctx;
  const parsed = chatRequestSchema.safeParse(body);
  if (!parsed.success) throw new HttpError(400, zodProblem(parsed.error));
  const r = parsed.data;
  checkModel(r.model, ctx.modelName);
  const prompt = chatPromptIds(ctx, r.messages);
  const job = ctx.jobOf(r, prompt, r.max_completion_tokens ?? r.max_tokens, r.logprobs ? (r.top_logprobs ?? 0) : 0);
  const id = `chatcmpl-${randomUUID()}`;
  const base = { id, object: 'chat.completion', created: Math.floor(Date.now() / 1000), model: ctx.modelName };
  if (r.stream) {
    let first = true;
    await runJob(ctx, job, res, true, (piece, ids, lps, tops, finish, stopReason) => {
      const delta = first ? { role: 'assistant', content: piece } : { content: piece };
      first = false;
      return {
        ...base,
        object: 'chat.completion.chunk',
        choices: [
          {
            index: 0,
            delta,
            logprobs: chatLogprobs(tok, ids, lps, tops, r.logprobs),
            finish_reason: finish,
            stop_reason: finish ? (stopReason ?? null) : null,
          },
        ],
      };
    });
    return;
  }
  const g = await runJob(ctx, job, res, false, () => null);
  const v = ctx.visible(job, g);
  sendJson(
    res,
    200,
    JSON.stringify({
      ...base,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: v.text },
          logprobs: chatLogprobs(tok, v.ids, v.logProbs, v.tops, r.logprobs),
          finish_reason: v.finish,
          stop_reason: g.stopReason,
        },
      ],
      usage: {
        prompt_tokens: prompt.length,
        completion_tokens: g.tokens.length,
        total_tokens: prompt.length + g.tokens.length,
      },
    }),
  );
}
