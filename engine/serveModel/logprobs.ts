/**
 * serve-model's log-prob fields in OpenAI's two shapes, from the batcher's per-token results (batcher.ts): the drawn
 * token's log-prob and, when asked, the k most likely tokens at that step with theirs (computed from the step's
 * logits under the request's temperature, as the drawn token's is).
 *
 *   /v1/completions        `logprobs: k` → { tokens, token_logprobs, top_logprobs: [{ token: logprob, … } × k], text_offset }
 *   /v1/chat/completions   `logprobs: true, top_logprobs: k` → { content: [{ token, logprob, bytes, top_logprobs: [{ token, logprob, bytes } × k] }] }
 */
import type { Tokenizer } from '../model/tokenizers/tokenizer';
import type { TopToken } from './batcher';

export function completionLogprobs(
  tok: Tokenizer,
  ids: number[],
  lps: number[],
  tops: TopToken[][],
  k: number | null | undefined,
) {
  if (k == null) return null;
  const tokens = ids.map((i) => tok.tokenOf(i));
  const full = tok.decode(ids);
  return {
    tokens,
    token_logprobs: lps,
    top_logprobs:
      k > 0 ? ids.map((_, i) => Object.fromEntries((tops[i] ?? []).map((t) => [tok.tokenOf(t.id), t.logProb]))) : null,
    // where each token's text starts: after the text of the tokens before it and the space that joins them, if any
    text_offset: ids.map((_, i) => {
      const before = i === 0 ? 0 : tok.decode(ids.slice(0, i)).length;
      return before + (i > 0 && full[before] === ' ' ? 1 : 0);
    }),
  };
}

export function chatLogprobs(
  tok: Tokenizer,
  ids: number[],
  lps: number[],
  tops: TopToken[][],
  on: boolean | null | undefined,
) {
  if (!on) return null;
  const entry = (id: number, logprob: number) => ({
    token: tok.tokenOf(id),
    logprob,
    bytes: [...Buffer.from(tok.tokenOf(id))],
  });
  return {
    content: ids.map((id, k) => ({
      ...entry(id, lps[k]!),
      top_logprobs: (tops[k] ?? []).map((t) => entry(t.id, t.logProb)),
    })),
  };
}
