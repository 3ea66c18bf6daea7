/**
 * Decoder-only transformer with Hugging Face Llama semantics: RMSNorm, rotary embeddings (rotate-half layout, as HF's
 * LlamaRotaryEmbedding, with Llama 3's frequency scaling when configured), SwiGLU MLP, grouped-query attention,
 * optional tied embeddings; and the two Qwen variants of it (issue 30, item 3): Qwen2's biases on the q, k and v
 * projections (`layers.L.bq`, `bk`, `bv`), Qwen3's RMSNorm of each q and k head before RoPE (`layers.L.q_norm`,
 * `k_norm`, over head_dim, with the model's rms_norm_eps), as transformers' Qwen2Attention and Qwen3Attention.
 *
 * Weights live in variables laid out for the forward pass, not in HF's layout: linear maps are stored transposed
 * ([in, out]) so that every product is a plain matMul (fast on wasm, see tensor/matMul.ts). q, k, v, gate and up are
 * separate products: fusing them into one matMul saves launches but needs a column split of the result, which the
 * wasm backend runs as a strided copy that cost more than the launches saved (docs/results/bench.md, "Optimisations").
 * `hfWeights.ts` converts to and from HF's names.
 *
 * One code path serves training (full sequence, differentiable) and sampling (KV cache): the cache is just the
 * keys and values of earlier positions, concatenated in front of the new ones.
 *
 * While the native kernels are active on wasm (engine/tensor/native/fused.ts), RMSNorm, SwiGLU, RoPE and the row gathers run
 * as fused native ops, and products with a transposed operand use matMul's transpose flags (the native product reads
 * either layout) instead of explicit transposes; the maths is the same, within float rounding.
 */
import { fusedOps, type FusedOps } from '../tensor/native/fused';
import { tf } from '../tensor/backend';
import { mm, transposeLast } from '../tensor/matMul';
import { gatherRows } from '../tensor/rows';
import { hasQkNorm, headDim, ropeInverseFrequencies, type LlamaConfig } from './config';
import type { FrozenProduct, LoraAdapters } from './lora/loraAdapters';

/** Keys and values of earlier positions for one layer: [B, numKvHeads, Tcache, headDim], after RoPE. */
export interface LayerCache {
  k: tf.Tensor4D;
  v: tf.Tensor4D;
}

export interface ForwardInput {
  /** Token ids, row-major [B, Tn]. */
  ids: Int32Array;
  batch: number;
  /** Position id of every input token, [B, Tn] (lets rows with left padding start at 0). */
  positions: Int32Array;
  /** 1 where a key may be attended to, over cached + new positions: [B, Tcache + Tn]. Causality is added here. */
  keyMask: Uint8Array;
  cache?: LayerCache[];
  /** Differentiable embedding lookup (gather whose gradient is a scatter: wasm has no kernel for gather's own). */
  differentiable?: boolean;
  /** Return logits of the last position of each row only ([B, V]) instead of all ([B·Tn, V]). */
  lastOnly?: boolean;
  /** Return logits only at these flat positions of [B·Tn] ([M, V]): the vocabulary-wide head is the costliest layer. */
  headRows?: Int32Array;
}

export interface ForwardOutput {
  logits: tf.Tensor2D;
  cache: LayerCache[];
}

export const MASKED = -1e9;

/** What every layer of one forward pass shares: its sizes, RoPE tables and attention bias. */
interface Pass {
  batch: number;
  /** New tokens per row. */
  tn: number;
  /** Keys per row: cached + new. */
  tk: number;
  /** [B, 1, Tn, hd] each. */
  cos: tf.Tensor4D;
  sin: tf.Tensor4D;
  /** [B, 1, 1, Tn, Tk]: 0 where a query may attend, MASKED elsewhere. */
  bias: tf.Tensor;
  /** The native fused ops, when they run in this pass (else the stock tensor ops). */
  fused: FusedOps | null;
  /** A differentiable (training) pass: LoRA's dropout acts. */
  train: boolean;
}

/**
 * A frozen weight's product on the pass's path, x·W (x·Wᵀ with `transposeW`), and the gradient it passes back to x,
 * dy·Wᵀ (dy·W): as tf.matMul's gradient computed it (flags) when fused, as mm's (explicit transposes) otherwise.
 */
