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
  /** Generation of a row ends after it emits one of these (the stop token is part of the output). */
  stopTokens?: number[];
  /** Generation of a row ends when its decoded output ends with one of these (needs `decode`). */
  stopStrings?: string[];
  decode?: (ids: number[]) => string;
  rng: Rng;
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

/** Draw one token from row `row` of `logits` ([rows, V]); returns the id and its log-prob. */
export function drawToken(
  logits: Float32Array,
  row: number,
  vocab: number,
  temperature: number,
  topP: number,
  rng: Rng,
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
  } else if (topP < 1) {
    const order = Array.from({ length: vocab }, (_, i) => i).sort((a, b) => probs[b]! - probs[a]! || a - b);
    let mass = 0;
    let keep = 0;
    while (keep < vocab && mass < topP * z) mass += probs[order[keep++]!]!;
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

interface Row {
  index: number;
  prompt: number[];
  out: Generation;
  done: boolean;
}

/**
 * Generate continuations for a batch of prompts (each at least one token, e.g. a BOS).
 * The random stream is consumed in row order at every step, so a seed gives the same outputs on every backend up to
 * float differences in the logits.
 */
export async function generate(model: LlamaModel, prompts: number[][], opts: SampleOptions): Promise<Generation[]> {
  const V = model.config.vocab_size;
  const maxCtx = model.config.max_position_embeddings;
  const temperature = opts.temperature ?? 1;
  const topP = opts.topP ?? 1;
  const stops = new Set(opts.stopTokens ?? []);
  prompts.forEach((p, i) => {
    if (p.length === 0) throw new Error(`prompt ${i} is empty: every prompt needs at least one token (e.g. the tokenizer's bos)`);
    if (p.length >= maxCtx) throw new Error(`prompt ${i} has ${p.length} tokens; max_position_embeddings is ${maxCtx}`);
  });
  const rows: Row[] = prompts.map((prompt, index) => ({ index, prompt, out: { tokens: [], logProbs: [], finish: 'length' }, done: false }));
  if (prompts.length === 0 || opts.maxNewTokens <= 0) return rows.map((r) => r.out);

  const width = Math.max(...prompts.map((p) => p.length));
  let active = rows.slice();
  // keyMask rows of the active batch over every position so far (prompt padding is 0, the rest 1).
  let keyRows: number[][] = active.map((r) => Array.from({ length: width }, (_, t) => (t >= width - r.prompt.length ? 1 : 0)));
  let cache: LayerCache[] | null = null;

  const step = (ids: Int32Array, positions: Int32Array, keyMask: Uint8Array, past: LayerCache[] | null): ForwardOutput => {
    let out: ForwardOutput | undefined;
    tf.tidy(() => {
      out = model.forward({ ids, batch: active.length, positions, keyMask, cache: past ?? undefined, lastOnly: true });
      return [out.logits, ...out.cache.flatMap((c) => [c.k, c.v])];
    });
    return out!;
  };

  const fullInput = () => {
    const w = keyRows[0]!.length;
    const ids = new Int32Array(active.length * w);
    const positions = new Int32Array(active.length * w);
    active.forEach((r, b) => {
      const seq = [...r.prompt, ...r.out.tokens];
      const pad = w - seq.length;
      ids.set(seq, b * w + pad);
      for (let t = pad; t < w; t++) positions[b * w + t] = t - pad;
    });
    return { ids, positions, keyMask: Uint8Array.from(keyRows.flat()) };
  };

  let input = fullInput();
  for (let n = 0; n < opts.maxNewTokens; n++) {
    const res = step(input.ids, input.positions, input.keyMask, cache);
    const logits = (await res.logits.data()) as Float32Array;
    res.logits.dispose();
    if (cache) for (const c of cache) (c.k.dispose(), c.v.dispose());
    if (opts.useCache === false) {
      for (const c of res.cache) (c.k.dispose(), c.v.dispose());
      cache = null;
    } else {
      cache = res.cache;
    }

    active.forEach((r, b) => {
      const { id, logProb } = drawToken(logits, b, V, temperature, topP, opts.rng);
      r.out.tokens.push(id);
      r.out.logProbs.push(logProb);
      if (stops.has(id) || endsWithStopString(r.out.tokens, opts)) {
        r.done = true;
        r.out.finish = 'stop';
      } else if (r.prompt.length + r.out.tokens.length >= maxCtx) {
        r.done = true;
        r.out.finish = 'context';
      }
    });
    if (n === opts.maxNewTokens - 1) break;
    const keep = active.map((r, b) => (r.done ? -1 : b)).filter((b) => b >= 0);
    if (keep.length === 0) break;
    if (keep.length < active.length) {
      if (cache) {
        const idx = tf.tensor1d(keep, 'int32');
        const old: LayerCache[] = cache;
        cache = old.map((c) => ({ k: tf.gather(c.k, idx) as tf.Tensor4D, v: tf.gather(c.v, idx) as tf.Tensor4D }));
        for (const c of old) (c.k.dispose(), c.v.dispose());
        idx.dispose();
      }
      active = keep.map((b) => active[b]!);
      keyRows = keep.map((b) => keyRows[b]!);
    }
    keyRows.forEach((k) => k.push(1));
    if (cache) {
      input = {
        ids: Int32Array.from(active.map((r) => r.out.tokens[r.out.tokens.length - 1]!)),
        positions: Int32Array.from(active.map((r) => r.prompt.length + r.out.tokens.length - 1)),
        keyMask: Uint8Array.from(keyRows.flat()),
      };
    } else {
      input = fullInput();
    }
  }
  if (cache) for (const c of cache) (c.k.dispose(), c.v.dispose());
  return rows.map((r) => r.out);
}

function endsWithStopString(tokens: number[], opts: SampleOptions): boolean {
  if (!opts.stopStrings?.length || !opts.decode) return false;
  const tail = opts.decode(tokens.slice(-32));
  return opts.stopStrings.some((s) => tail.endsWith(s));
}
