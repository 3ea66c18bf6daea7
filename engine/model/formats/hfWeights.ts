/**
 * Conversion between the model's variables and Hugging Face Llama tensors (names and layouts of
 * `LlamaForCausalLM.state_dict()`): HF linear weights are [out, in]; ours are [in, out] (see llama.ts).
 */
import { tf } from '../../tensor/backend';
import { UserError } from '../../base/userError';
import { headDim, type LlamaConfig } from '../config';
import { LlamaModel } from '../llama';

export interface HostTensor {
  shape: number[];
  data: Float32Array;
}

export class WeightsError extends UserError {}

/** [rows, cols] row-major → [cols, rows]. */
function transpose2d(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c]!;
  return out;
}

/** Every HF tensor name and shape this config expects. */
export function expectedHfShapes(c: LlamaConfig): Map<string, number[]> {
  const hd = headDim(c);
  const d = c.hidden_size;
  const m = new Map<string, number[]>();
  m.set('model.embed_tokens.weight', [c.vocab_size, d]);
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    m.set(`${p}.input_layernorm.weight`, [d]);
    m.set(`${p}.self_attn.q_proj.weight`, [c.num_attention_heads * hd, d]);
    m.set(`${p}.self_attn.k_proj.weight`, [c.num_key_value_heads * hd, d]);
    m.set(`${p}.self_attn.v_proj.weight`, [c.num_key_value_heads * hd, d]);
    m.set(`${p}.self_attn.o_proj.weight`, [d, c.num_attention_heads * hd]);
    m.set(`${p}.post_attention_layernorm.weight`, [d]);
    m.set(`${p}.mlp.gate_proj.weight`, [c.intermediate_size, d]);
    m.set(`${p}.mlp.up_proj.weight`, [c.intermediate_size, d]);
    m.set(`${p}.mlp.down_proj.weight`, [d, c.intermediate_size]);
  }
  m.set('model.norm.weight', [d]);
  if (!c.tie_word_embeddings) m.set('lm_head.weight', [c.vocab_size, d]);
  return m;
}

/**
 * Check names, shapes and dtypes of HF tensors against the config. Each error names the offending tensor and what
 * was expected. Extra tensors are an error too, except rotary caches and a redundant lm_head under tied embeddings.
 */
export function checkHfTensors(
  c: LlamaConfig,
  tensors: Record<string, { shape: number[]; dtype?: string }>,
  source: string,
): void {
  const expected = expectedHfShapes(c);
  for (const [name, shape] of expected) {
    const t = tensors[name];
    if (!t) throw new WeightsError(`${source}: tensor '${name}' is missing (expected shape [${shape}])`);
    if (t.shape.length !== shape.length || t.shape.some((s, i) => s !== shape[i])) {
      throw new WeightsError(
        `${source}: tensor '${name}' has shape [${t.shape}], expected [${shape}] from config.json`,
      );
    }
    if (t.dtype && !['F32', 'F16', 'BF16', 'F64'].includes(t.dtype)) {
      throw new WeightsError(
        `${source}: tensor '${name}' has dtype ${t.dtype}, expected a float type (F32, F16, BF16)`,
      );
    }
  }
  for (const name of Object.keys(tensors)) {
    if (
      expected.has(name) ||
      name.endsWith('rotary_emb.inv_freq') ||
      (c.tie_word_embeddings && name === 'lm_head.weight')
    ) {
      continue;
    }
    throw new WeightsError(
      `${source}: unexpected tensor '${name}' for this config (is config.json the one that belongs to these weights?)`,
    );
  }
}