function frozenMaps(fused: FusedOps | null, w: tf.Tensor2D, transposeW: boolean): FrozenProduct {
  return {
    value: (x) =>
      fused ? tf.matMul<tf.Tensor2D>(x, w, false, transposeW) : tf.matMul(x, transposeW ? transposeLast(w) : w),
    grad: (dy) =>
      fused ? tf.matMul<tf.Tensor2D>(dy, w, false, !transposeW) : tf.matMul(dy, transposeW ? w : transposeLast(w)),
  };
}

/**
 * x·W for a weight no gradient is taken of (LoRA's frozen base): the backward computes x's gradient alone, in its own
 * scope, and saves nothing. Through tf.matMul or `mm` TensorFlow.js saves W (the wasm backend's stock Identity copies
 * it) and `mm`'s gradient computes W's gradient too, each kept with W's transpose until the whole backward ends: on
 * the unfused path a LoRA pass of SmolLM2-135M held 1.7 GB of them whatever its tokens, and the wasm heap ran out
 * (issue 30). Same products, same floats.
 */
function frozenProduct(x: tf.Tensor2D, base: FrozenProduct): tf.Tensor2D {
  const f = tf.customGrad(((a: tf.Tensor2D) => ({
    value: base.value(a),
    gradFunc: (dy: tf.Tensor2D) => tf.tidy(() => base.grad(dy)),
  })) as unknown as Parameters<typeof tf.customGrad>[0]);
  return f(x) as tf.Tensor2D;
}

/** a·b, or a·bᵀ with `transposeB`, on the path of the pass: matMul's flags when fused, else explicit transposes. */
function product<R extends tf.Rank>(
  fused: FusedOps | null,
  a: tf.Tensor<R>,
  b: tf.Tensor<R>,
  transposeB = false,
): tf.Tensor<R> {
  if (fused) return tf.matMul<tf.Tensor<R>>(a, b, false, transposeB);
  return mm(a, transposeB ? (transposeLast(b) as tf.Tensor<R>) : b);
}

export class LlamaModel {
  readonly config: LlamaConfig;
  readonly headDim: number;
  /** Variables by internal name (see module comment); order is stable and is the optimiser's order. */
  readonly params: Map<string, tf.Variable>;
  /**
   * LoRA adapters (lora/loraAdapters.ts), when the model is trained through them: they are then the only trainable
   * variables, and the base weights in `params` stay frozen.
   */
  lora: LoraAdapters | null = null;
  private readonly rotate: tf.Tensor2D;
  private invFreq: Float64Array;

  constructor(config: LlamaConfig, params: Map<string, tf.Variable>) {
    this.config = config;
    this.headDim = headDim(config);
    this.params = params;
    const hd = this.headDim;
    const half = hd / 2;
    // rotate_half(x) = concat(-x[half:], x[:half]) as a matrix: x·R.
    const r = new Float32Array(hd * hd);
    for (let j = 0; j < half; j++) r[(j + half) * hd + j] = -1;
    for (let j = half; j < hd; j++) r[(j - half) * hd + j] = 1;
    this.rotate = tf.keep(tf.tensor2d(r, [hd, hd]));
    this.invFreq = ropeInverseFrequencies(config);
  }

  p(name: string): tf.Variable {
    const v = this.params.get(name);
    if (!v) throw new Error(`model has no parameter '${name}'`);
    return v;
  }

  /** The trained variables by name: the LoRA adapters' when attached, else every weight. Stable order. */
  trainable(): Map<string, tf.Variable> {
    return this.lora ? this.lora.params : this.params;
  }

  /** Trainable variables in a stable order. */
  variables(): tf.Variable[] {
    return [...this.trainable().values()];
  }

  dispose(): void {
    this.lora?.dispose();
    for (const v of this.params.values()) v.dispose();
    this.rotate.dispose();
  }

  /** cos and sin tables [B, 1, Tn, hd] for the given positions (computed in float64, as HF computes in float32+). */
  private ropeTables(positions: Int32Array, batch: number, tn: number): [tf.Tensor4D, tf.Tensor4D] {
    const hd = this.headDim;
    const half = hd / 2;
    const cos = new Float32Array(batch * tn * hd);
    const sin = new Float32Array(batch * tn * hd);
    for (let i = 0; i < batch * tn; i++) {
      const pos = positions[i]!;
      for (let j = 0; j < half; j++) {
        const a = pos * this.invFreq[j]!;
        const c = Math.cos(a);
        const s = Math.sin(a);
        cos[i * hd + j] = c;
        cos[i * hd + j + half] = c;
        sin[i * hd + j] = s;
        sin[i * hd + j + half] = s;
      }
    }
    return [tf.tensor4d(cos, [batch, 1, tn, hd]), tf.tensor4d(sin, [batch, 1, tn, hd])];
  }

