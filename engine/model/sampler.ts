/**
 * Batched autoregressive sampling with a KV cache: temperature, top-p, stop tokens and strings, max new tokens,
 * per-token behaviour log-probs, seeded and reproducible.
 *
 * Prompts of different lengths are left-padded; each row has its own position ids (starting at 0 at its first real
 * token) and its padding is masked out of attention, so a row's output does not depend on what it is batched with.
 * Rows that finish are dropped from the batch (and their cache rows with them), so long and short generations can
 * share one call without the short ones paying for the long.
 */
import { tf } from '../tensor/backend';
import type { Rng } from '../random/prng';
import type { ForwardOutput, LayerCache, LlamaModel } from './llama';

export interface SampleOptions {
  maxNewTokens: number;
  /** 1 samples the model's distribution; 0 is greedy. Log-probs are recorded under softmax(logits / temperature). */
  temperature?: number;
  /** Nucleus sampling: draw from the smallest set of tokens whose probability reaches topP (1 = off). */
  topP?: number;
  /** Draw only from the topK most likely tokens (0 = off); with topP too, the nucleus is taken within them (HF's order). */
  topK?: number;
  /** Generation of a row ends after it emits one of these (the stop token is part of the output). */
  stopTokens?: number[];
  /** Generation of a row ends when its decoded output ends with one of these (needs `decode`). */
  stopStrings?: string[];
  decode?: (ids: number[]) => string;
  rng: Rng;
  /**
   * One stream per prompt row, drawn from instead of `rng`: a row's tokens then depend on its own stream only, never on
   * the rows batched before it (MARTI's evaluation gives each problem its own, issue 32 defect 4).
   */
  rowRngs?: readonly Rng[];
  /** Recompute the whole prefix at every step instead of caching keys and values (for checks and benchmarks). */
  useCache?: boolean;
}

export type FinishReason = 'stop' | 'length' | 'context';

export interface Generation {
  tokens: number[];
  /** Log-probability of each generated token under the sampling distribution (before top-p truncation). */
  logProbs: number[];
  finish: FinishReason;
}

/**
 * Draw one token from row `row` of `logits` ([rows, V]); returns the id and its log-prob (under the whole
 * temperature-scaled distribution, before truncation). Truncation as transformers' warpers, top-k first, then top-p
 * over what top-k kept; ties by lower id.
 */
export function drawToken(
  logits: Float32Array,
  row: number,
  vocab: number,
  temperature: number,
  topP: number,
  rng: Rng,
  topK = 0,
): { id: number; logProb: number } {
  const off = row * vocab;
  const t = temperature > 0 ? temperature : 1;
  let max = -Infinity;
  for (let i = 0; i < vocab; i++) max = Math.max(max, logits[off + i]! / t);
  const probs = new Float64Array(vocab);
  let z = 0;
  for (let i = 0; i < vocab; i++) z += probs[i] = Math.exp(logits[off + i]! / t - max);
  const lse = max + Math.log(z);
  let id = 0;
  if (temperature <= 0) {
    for (let i = 1; i < vocab; i++) if (probs[i]! > probs[id]!) id = i;
  } else if (topP < 1 || (topK > 0 && topK < vocab)) {
    const order = Array.from({ length: vocab }, (_, i) => i).sort((a, b) => probs[b]! - probs[a]! || a - b);
    const k = topK > 0 ? Math.min(topK, vocab) : vocab;
    let zk = 0; // the mass top-k keeps, which top-p's share is of
    for (let i = 0; i < k; i++) zk += probs[order[i]!]!;
    let mass = 0;
    let keep = 0;
    while (keep < k && mass < topP * zk) mass += probs[order[keep++]!]!;
    let u = rng.next() * mass;
    id = order[keep - 1]!;
    for (let k = 0; k < keep; k++) {
      u -= probs[order[k]!]!;
      if (u < 0) {
        id = order[k]!;
        break;
      }
    }
  } else {
    let u = rng.next() * z;
    id = vocab - 1;
    for (let i = 0; i < vocab; i++) {
      u -= probs[i]!;
      if (u < 0) {
        id = i;
        break;
      }
    }
  }
  return { id, logProb: logits[off + id]! / t - lse };
}

/** 2^25 attention scores (128 MiB as float32) per forward, over all layers. */
export const DEFAULT_MAX_SCORES = 2 ** 25;