/** Build a model from HF-named host tensors (already checked with checkHfTensors). */
export function modelFromHf(c: LlamaConfig, t: Record<string, HostTensor>): LlamaModel {
  const hd = headDim(c);
  const d = c.hidden_size;
  const I = c.intermediate_size;
  const qw = c.num_attention_heads * hd;
  const kw = c.num_key_value_heads * hd;
  const host = new Map<string, HostTensor>();
  const get = (n: string) => t[n]!.data;
  host.set('embed', { shape: [c.vocab_size, d], data: get('model.embed_tokens.weight') });
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    host.set(`layers.${l}.attn_norm`, { shape: [d], data: get(`${p}.input_layernorm.weight`) });
    host.set(`layers.${l}.wq`, { shape: [d, qw], data: transpose2d(get(`${p}.self_attn.q_proj.weight`), qw, d) });
    host.set(`layers.${l}.wk`, { shape: [d, kw], data: transpose2d(get(`${p}.self_attn.k_proj.weight`), kw, d) });
    host.set(`layers.${l}.wv`, { shape: [d, kw], data: transpose2d(get(`${p}.self_attn.v_proj.weight`), kw, d) });
    host.set(`layers.${l}.wo`, { shape: [qw, d], data: transpose2d(get(`${p}.self_attn.o_proj.weight`), d, qw) });
    host.set(`layers.${l}.mlp_norm`, { shape: [d], data: get(`${p}.post_attention_layernorm.weight`) });
    host.set(`layers.${l}.wg`, { shape: [d, I], data: transpose2d(get(`${p}.mlp.gate_proj.weight`), I, d) });
    host.set(`layers.${l}.wu`, { shape: [d, I], data: transpose2d(get(`${p}.mlp.up_proj.weight`), I, d) });
    host.set(`layers.${l}.wd`, { shape: [I, d], data: transpose2d(get(`${p}.mlp.down_proj.weight`), d, I) });
  }
  host.set('norm', { shape: [d], data: get('model.norm.weight') });
  if (!c.tie_word_embeddings) {
    host.set('lm_head', { shape: [d, c.vocab_size], data: transpose2d(get('lm_head.weight'), c.vocab_size, d) });
  }
  const params = new Map<string, tf.Variable>();
  // tf.variable shares the initial tensor's data and leaves the tensor itself alive: tidy disposes it.
  for (const [name, h] of host) {
    params.set(
      name,
      tf.tidy(() => tf.variable(tf.tensor(h.data, h.shape), true, `${name}_${uniq()}`)),
    );
  }
  return new LlamaModel(c, params);
}

let counter = 0;
/** tfjs variable names are global per process; several models (policy, reference copy) must not collide. */
function uniq(): number {
  return ++counter;
}

/** The model's weights as HF-named host tensors. */
export async function modelToHf(model: LlamaModel): Promise<Record<string, HostTensor>> {
  const c = model.config;
  const hd = model.headDim;
  const d = c.hidden_size;
  const I = c.intermediate_size;
  const qw = c.num_attention_heads * hd;
  const kw = c.num_key_value_heads * hd;
  const data = async (n: string) => (await model.p(n).data()) as Float32Array;
  const out: Record<string, HostTensor> = {};
  out['model.embed_tokens.weight'] = { shape: [c.vocab_size, d], data: await data('embed') };
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}`;
    out[`${p}.input_layernorm.weight`] = { shape: [d], data: await data(`layers.${l}.attn_norm`) };
    out[`${p}.self_attn.q_proj.weight`] = { shape: [qw, d], data: transpose2d(await data(`layers.${l}.wq`), d, qw) };
    out[`${p}.self_attn.k_proj.weight`] = { shape: [kw, d], data: transpose2d(await data(`layers.${l}.wk`), d, kw) };
    out[`${p}.self_attn.v_proj.weight`] = { shape: [kw, d], data: transpose2d(await data(`layers.${l}.wv`), d, kw) };
    out[`${p}.self_attn.o_proj.weight`] = { shape: [d, qw], data: transpose2d(await data(`layers.${l}.wo`), qw, d) };
    out[`${p}.post_attention_layernorm.weight`] = { shape: [d], data: await data(`layers.${l}.mlp_norm`) };
    out[`${p}.mlp.gate_proj.weight`] = { shape: [I, d], data: transpose2d(await data(`layers.${l}.wg`), d, I) };
    out[`${p}.mlp.up_proj.weight`] = { shape: [I, d], data: transpose2d(await data(`layers.${l}.wu`), d, I) };
    out[`${p}.mlp.down_proj.weight`] = { shape: [d, I], data: transpose2d(await data(`layers.${l}.wd`), I, d) };
  }
  out['model.norm.weight'] = { shape: [d], data: await data('norm') };
  if (!c.tie_word_embeddings) {
    out['lm_head.weight'] = { shape: [c.vocab_size, d], data: transpose2d(await data('lm_head'), d, c.vocab_size) };
  }
  return out;
}

/**
 * Random initialisation as HF's LlamaPreTrainedModel._init_weights: linear and embedding weights ~ N(0, std²)
 * (initializer_range, 0.02 by default), norm weights 1. Drawn on the host from `normal`, so a seed gives the same
 * weights on every backend.
 */
export function initHfTensors(c: LlamaConfig, normal: () => number, std = 0.02): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  for (const [name, shape] of expectedHfShapes(c)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    if (name.endsWith('norm.weight')) data.fill(1);
    else for (let i = 0; i < n; i++) data[i] = normal() * std;
    out[name] = { shape, data };
  }
  return out;
}

/** A copy of a model with its own variables (e.g. a frozen reference policy). */
export function cloneModel(model: LlamaModel, trainable = true): LlamaModel {
  const params = new Map<string, tf.Variable>();
  for (const [name, v] of model.params) params.set(name, tf.variable(v, trainable, `${name}_${uniq()}`));
  return new LlamaModel(model.config, params);
}