  /** Additive attention bias [B, 1, 1, Tn, Tk]: 0 where query i may see key j (key allowed, j ≤ Tcache + i). */
  private attentionBias(keyMask: Uint8Array, batch: number, tn: number, tk: number): tf.Tensor {
    const tc = tk - tn;
    const bias = new Float32Array(batch * tn * tk);
    for (let b = 0; b < batch; b++) {
      for (let i = 0; i < tn; i++) {
        const row = (b * tn + i) * tk;
        for (let j = 0; j < tk; j++) {
          if (j > tc + i || !keyMask[b * tk + j]) bias[row + j] = MASKED;
        }
      }
    }
    return tf.tensor(bias, [batch, 1, 1, tn, tk]);
  }

  /** RMSNorm over the last axis: x / √(mean(x²) + ε) · weight, for x [rows, D] and weight [D]. */
  private rmsNorm(x: tf.Tensor2D, weight: tf.Tensor, fused: FusedOps | null): tf.Tensor2D {
    if (fused) return fused.rmsNorm(x, weight, this.config.rms_norm_eps);
    const ms = tf.mean(tf.mul(x, x), -1, true); // [rows, 1]
    return tf.mul(tf.mul(x, tf.rsqrt(tf.add(ms, this.config.rms_norm_eps))), weight); // [rows, D]
  }

  /** Rotary embedding, HF's rotate-half form: (x·cos + rotate_half(x)·sin)·scale, for x [B, n, Tn, hd]. */
  private applyRope(x: tf.Tensor4D, pass: Pass, scale = 1): tf.Tensor4D {
    const { cos, sin, fused } = pass;
    if (fused) return fused.rope(x, cos, sin, scale);
    const [b, h, t, hd] = x.shape;
    const rotated = tf.reshape(mm(tf.reshape<tf.Rank.R2>(x, [b * h * t, hd]), this.rotate), [b, h, t, hd]); // [B, n, Tn, hd]
    const roped: tf.Tensor4D = tf.add(tf.mul(x, cos), tf.mul(rotated, sin)); // [B, n, Tn, hd]
    return scale === 1 ? roped : tf.mul(roped, scale);
  }

  /**
   * Forward pass. Not wrapped in tidy: call it inside tf.tidy (or a gradient function) and keep what you return.
   * Shapes: B rows of Tn new tokens after Tc cached ones (Tk = Tc + Tn keys), D = hidden_size, V = vocab_size.
   */
  forward(input: ForwardInput): ForwardOutput {
    const { hidden, cache } = this.forwardHidden(input);
    return { logits: this.head(hidden), cache }; // [rows, V]
  }

  /**
   * The vocabulary head on final hidden states [rows, D] (after the last norm): [rows, V]. With `forwardHidden`, lets a
   * caller run the head on row chunks instead of on every row at once (model/logProbs.ts).
   */
  head(hidden: tf.Tensor2D): tf.Tensor2D {
    const fused = fusedOps();
    if (this.lora) {
      const { weight, transposed } = this.headWeight();
      return frozenProduct(hidden, frozenMaps(fused, weight as tf.Tensor2D, transposed)); // [rows, V]
    }
    return this.config.tie_word_embeddings
      ? product(fused, hidden, this.p('embed') as tf.Tensor2D, true) // hidden·embedᵀ
      : product(fused, hidden, this.p('lm_head') as tf.Tensor2D); // lm_head [D, V]
  }

  /** The head's matrix and its layout: the embedding [V, D] when tied (hidden·Wᵀ), else lm_head [D, V] (hidden·W). */
  headWeight(): { weight: tf.Variable; transposed: boolean } {
    return this.config.tie_word_embeddings
      ? { weight: this.p('embed'), transposed: true }
      : { weight: this.p('lm_head'), transposed: false };
  }

