/**
 * An independent, float64, loop-by-loop Llama forward pass written from Hugging Face's modeling_llama.py
 * (LlamaRMSNorm, LlamaRotaryEmbedding + apply_rotary_pos_emb with rotate_half, repeat_kv, eager attention, LlamaMLP),
 * reading HF-named tensors directly. It shares no code with engine/model, so it checks our fused, transposed layout.
 */
import type { LlamaConfig } from '../../engine/model/config';

type Tensors = Record<string, { shape: number[]; data: Float32Array }>;

function linear(x: number[], w: Float32Array, out: number, inp: number): number[] {
  // HF nn.Linear: y = x · Wᵀ, W is [out, in]
  const y = new Array<number>(out).fill(0);
  for (let o = 0; o < out; o++) {
    let s = 0;
    for (let i = 0; i < inp; i++) s += x[i]! * w[o * inp + i]!;
    y[o] = s;
  }
  return y;
}

function rmsNorm(x: number[], w: Float32Array, eps: number): number[] {
  const ms = x.reduce((s, v) => s + v * v, 0) / x.length;
  const r = 1 / Math.sqrt(ms + eps);
  return x.map((v, i) => v * r * w[i]!);
}

export function referenceLogits(c: LlamaConfig, t: Tensors, ids: number[]): number[][] {
  const d = c.hidden_size;
  const H = c.num_attention_heads;
  const Hkv = c.num_key_value_heads;
  const hd = c.head_dim ?? d / H;
  const I = c.intermediate_size;
  const T = ids.length;
  const W = (n: string) => t[n]!.data;
  let xs = ids.map((id) => Array.from(W('model.embed_tokens.weight').subarray(id * d, (id + 1) * d)));
  const invFreq = Array.from({ length: hd / 2 }, (_, i) => 1 / Math.pow(c.rope_theta, (2 * i) / hd));
  const rope = (v: number[], pos: number) => {
    const emb = [...invFreq, ...invFreq].map((f) => f * pos);
    const rot = [...v.slice(hd / 2).map((a) => -a), ...v.slice(0, hd / 2)];
    return v.map((a, i) => a * Math.cos(emb[i]!) + rot[i]! * Math.sin(emb[i]!));
  };
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    const hs = xs.map((x) => rmsNorm(x, W(`${p}.input_layernorm.weight`), c.rms_norm_eps));
    const q = hs.map((h) => linear(h, W(`${p}.self_attn.q_proj.weight`), H * hd, d));
    const k = hs.map((h) => linear(h, W(`${p}.self_attn.k_proj.weight`), Hkv * hd, d));
    const v = hs.map((h) => linear(h, W(`${p}.self_attn.v_proj.weight`), Hkv * hd, d));
    const head = (m: number[], h: number) => m.slice(h * hd, (h + 1) * hd);
    const attnOut = xs.map(() => new Array<number>(H * hd).fill(0));
    for (let h = 0; h < H; h++) {
      const kvh = Math.floor(h / (H / Hkv)); // repeat_kv
      for (let i = 0; i < T; i++) {
        const qi = rope(head(q[i]!, h), i);
        const scores: number[] = [];
        for (let j = 0; j <= i; j++) {
          const kj = rope(head(k[j]!, kvh), j);
          scores.push(qi.reduce((s, a, e) => s + a * kj[e]!, 0) / Math.sqrt(hd));
        }
        const m = Math.max(...scores);
        const ex = scores.map((s) => Math.exp(s - m));
        const z = ex.reduce((a, b) => a + b, 0);
        for (let j = 0; j <= i; j++) {
          const vj = head(v[j]!, kvh);
          for (let e = 0; e < hd; e++) attnOut[i]![h * hd + e]! += (ex[j]! / z) * vj[e]!;
        }
      }
    }
    xs = xs.map((x, i) => {
      const o = linear(attnOut[i]!, W(`${p}.self_attn.o_proj.weight`), d, H * hd);
      const x1 = x.map((a, e) => a + o[e]!);
      const h2 = rmsNorm(x1, W(`${p}.post_attention_layernorm.weight`), c.rms_norm_eps);
      const g = linear(h2, W(`${p}.mlp.gate_proj.weight`), I, d);
      const u = linear(h2, W(`${p}.mlp.up_proj.weight`), I, d);
      const act = g.map((a, e) => (a / (1 + Math.exp(-a))) * u[e]!);
      const down = linear(act, W(`${p}.mlp.down_proj.weight`), d, I);
      return x1.map((a, e) => a + down[e]!);
    });
  }
  const head = c.tie_word_embeddings ? W('model.embed_tokens.weight') : W('lm_head.weight');
  return xs.map((x) => linear(rmsNorm(x, W('model.norm.weight'), c.rms_norm_eps), head, c.vocab_size, d));
}
