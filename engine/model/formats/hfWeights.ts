/**
 * Conversion between the model's variables and Hugging Face tensors (names and layouts of `LlamaForCausalLM`'s,
 * `Qwen2ForCausalLM`'s and `Qwen3ForCausalLM`'s `state_dict()`): HF linear weights are [out, in]; ours are [in, out]
 * (see llama.ts). Biases and norm weights are vectors in both.
 *
 * A model is built one tensor at a time (`HfModelBuilder`): each HF tensor is converted and becomes its variable as it
 * arrives, so a loader that hands tensors over and drops them (a shard at a time: shardedWeights.ts) holds at most
 * the model plus what it has not yet handed over, never a second converted copy of everything.
 */
import { tf } from '../../tensor/backend';
import { UserError } from '../../base/userError';
import { hasQkNorm, hasQkvBias, headDim, type LlamaConfig } from '../config';
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
    if (hasQkvBias(c)) {
      m.set(`${p}.self_attn.q_proj.bias`, [c.num_attention_heads * hd]);
      m.set(`${p}.self_attn.k_proj.bias`, [c.num_key_value_heads * hd]);
      m.set(`${p}.self_attn.v_proj.bias`, [c.num_key_value_heads * hd]);
    }
    if (hasQkNorm(c)) {
      m.set(`${p}.self_attn.q_norm.weight`, [hd]);
      m.set(`${p}.self_attn.k_norm.weight`, [hd]);
    }
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

/**
 * Where each HF tensor goes: our variable's name and whether it is a linear weight (transposed on the way) or a
 * vector. Layer tensors are `model.layers.L.<suffix>`.
 */
const LAYER_TENSORS: Record<string, [string, 'linear' | 'vector']> = {
  'input_layernorm.weight': ['attn_norm', 'vector'],
  'self_attn.q_proj.weight': ['wq', 'linear'],
  'self_attn.k_proj.weight': ['wk', 'linear'],
  'self_attn.v_proj.weight': ['wv', 'linear'],
  'self_attn.o_proj.weight': ['wo', 'linear'],
  'self_attn.q_proj.bias': ['bq', 'vector'],
  'self_attn.k_proj.bias': ['bk', 'vector'],
  'self_attn.v_proj.bias': ['bv', 'vector'],
  'self_attn.q_norm.weight': ['q_norm', 'vector'],
  'self_attn.k_norm.weight': ['k_norm', 'vector'],
  'post_attention_layernorm.weight': ['mlp_norm', 'vector'],
  'mlp.gate_proj.weight': ['wg', 'linear'],
  'mlp.up_proj.weight': ['wu', 'linear'],
  'mlp.down_proj.weight': ['wd', 'linear'],
};
const TOP_TENSORS: Record<string, [string, 'linear' | 'vector']> = {
  'model.embed_tokens.weight': ['embed', 'vector'], // [V, D] in both layouts: a lookup table, not a product
  'model.norm.weight': ['norm', 'vector'],
  'lm_head.weight': ['lm_head', 'linear'],
};

function internalNameOf(hfName: string): [string, 'linear' | 'vector'] | null {
  if (Object.hasOwn(TOP_TENSORS, hfName)) return TOP_TENSORS[hfName]!;
  const m = /^model\.layers\.(\d+)\.(.+)$/.exec(hfName);
  if (!m || !Object.hasOwn(LAYER_TENSORS, m[2]!)) return null;
  const [name, kind] = LAYER_TENSORS[m[2]!]!;
  return [`layers.${m[1]}.${name}`, kind];
}

/**
 * Builds a model from HF-named tensors handed over one at a time (each already checked against the config's
 * expected shapes, `checkHfTensors`). `add` makes the variable at once, so the caller may drop its copy; `build`
 * checks that every expected tensor came and orders the variables as `expectedHfShapes` lists them (the optimiser's
 * order must not depend on the order of a file's tensors).
 */