  /** `forward` up to the final norm: the hidden states of the rows `forward` would return logits for, [rows, D]. */
  forwardHidden(input: ForwardInput): { hidden: tf.Tensor2D; cache: LayerCache[] } {
    const c = this.config;
    const B = input.batch;
    const tn = input.ids.length / B;
    const tc = input.cache?.[0]?.k.shape[2] ?? 0;
    const tk = tc + tn;
    if (input.positions.length !== B * tn) {
      throw new Error(`positions has ${input.positions.length} entries, expected ${B * tn}`);
    }
    if (input.keyMask.length !== B * tk) {
      throw new Error(`keyMask has ${input.keyMask.length} entries, expected ${B * tk}`);
    }

    const fused = fusedOps();
    const ids = tf.tensor1d(input.ids, 'int32'); // [B·Tn]
    const embed = this.p('embed'); // [V, D]
    let x: tf.Tensor2D = fused
      ? fused.gatherRows(embed as tf.Tensor2D, ids)
      : input.differentiable
        ? gatherRows(embed as tf.Tensor2D, ids)
        : (tf.gather(embed, ids) as tf.Tensor2D); // [B·Tn, D]

    const [cos, sin] = this.ropeTables(input.positions, B, tn); // [B, 1, Tn, hd] each
    const bias = this.attentionBias(input.keyMask, B, tn, tk); // [B, 1, 1, Tn, Tk]
    const pass: Pass = { batch: B, tn, tk, cos, sin, bias, fused, train: input.differentiable === true };
    const cache: LayerCache[] = [];

    // Each layer in a scope of its own: its intermediates are freed when it ends, not when the whole forward does (a
    // 16-row prefill of SmolLM2-135M held 3 GB of them on the wasm heap, issue 30). A training pass's tape keeps what
    // its backward needs by itself.
    for (let l = 0; l < c.num_hidden_layers; l++) {
      const past = input.cache?.[l];
      const [y, k, v] = tf.tidy<[tf.Tensor2D, tf.Tensor4D, tf.Tensor4D]>(() => {
        const out = this.layer(l, x, pass, past);
        return [out.x, out.cache.k, out.cache.v];
      });
      if (l > 0) x.dispose(); // the previous layer's output, which only this layer read
      x = y;
      cache.push({ k, v });
    }

    if (input.headRows) {
      const rows = tf.tensor1d(input.headRows, 'int32');
      x = fused ? fused.gatherRows(x, rows) : gatherRows(x, rows); // [M, D]
    } else if (input.lastOnly) {
      const rows = tf.reshape(x, [B, tn, c.hidden_size]); // [B, Tn, D]
      x = tf.reshape(tf.slice(rows, [0, tn - 1, 0], [B, 1, c.hidden_size]), [B, c.hidden_size]); // [B, D]
    }
    return { hidden: this.rmsNorm(x, this.p('norm'), fused), cache }; // [rows, D]
  }

  /** Decoder layer `l` on the residual stream x [B·Tn, D]: the new stream and this layer's keys and values. */
  private layer(
    l: number,
    x: tf.Tensor2D,
    pass: Pass,
    past: LayerCache | undefined,
  ): { x: tf.Tensor2D; cache: LayerCache } {
    const attn = this.attention(l, this.rmsNorm(x, this.p(`layers.${l}.attn_norm`), pass.fused), pass, past);
    const h: tf.Tensor2D = tf.add(x, attn.out); // [B·Tn, D]
    const y: tf.Tensor2D = tf.add(h, this.mlp(l, this.rmsNorm(h, this.p(`layers.${l}.mlp_norm`), pass.fused), pass)); // [B·Tn, D]
    return { x: y, cache: attn.cache };
  }

  /**
   * Causal self-attention of layer `l` with grouped-query heads (H query heads share Hkv key/value heads, rep = H/Hkv
   * each) on the normed input `h` [B·Tn, D]; returns its output [B·Tn, D] (after wo) and this layer's keys and values
   * (cached ones first) for the next decoding step.
   */
  private attention(
    l: number,
    h: tf.Tensor2D,
    pass: Pass,
    past: LayerCache | undefined,
  ): { out: tf.Tensor2D; cache: LayerCache } {
    const { batch: B, tn, tk } = pass;
    const hd = this.headDim;
    const H = this.config.num_attention_heads;
    const Hkv = this.config.num_key_value_heads;
    const rep = H / Hkv;
    const q = this.applyRope(this.headNorm(l, 'q_norm', this.heads(l, 'q', h, H, pass), pass), pass, 1 / Math.sqrt(hd)); // [B, H, Tn, hd]
    let k = this.applyRope(this.headNorm(l, 'k_norm', this.heads(l, 'k', h, Hkv, pass), pass), pass); // [B, Hkv, Tn, hd]
    let v = this.heads(l, 'v', h, Hkv, pass); // [B, Hkv, Tn, hd]
    if (past) {
      k = tf.concat([past.k, k], 2); // [B, Hkv, Tk, hd]
      v = tf.concat([past.v, v], 2); // [B, Hkv, Tk, hd]
    }
    // Grouped-query attention without copying keys: the `rep` query heads that share a kv head are stacked along
    // the query axis (HF's repeat_kv maps head h to kv head ⌊h / rep⌋, which is this memory order).
    const qg = tf.reshape(q, [B, Hkv, rep * tn, hd]); // [B, Hkv, rep·Tn, hd]
    const scores = tf.add(tf.reshape(product(pass.fused, qg, k, true), [B, Hkv, rep, tn, tk]), pass.bias); // [B, Hkv, rep, Tn, Tk]
    const probs = tf.reshape(tf.softmax(scores), [B, Hkv, rep * tn, tk]); // [B, Hkv, rep·Tn, Tk]
    const context = tf.reshape(product(pass.fused, probs as tf.Tensor4D, v), [B, H, tn, hd]); // [B, H, Tn, hd]
    const merged = tf.reshape(tf.transpose(context, [0, 2, 1, 3]), [B * tn, H * hd]); // [B·Tn, H·hd]
    const out = this.linear(`layers.${l}.wo`, merged as tf.Tensor2D, pass); // [B·Tn, D]
    return { out, cache: { k, v } };
  }