/**
 * One KV-cached forward of `batch` rows (each `ids.length / batch` new tokens after its `past`), in row chunks that
 * hold at most `maxScores` attention scores: the new cache (`past` is left to the caller) and each row's last-position
 * logits. The decode session here and serve-model's live batch both step through it.
 */
export async function cachedForward(
  model: LlamaModel,
  maxScores: number,
  ids: Int32Array,
  positions: Int32Array,
  keyMask: Uint8Array,
  batch: number,
  past: LayerCache[] | null,
): Promise<{ cache: LayerCache[]; logits: Float32Array }> {
  const tn = ids.length / batch;
  const tk = keyMask.length / batch;
  const { num_attention_heads: heads, num_hidden_layers: layers } = model.config;
  const step = Math.max(1, Math.min(batch, Math.floor(maxScores / (heads * tn * tk * layers))));
  const parts: ForwardOutput[] = [];
  for (let r0 = 0; r0 < batch; r0 += step) {
    const n = Math.min(step, batch - r0);
    tf.tidy(() => {
      const cache =
        past &&
        (n === batch
          ? past
          : past.map((c) => ({
              k: tf.slice(c.k, [r0, 0, 0, 0], [n, -1, -1, -1]),
              v: tf.slice(c.v, [r0, 0, 0, 0], [n, -1, -1, -1]),
            })));
      const out = model.forward({
        ids: ids.subarray(r0 * tn, (r0 + n) * tn),
        batch: n,
        positions: positions.subarray(r0 * tn, (r0 + n) * tn),
        keyMask: keyMask.subarray(r0 * tk, (r0 + n) * tk),
        cache: cache ?? undefined,
        lastOnly: true,
      });
      parts.push(out);
      return [out.logits, ...out.cache.flatMap((c) => [c.k, c.v])];
    });
  }
  const join = <T extends tf.Tensor>(xs: T[]): T => {
    if (xs.length === 1) return xs[0]!;
    const joined = tf.concat<T>(xs, 0);
    for (const x of xs) x.dispose();
    return joined;
  };
  const cache = parts[0]!.cache.map((_, l) => ({
    k: join(parts.map((p) => p.cache[l]!.k)),
    v: join(parts.map((p) => p.cache[l]!.v)),
  }));
  const logits = join(parts.map((p) => p.logits));
  const d = await logits.data();
  logits.dispose();
  return { cache, logits: d as Float32Array };
}

/**
 * A batch of sequences that grows over several generation phases (e.g. the turns of a multi-turn rollout) while
 * keeping one KV cache: `extend` appends given tokens to every row (ragged, left-padded inside the chunk, padding
 * masked), `sample` draws new tokens, `keep` drops rows. Nothing is ever recomputed from the start.
 */
export class DecodeSession {
  private cache: LayerCache[] | null = null;
  /** Per row: may each cached position be attended to (0 for padding and for positions of rows that had stopped). */
  private keyRows: number[][] = [];
  /** Per row: every real token so far, in order. */
  private seqs: number[][] = [];
  /** Next-token logits of every row, [rows, V]. */
  private logits: Float32Array | null = null;

  /**
   * @param maxScores most attention scores one forward may hold (rows × heads × new tokens × keys × layers: a forward
   *   keeps every layer's until it ends). A larger step, such as a long prefill of many prompts, runs in row chunks
   *   whose caches and logits are joined: the same computation per row in bounded memory. Without it a 256-prompt
   *   prefill of ~300 tokens held several GB of scores and overran the wasm heap.
   */
  constructor(
    private readonly model: LlamaModel,
    private readonly maxScores = DEFAULT_MAX_SCORES,
  ) {}

  get rows(): number {
    return this.seqs.length;
  }

  /** Every real token of row `b` so far. */
  tokens(b: number): readonly number[] {
    return this.seqs[b]!;
  }

  private async forward(ids: Int32Array, positions: Int32Array, keyMask: Uint8Array): Promise<Float32Array> {
    const past = this.cache;
    const { cache, logits } = await cachedForward(this.model, this.maxScores, ids, positions, keyMask, this.rows, past);
    if (past) for (const c of past) tf.dispose([c.k, c.v]);
    this.cache = cache;
    return logits;
  }

