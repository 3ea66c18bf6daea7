/**
 * The generation queue of `serve-model`, with continuous batching: one KV-cached batch (liveBatch.ts) runs while
 * there are requests; one token per row per step; a request that arrives while it runs joins it at the next step
 * (up to `maxBatch` rows) instead of waiting for the batch to drain; a row that stops (a stop token, a stop string,
 * its own max_tokens, the context, a closed connection) leaves at once. Each drawn token is handed to its request as
 * it is drawn, which is what streaming sends.
 *
 * Rows draw their own tokens (engine/model/sampler.ts drawToken) with their own temperature and top-p, so requests
 * with different sampling settings share a batch; a request's `seed` gives it its own random stream (the same
 * answer whatever it is batched with), the others share the server's. At temperature 0 a row's tokens do not
 * depend on its batch (liveBatch.ts), so a request gives the same text alone, batched, or in-process.
 * `topLogprobs` asks for each step's k most likely tokens and their log-probs (under the row's temperature, as the
 * drawn token's), which is OpenAI's `top_logprobs`.
 */
import type { LlamaModel } from '../model/llama';
import { drawToken, type FinishReason } from '../model/sampler';
import { Rng } from '../random/prng';
import { LiveBatch } from './liveBatch';

export interface GenerationRequest {
  prompt: number[];
  maxTokens: number;
  temperature: number;
  topP: number;
  /** Token ids that end the row (the token is part of the output, as in-process). */
  stopIds: readonly number[];
  /** Texts that end the row when its decoded output ends with one. */
  stopStrings: readonly string[];
  /** Its own random stream (the request's `seed`); without it the server's shared one. */
  seed?: number;
  /** The k most likely tokens at each step, with their log-probs (0: none). */
  topLogprobs?: number;
  /** Called with each token as it is drawn. */
  onToken?: (id: number, logProb: number, top: TopToken[] | null) => void;
  signal?: AbortSignal;
}

export interface TopToken {
  id: number;
  logProb: number;
}

export interface GenerationResult {
  tokens: number[];
  logProbs: number[];
  /** Per token: the k most likely tokens at that step (when asked), most likely first. */
  top: TopToken[][] | null;
  finish: FinishReason;
  /** The stop id or stop string that ended the row, when one did. */
  stopReason: number | string | null;
}

interface Row {
  req: GenerationRequest;
  out: GenerationResult;
  rng: Rng;
  resolve: (r: GenerationResult) => void;
  reject: (e: unknown) => void;
}

/** The k largest log-probs of `logits` under temperature t (log-softmax of logits / t), most likely first. */
export function topLogProbs(logits: Float32Array, temperature: number, k: number): TopToken[] {
  const t = temperature > 0 ? temperature : 1;
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) max = Math.max(max, logits[i]! / t);
  let z = 0;
  for (let i = 0; i < logits.length; i++) z += Math.exp(logits[i]! / t - max);
  const lse = max + Math.log(z);
  const best: number[] = []; // ids, kept sorted by logit descending (k is at most 20)
  for (let i = 0; i < logits.length; i++) {
    if (best.length === k && logits[i]! <= logits[best[k - 1]!]!) continue;
    let j = best.length < k ? best.length : k - 1;
    best[j] = i;
    while (j > 0 && logits[best[j]!]! > logits[best[j - 1]!]!) {
      [best[j], best[j - 1]] = [best[j - 1]!, best[j]!];
      j--;
    }
  }
  return best.map((id) => ({ id, logProb: logits[id]! / t - lse }));
}

export class GenerationQueue {
  private readonly waiting: Row[] = [];
  private running = false;
  private readonly rng: Rng;
  /**
   * For tests and the throughput note: batches started from empty (waves), requests that joined a running batch
   * (joins), rows taken in all, and the most rows decoded together.
   */
  readonly stats = { waves: 0, joins: 0, rows: 0, maxRows: 0 };

