/**
 * How serve-model turns a parsed request into a generation job for the batcher (batcher.ts), and a finished
 * generation into what the client sees: stop strings that name a special token stop on that token (as the
 * rollouts' stop tokens do), EOS is a stop unless `ignore_eos`, max_tokens is capped by the context, and the stop is
 * dropped from the answer unless `include_stop_str_in_output` (vLLM's extension) asks for it.
 */
import type { Tokenizer } from '../model/tokenizers/tokenizer';
import type { GenerationResult, TopToken } from './batcher';
import { HttpError, stopList, type ChatRequest, type CompletionRequest } from './protocol';

export interface Job {
  prompt: number[];
  maxTokens: number;
  temperature: number;
  topP: number;
  stop: { ids: number[]; strings: string[] };
  includeStop: boolean;
  skipSpecial: boolean;
  /** The request's own random stream, when it sent `seed`. */
  seed: number | undefined;
  /** Alternatives per token asked for (top_logprobs; the legacy completions' `logprobs: k`). */
  topK: number;
}

/**
 * The job of a request and the visible part of its result, for a model of context `maxCtx` over `tok`. `endIds` are
 * the model's own ends besides eos (a real model's end-of-turn token): they stop a row as eos does, unless `ignore_eos`.
 */
export function jobMaker(tok: Tokenizer, maxCtx: number, endIds: readonly number[] = []) {
  const eos = tok.specials.eos;
  const decode = (ids: number[], skipSpecial = false): string => tok.decode(ids, { skipSpecial });
  /** Stop strings that are a special token's text stop on that token (as the rollouts' stop tokens do). */
  const stops = (stop: string[], ignoreEos: boolean): { ids: number[]; strings: string[] } => {
    const ids: number[] = [];
    const strings: string[] = [];
    for (const s of stop) {
      let id: number | null;
      try {
        id = tok.idOf(s);
      } catch {
        id = null;
      }
      if (id !== null && tok.isSpecial(id)) ids.push(id);
      else if (s !== '') strings.push(s);
    }
    if (!ignoreEos) for (const end of [eos, ...endIds]) if (end !== undefined && !ids.includes(end)) ids.push(end);
    return { ids, strings };
  };

  const jobOf = (
    r: CompletionRequest | ChatRequest,
    prompt: number[],
    maxTokens: number | null | undefined,
    topK: number,
  ): Job => {
    if (prompt.length >= maxCtx) {
      throw new HttpError(
        400,
        `the prompt has ${prompt.length} tokens; this model's context is ${maxCtx}`,
        'invalid_request_error',
        'context_length_exceeded',
      );
    }
    return {
      prompt,
      maxTokens: Math.min(maxTokens ?? maxCtx, maxCtx - 1 - prompt.length),
      temperature: r.temperature ?? 1,
      topP: r.top_p ?? 1,
      stop: stops(stopList(r.stop), (r as { ignore_eos?: unknown }).ignore_eos === true),
      includeStop: r.include_stop_str_in_output ?? false,
      skipSpecial: r.skip_special_tokens ?? false,
      seed: r.seed ?? undefined,
      topK,
    };
  };

  /** What the client sees of a finished row: the stop dropped unless asked for, text, finish reason. */
  const visible = (
    job: Job,
    g: GenerationResult,
  ): { ids: number[]; logProbs: number[]; tops: TopToken[][]; text: string; finish: 'stop' | 'length' } => {
    let ids = g.tokens;
    let logProbs = g.logProbs;
    let tops = g.top ?? [];
    if (g.finish === 'stop' && typeof g.stopReason === 'number' && !job.includeStop) {
      ids = ids.slice(0, -1);
      logProbs = logProbs.slice(0, -1);
      tops = tops.slice(0, -1);
    }
    let text = decode(ids, job.skipSpecial);
    if (g.finish === 'stop' && typeof g.stopReason === 'string' && !job.includeStop && text.endsWith(g.stopReason)) {
      text = text.slice(0, -g.stopReason.length);
    }
    return { ids, logProbs, tops, text, finish: g.finish === 'stop' ? 'stop' : 'length' };
  };

  return { jobOf, visible };
}
