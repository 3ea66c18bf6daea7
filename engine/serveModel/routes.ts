/**
 * serve-model's generation routes, `POST /v1/completions` and `POST /v1/chat/completions` in OpenAI's shapes: the
 * body checked against its schema (protocol.ts), the model and prompt checked (requests.ts), the job run whole or
 * streamed (streaming.ts), and the answer with its log-probs (logprobs.ts) and token usage.
 */
import type http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { Tokenizer } from '../model/tokenizers/tokenizer';
import type { jobMaker } from './jobs';
import { chatLogprobs, completionLogprobs } from './logprobs';
import { chatPromptText, chatRequestSchema, completionRequestSchema, HttpError } from './protocol';
import { checkModel, promptIds, sendJson, zodProblem } from './requests';
import { runJob, type JobRunner } from './streaming';

/** What the routes need: the job runner, the tokenizer, the served model's id, the chat template's bos text. */
export interface RouteContext extends JobRunner {
  tok: Tokenizer;
  modelName: string;
  /** The tokenizer's bos token text ('' without one), which the chat prompt starts with. */
  bosText: string;
  jobOf: ReturnType<typeof jobMaker>['jobOf'];
}

export async function completions(ctx: RouteContext, body: unknown, res: http.ServerResponse): Promise<void> {
  const { tok } = ctx;
  const parsed = completionRequestSchema.safeParse(body);
  if (!parsed.success) throw new HttpError(400, zodProblem(parsed.error));
  const r = parsed.data;
  checkModel(r.model, ctx.modelName);
  const prompt = promptIds(tok, r.prompt);
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
  const prompt = promptIds(tok, chatPromptText(r.messages, ctx.bosText));
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