  constructor(
    private readonly model: LlamaModel,
    private readonly decode: (ids: number[]) => string,
    private readonly maxBatch = 64,
    seed = 0,
  ) {
    this.rng = new Rng(seed);
  }

  submit(req: GenerationRequest): Promise<GenerationResult> {
    return new Promise((resolve, reject) => {
      this.waiting.push({
        req,
        out: { tokens: [], logProbs: [], top: req.topLogprobs ? [] : null, finish: 'length', stopReason: null },
        rng: req.seed !== undefined ? new Rng(req.seed) : this.rng,
        resolve,
        reject,
      });
      if (!this.running) void this.run();
    });
  }

  private async run(): Promise<void> {
    this.running = true;
    const batch = new LiveBatch(this.model);
    let live: Row[] = [];
    const maxCtx = this.model.config.max_position_embeddings;
    const V = this.model.config.vocab_size;
    try {
      for (;;) {
        // Let requests that arrive in the same tick (or while the last step ran) be read, then take them in.
        await new Promise((r) => setImmediate(r));
        const room = this.maxBatch - live.length;
        const taken = this.waiting.splice(0, Math.max(0, room));
        const joining: Row[] = [];
        for (const row of taken) {
          // rows with nothing to do (max_tokens 0, aborted, or a prompt that fills the context) finish at once
          if (row.req.signal?.aborted || row.req.maxTokens <= 0) row.resolve(row.out);
          else if (row.req.prompt.length >= maxCtx - 1) row.resolve({ ...row.out, finish: 'context' });
          else joining.push(row);
        }
        if (joining.length > 0) {
          if (live.length === 0) this.stats.waves++;
          else this.stats.joins += joining.length;
          this.stats.rows += joining.length;
          try {
            await batch.join(joining.map((r) => r.req.prompt));
          } catch (err) {
            for (const r of joining) r.reject(err);
            batch.keep(live.map((_, i) => i));
            continue;
          }
          live = [...live, ...joining];
        }
        if (live.length === 0) {
          if (this.waiting.length === 0) break;
          continue;
        }
        this.stats.maxRows = Math.max(this.stats.maxRows, live.length);
        const still: number[] = [];
        const next: number[] = [];
        live.forEach((row, b) => {
          const { req, out } = row;
          const logits = batch.logitsOf(b);
          const { id, logProb } = drawToken(logits, 0, V, req.temperature, req.topP, row.rng);
          const top = req.topLogprobs ? topLogProbs(logits, req.temperature, req.topLogprobs) : null;
          out.tokens.push(id);
          out.logProbs.push(logProb);
          if (top) out.top!.push(top);
          req.onToken?.(id, logProb, top);
          let done = true;
          if (req.stopIds.includes(id)) {
            out.finish = 'stop';
            out.stopReason = id;
          } else if (req.stopStrings.length && this.endsWithStop(out, req.stopStrings)) out.finish = 'stop';
          else if (batch.length(b) + 1 >= maxCtx) out.finish = 'context';
          else if (out.tokens.length >= req.maxTokens) out.finish = 'length';
          else if (req.signal?.aborted) out.finish = 'length';
          else done = false;
          if (done) row.resolve(out);
          else {
            still.push(b);
            next.push(id);
          }
        });
        live = still.map((b) => live[b]!);
        batch.keep(still);
        if (live.length > 0) {
          try {
            await batch.step(next);
          } catch (err) {
            for (const r of live) r.reject(err);
            live = [];
            batch.dispose();
          }
        }
      }
    } finally {
      batch.dispose();
      this.running = false;
      for (const r of live) r.reject(new Error('serve-model: the generation loop ended'));
    }
  }

  private endsWithStop(r: GenerationResult, stops: readonly string[]): boolean {
    const tail = this.decode(r.tokens.slice(-32));
    const hit = stops.find((s) => tail.endsWith(s));
    if (hit === undefined) return false;
    r.stopReason = hit;
    return true;
  }
}