  /**
   * Append `chunks[b]` to row b (on the first call this creates the rows; each needs at least one token then).
   * A row given no tokens keeps its previous next-token logits.
   */
  async extend(chunks: readonly (readonly number[])[]): Promise<void> {
    const first = this.rows === 0;
    if (!first && chunks.length !== this.rows) throw new Error(`extend: ${chunks.length} chunks for ${this.rows} rows`);
    const maxCtx = this.model.config.max_position_embeddings;
    chunks.forEach((c, b) => {
      if (first && c.length === 0) {
        throw new Error(`prompt ${b} is empty: every prompt needs at least one token (e.g. the tokenizer's bos)`);
      }
      const len = (first ? 0 : this.seqs[b]!.length) + c.length;
      if (len >= maxCtx) throw new Error(`row ${b} would have ${len} tokens; max_position_embeddings is ${maxCtx}`);
    });
    if (first) {
      this.seqs = chunks.map(() => []);
      this.keyRows = chunks.map(() => []);
    }
    const B = this.rows;
    const W = Math.max(1, ...chunks.map((c) => c.length));
    const ids = new Int32Array(B * W);
    const positions = new Int32Array(B * W);
    chunks.forEach((c, b) => {
      const pad = W - c.length;
      ids.set(c, b * W + pad);
      const start = this.seqs[b]!.length;
      for (let i = 0; i < c.length; i++) positions[b * W + pad + i] = start + i;
      for (let i = 0; i < W; i++) this.keyRows[b]!.push(i >= pad ? 1 : 0);
      this.seqs[b]!.push(...c);
    });
    const previous = this.logits;
    const logits = await this.forward(ids, positions, Uint8Array.from(this.keyRows.flat()));
    const V = this.model.config.vocab_size;
    if (previous) chunks.forEach((c, b) => c.length === 0 && logits.set(previous.subarray(b * V, (b + 1) * V), b * V));
    this.logits = logits;
  }

  /** Keep only these rows, in this order. */
  keep(rows: readonly number[]): void {
    if (rows.length === this.rows && rows.every((r, i) => r === i)) return;
    if (this.cache) {
      const idx = tf.tensor1d(Int32Array.from(rows), 'int32');
      const old = this.cache;
      this.cache = old.map((c) => ({ k: tf.gather(c.k, idx), v: tf.gather(c.v, idx) }));
      for (const c of old) tf.dispose([c.k, c.v]);
      idx.dispose();
    }
    const V = this.model.config.vocab_size;
    if (this.logits) {
      const old = this.logits;
      this.logits = new Float32Array(rows.length * V);
      rows.forEach((r, i) => this.logits!.set(old.subarray(r * V, (r + 1) * V), i * V));
    }
    this.seqs = rows.map((r) => this.seqs[r]!);
    this.keyRows = rows.map((r) => this.keyRows[r]!);
  }