  /**
   * The projection `w{which}` of layer `l` (plus its bias `b{which}` where the model has one: Qwen2) split into n
   * heads: [B·Tn, D] → [B, n, Tn, hd].
   */
  private heads(l: number, which: 'q' | 'k' | 'v', h: tf.Tensor2D, n: number, pass: Pass): tf.Tensor4D {
    let projected = this.linear(`layers.${l}.w${which}`, h, pass); // [B·Tn, n·hd]
    const bias = this.params.get(`layers.${l}.b${which}`);
    if (bias) projected = tf.add(projected, bias); // [B·Tn, n·hd] + [n·hd]
    return tf.transpose(tf.reshape<tf.Rank.R4>(projected, [pass.batch, pass.tn, n, this.headDim]), [0, 2, 1, 3]); // [B, n, Tn, hd]
  }

  /** Qwen3's RMSNorm of every head of q or k over head_dim (weight [hd]); the identity for other families. */
  private headNorm(l: number, name: 'q_norm' | 'k_norm', x: tf.Tensor4D, pass: Pass): tf.Tensor4D {
    if (!hasQkNorm(this.config)) return x;
    const [b, n, t, hd] = x.shape;
    const rows = tf.reshape<tf.Rank.R2>(x, [b * n * t, hd]); // [B·n·Tn, hd]
    return tf.reshape(this.rmsNorm(rows, this.p(`layers.${l}.${name}`), pass.fused), [b, n, t, hd]); // [B, n, Tn, hd]
  }

  /** SwiGLU MLP of layer `l` on the normed input `h` [B·Tn, D]: wd(silu(wg·h) ⊙ wu·h), F = intermediate_size. */
  private mlp(l: number, h: tf.Tensor2D, pass: Pass): tf.Tensor2D {
    const gate = this.linear(`layers.${l}.wg`, h, pass); // [B·Tn, F]
    const up = this.linear(`layers.${l}.wu`, h, pass); // [B·Tn, F]
    const act: tf.Tensor2D = pass.fused ? pass.fused.swiglu(gate, up) : tf.mul(tf.mul(gate, tf.sigmoid(gate)), up); // [B·Tn, F]: silu(gate) ⊙ up
    return this.linear(`layers.${l}.wd`, act, pass); // [B·Tn, D]
  }

  /** x·W for the linear map `weight` (`layers.L.<w>`, [in, out]), plus its LoRA update where it has one. */
  private linear(weight: string, x: tf.Tensor2D, pass: Pass): tf.Tensor2D {
    const w = this.p(weight) as tf.Tensor2D;
    if (!this.lora) return product(pass.fused, x, w); // [rows, out]
    // Under LoRA the base is frozen: its products take no gradient of W.
    const base = frozenMaps(pass.fused, w, false);
    return this.lora.linear(weight, x, base, pass.train) ?? frozenProduct(x, base);
  }
}

/** Positions and key mask for right-padded rows starting at position 0 (training batches). */
export function rightPaddedLayout(lengths: number[], width: number): { positions: Int32Array; keyMask: Uint8Array } {
  const B = lengths.length;
  const positions = new Int32Array(B * width);
  const keyMask = new Uint8Array(B * width);
  for (let b = 0; b < B; b++) {
    for (let t = 0; t < width; t++) {
      positions[b * width + t] = t;
      keyMask[b * width + t] = t < lengths[b]! ? 1 : 0;
    }
  }
  return { positions, keyMask };
}