export class HfModelBuilder {
  private readonly expected: Map<string, number[]>;
  private readonly made = new Map<string, tf.Variable>();

  constructor(
    readonly config: LlamaConfig,
    private readonly source = 'weights',
  ) {
    this.expected = expectedHfShapes(config);
  }

  /** Converts one HF tensor into its variable. Tensors the model does not use (a tied lm_head) are skipped. */
  add(hfName: string, t: HostTensor): void {
    const shape = this.expected.get(hfName);
    if (!shape) return;
    const target = internalNameOf(hfName);
    if (!target) throw new WeightsError(`${this.source}: tensor '${hfName}' has no place in the model`);
    const [name, kind] = target;
    if (this.made.has(name)) throw new WeightsError(`${this.source}: tensor '${hfName}' is given twice`);
    const data = kind === 'linear' ? transpose2d(t.data, shape[0]!, shape[1]!) : t.data;
    const ours = kind === 'linear' ? [shape[1]!, shape[0]!] : shape;
    // tf.variable shares the initial tensor's data and leaves the tensor itself alive: tidy disposes it.
    this.made.set(
      name,
      tf.tidy(() => tf.variable(tf.tensor(data, ours), true, `${name}_${uniq()}`)),
    );
  }

  build(): LlamaModel {
    const params = new Map<string, tf.Variable>();
    for (const [hfName, shape] of this.expected) {
      const name = internalNameOf(hfName)![0];
      const v = this.made.get(name);
      if (!v) {
        this.dispose();
        throw new WeightsError(`${this.source}: tensor '${hfName}' is missing (expected shape [${shape}])`);
      }
      params.set(name, v);
    }
    return new LlamaModel(this.config, params);
  }

  /** Frees what was made (after a failure). */
  dispose(): void {
    for (const v of this.made.values()) v.dispose();
    this.made.clear();
  }
}

/**
 * Build a model from HF-named host tensors (already checked with checkHfTensors). With `consume`, each entry is
 * deleted from `t` once it is a variable, so the caller's copy shrinks as the model grows.
 */
export function modelFromHf(c: LlamaConfig, t: Record<string, HostTensor>, consume = false): LlamaModel {
  const builder = new HfModelBuilder(c);
  try {
    for (const name of expectedHfShapes(c).keys()) {
      const tensor = t[name];
      if (!tensor) continue; // named by build()
      builder.add(name, tensor);
      if (consume) delete t[name];
    }
  } catch (err) {
    builder.dispose();
    throw err;
  }
  return builder.build();
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
    if (hasQkvBias(c)) {
      out[`${p}.self_attn.q_proj.bias`] = { shape: [qw], data: await data(`layers.${l}.bq`) };
      out[`${p}.self_attn.k_proj.bias`] = { shape: [kw], data: await data(`layers.${l}.bk`) };
      out[`${p}.self_attn.v_proj.bias`] = { shape: [kw], data: await data(`layers.${l}.bv`) };
    }
    if (hasQkNorm(c)) {
      out[`${p}.self_attn.q_norm.weight`] = { shape: [hd], data: await data(`layers.${l}.q_norm`) };
      out[`${p}.self_attn.k_norm.weight`] = { shape: [hd], data: await data(`layers.${l}.k_norm`) };
    }
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
 * (initializer_range, 0.02 by default), biases 0 (left as allocated), norm weights 1. Drawn on the host from `normal`, so a seed gives the same
 * weights on every backend.
 */
export function initHfTensors(c: LlamaConfig, normal: () => number, std = 0.02): Record<string, HostTensor> {
  const out: Record<string, HostTensor> = {};
  for (const [name, shape] of expectedHfShapes(c)) {
    const n = shape.reduce((a, b) => a * b, 1);
    const data = new Float32Array(n);
    if (name.endsWith('norm.weight')) data.fill(1);
    else if (!name.endsWith('.bias')) for (let i = 0; i < n; i++) data[i] = normal() * std;
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