  /**
   * Draw up to `maxNewTokens` per row. Rows stop independently; a stopped row is fed masked padding until the others
   * finish, so it stays in the batch for later phases. With `final`, the last drawn tokens are not fed back (nothing
   * follows them) and stopped rows leave the batch, which saves their compute.
   * The random stream is consumed in row order, by live rows only, at every step.
   *
   * `rowMaxNewTokens[b]` caps row b below `maxNewTokens` (a row's own remaining budget): a row stops at its own limit
   * (finish 'length'), never at another row's, so with greedy decoding a row's output does not depend on its batch.
   * (With temperature > 0 the rows share one random stream, so which numbers a row draws depends on the rows before
   * it; its distribution does not.)
   */
  async sample(opts: SampleOptions & { final?: boolean; rowMaxNewTokens?: readonly number[] }): Promise<Generation[]> {
    if (!this.logits) throw new Error('sample: extend the session with prompts first');
    const V = this.model.config.vocab_size;
    const maxCtx = this.model.config.max_position_embeddings;
    const temperature = opts.temperature ?? 1;
    const topP = opts.topP ?? 1;
    const topK = opts.topK ?? 0;
    const stops = new Set(opts.stopTokens ?? []);
    const rowMax = opts.rowMaxNewTokens;
    if (rowMax && rowMax.length !== this.rows) {
      throw new Error(`sample: rowMaxNewTokens has ${rowMax.length} limits for ${this.rows} rows`);
    }
    if (opts.rowRngs && opts.rowRngs.length !== this.rows) {
      throw new Error(`sample: rowRngs has ${opts.rowRngs.length} streams for ${this.rows} rows`);
    }
    const limit = this.seqs.map((_, b) => Math.max(0, Math.min(opts.maxNewTokens, rowMax ? rowMax[b]! : Infinity)));
    const out: Generation[] = this.seqs.map(() => ({ tokens: [], logProbs: [], finish: 'length' }));
    // Batch row → output row; shrinks only in `final` mode.
    let owner = this.seqs.map((_, b) => b);
    const done = new Set<number>(limit.flatMap((l, b) => (l === 0 ? [b] : [])));
    const steps = Math.max(0, ...limit);
    for (let n = 0; n < steps; n++) {
      const fresh: number[] = [];
      owner.forEach((o, b) => {
        if (done.has(o)) return;
        const { id, logProb } = drawToken(this.logits!, b, V, temperature, topP, opts.rowRngs?.[o] ?? opts.rng, topK);
        const g = out[o]!;
        g.tokens.push(id);
        g.logProbs.push(logProb);
        fresh.push(b);
        if (stops.has(id) || endsWithStopString(g.tokens, opts)) {
          g.finish = 'stop';
          done.add(o);
        } else if (this.seqs[b]!.length + 1 >= maxCtx) {
          g.finish = 'context';
          done.add(o);
        } else if (g.tokens.length >= limit[o]!) {
          done.add(o); // its own budget is spent: finish stays 'length'
        }
      });
      const last = n === steps - 1 || done.size === out.length;
      if (opts.final) {
        if (last) break;
        // Only live rows remain in the batch, so every row was just drawn for; the stopped ones leave now.
        const live = owner.map((o, b) => (done.has(o) ? -1 : b)).filter((b) => b >= 0);
        this.keep(live);
        owner = live.map((b) => owner[b]!);
        await this.feed(
          owner.map((o) => out[o]!.tokens.at(-1)!),
          owner.map(() => true),
          opts,
        );
      } else {
        const drawn = new Set(fresh);
        await this.feed(
          owner.map((o, b) => (drawn.has(b) ? out[o]!.tokens.at(-1)! : 0)),
          owner.map((_, b) => drawn.has(b)),
          opts,
        );
        if (last) break;
      }
    }
    return out;
  }

  /** Append one token per row (`real[b]` false: masked padding that takes no position). */
  private async feed(tokens: number[], real: boolean[], opts: SampleOptions): Promise<void> {
    if (opts.useCache === false) {
      // Recompute everything from the start: the reference the cache is checked against, and a benchmark baseline.
      tokens.forEach((t, b) => {
        if (real[b]) this.seqs[b]!.push(t);
      });
      const seqs = this.seqs;
      for (const c of this.cache ?? []) tf.dispose([c.k, c.v]);
      this.cache = null;
      this.seqs = [];
      this.keyRows = [];
      this.logits = null;
      await this.extend(seqs);
      return;
    }
    const ids = Int32Array.from(tokens);
    const positions = Int32Array.from(tokens.map((_, b) => this.seqs[b]!.length));
    tokens.forEach((t, b) => {
      this.keyRows[b]!.push(real[b] ? 1 : 0);
      if (real[b]) this.seqs[b]!.push(t);
    });
    const previous = this.logits!;
    const logits = await this.forward(ids, positions, Uint8Array.from(this.keyRows.flat()));
    const V = this.model.config.vocab_size;
    real.forEach((r, b) => !r && logits.set(previous.subarray(b * V, (b + 1) * V), b * V));
    this.logits = logits;
  }

  dispose(): void {
    for (const c of this.cache ?? []) tf.dispose([c.k, c.v]);
    this.cache = null;
  }
}

/**
 * Generate continuations for a batch of prompts (each at least one token, e.g. a BOS).
 * The random stream is consumed in row order at every step, so a seed gives the same outputs on every backend up to
 * float differences in the logits.
 */
export async function generate(model: LlamaModel, prompts: number[][], opts: SampleOptions): Promise<Generation[]> {
  if (prompts.length === 0 || opts.maxNewTokens <= 0) {
    return prompts.map(() => ({ tokens: [], logProbs: [], finish: 'length' }));
  }
  const session = new DecodeSession(model);
  try {
    await session.extend(prompts);
    return await session.sample({ ...opts, final: true });
  } finally {
    session.dispose();
  }
}

function endsWithStopString(tokens: number[], opts: SampleOptions): boolean {
  if (!opts.stopStrings?.length || !opts.decode) return false;
  const tail = opts.decode(tokens.slice(-32));
  return opts.stopStrings.some((s) => tail.endsWith(s));
}
