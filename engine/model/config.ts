import { z } from 'zod';
import { UserError } from '../base/userError';

/**
 * The policy's architecture, in Hugging Face's own field names (`config.json`), so a checkpoint written here loads in
 * other implementations and a checkpoint made elsewhere loads here. One decoder computes three HF families (issue 30,
 * item 3): Llama (`LlamaForCausalLM`), Qwen2 (the same plus biases on the q, k and v projections) and Qwen3 (the same
 * plus a per-head RMSNorm of q and k before RoPE, and its own head_dim default); and Llama 3's RoPE frequency scaling
 * for any of them.
 */
export interface LlamaConfig {
  vocab_size: number;
  hidden_size: number;
  intermediate_size: number;
  num_hidden_layers: number;
  num_attention_heads: number;
  num_key_value_heads: number;
  max_position_embeddings: number;
  rope_theta: number;
  rms_norm_eps: number;
  tie_word_embeddings: boolean;
  /** Llama allows head_dim ≠ hidden_size / num_attention_heads; absent means the quotient. */
  head_dim?: number;
  /** The HF family; absent means 'llama'. */
  model_type?: ModelFamily;
  /** Llama 3's RoPE frequency scaling; absent means plain RoPE. */
  rope_scaling?: Llama3RopeScaling;
}

export const MODEL_FAMILIES = {
  llama: 'LlamaForCausalLM',
  qwen2: 'Qwen2ForCausalLM',
  qwen3: 'Qwen3ForCausalLM',
} as const;
export type ModelFamily = keyof typeof MODEL_FAMILIES;

/** transformers' `rope_scaling` of rope_type 'llama3' (modeling_rope_utils.py `_compute_llama3_parameters`). */
export interface Llama3RopeScaling {
  rope_type: 'llama3';
  factor: number;
  low_freq_factor: number;
  high_freq_factor: number;
  original_max_position_embeddings: number;
}

const llama3ScalingSchema = z.object({
  factor: z.number().min(1),
  low_freq_factor: z.number().positive(),
  high_freq_factor: z.number().positive(),
  original_max_position_embeddings: z.number().int().positive(),
});

/** Fields a config.json may carry that change the computation and that this implementation does not support. */
const UNSUPPORTED: Array<[string, (v: unknown, family: ModelFamily) => boolean, string]> = [
  ['hidden_act', (v) => v !== undefined && v !== 'silu', "only 'silu' (SwiGLU) is implemented"],
  // Qwen2's q/k/v biases are its own (transformers' Qwen2 ignores the field); Llama's and Qwen3's also bias o_proj
  ['attention_bias', (v, f) => v === true && f !== 'qwen2', 'attention projections with bias are not implemented'],
  ['mlp_bias', (v) => v === true, 'MLP projections with bias are not implemented'],
  ['use_sliding_window', (v) => v === true, 'sliding-window attention is not implemented'],
];

export class ConfigError extends UserError {}

const INTEGER_FIELDS = [
  'vocab_size',
  'hidden_size',
  'intermediate_size',
  'num_hidden_layers',
  'num_attention_heads',
  'num_key_value_heads',
  'max_position_embeddings',
] as const;

/**
 * The largest value each field may have: beyond them nothing here could run (the run config's schema has the same
 * bounds for its overrides), and `model init` would try to allocate terabytes.
 */
export const LLAMA_BOUNDS: Record<(typeof INTEGER_FIELDS)[number], number> = {
  vocab_size: 1 << 20,
  hidden_size: 8192,
  intermediate_size: 32768,
  num_hidden_layers: 64,
  num_attention_heads: 128,
  num_key_value_heads: 128,
  max_position_embeddings: 1 << 20,
};
const MAX_HEAD_DIM = 1024;

/** Validate a parsed config.json; `source` names the file in error messages. Unknown extra fields are ignored. */
export function parseLlamaConfig(raw: unknown, source = 'config.json'): LlamaConfig {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new ConfigError(`${source}: expected a JSON object with Llama's config fields`);
  }
  const o = raw as Record<string, unknown>;
  const family = familyOf(o, source);
  for (const [field, bad, why] of UNSUPPORTED) {
    if (bad(o[field], family)) {
      throw new ConfigError(
        `${source}: field '${field}' = ${JSON.stringify(o[field])?.slice(0, 40)} is not supported: ${why}`,
      );
    }
  }
  const cfg: Partial<LlamaConfig> = {};
  for (const f of INTEGER_FIELDS) {
    let v = o[f];
    if (f === 'num_key_value_heads' && v === undefined) v = o.num_attention_heads; // Llama's own default
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) {
      throw new ConfigError(
        `${source}: field '${f}' must be a positive integer, got ${JSON.stringify(v)?.slice(0, 40)}`,
      );
    }
    if (v > LLAMA_BOUNDS[f]) {
      throw new ConfigError(`${source}: field '${f}' must be at most ${LLAMA_BOUNDS[f]}, got ${v}`);
    }
    cfg[f] = v;
  }
  const num = (f: 'rope_theta' | 'rms_norm_eps', dflt: number): number => {
    const v = o[f] ?? dflt;
    if (typeof v !== 'number' || !(v > 0)) {
      throw new ConfigError(
        `${source}: field '${f}' must be a positive number, got ${JSON.stringify(v)?.slice(0, 40)}`,
      );
    }
    return v;
  };
  cfg.rope_theta = num('rope_theta', 10000);
  cfg.rms_norm_eps = num('rms_norm_eps', 1e-6);
  const tie = o.tie_word_embeddings ?? false;
  if (typeof tie !== 'boolean') throw new ConfigError(`${source}: field 'tie_word_embeddings' must be true or false`);
  cfg.tie_word_embeddings = tie;
  // Qwen3Config's head_dim defaults to 128 whatever hidden_size / num_attention_heads is
  if (family === 'qwen3' && (o.head_dim === undefined || o.head_dim === null)) cfg.head_dim = 128;
  if (o.head_dim !== undefined && o.head_dim !== null) {
    if (
      typeof o.head_dim !== 'number' ||
      !Number.isInteger(o.head_dim) ||
      o.head_dim < 2 ||
      o.head_dim > MAX_HEAD_DIM
    ) {
      throw new ConfigError(
        `${source}: field 'head_dim' must be an integer from 2 to ${MAX_HEAD_DIM}, got ${JSON.stringify(o.head_dim)?.slice(0, 40)}`,
      );
    }
    cfg.head_dim = o.head_dim;
  }
  if (family !== 'llama') cfg.model_type = family;
  const scaling = ropeScalingOf(o.rope_scaling, source);
  if (scaling) cfg.rope_scaling = scaling;
  const c = cfg as LlamaConfig;
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    throw new ConfigError(
      `${source}: num_attention_heads (${c.num_attention_heads}) must be a multiple of num_key_value_heads (${c.num_key_value_heads})`,
    );
  }
  if (c.head_dim === undefined && c.hidden_size % c.num_attention_heads !== 0) {
    throw new ConfigError(
      `${source}: hidden_size (${c.hidden_size}) must be divisible by num_attention_heads (${c.num_attention_heads}), or set head_dim`,
    );
  }
  if (headDim(c) % 2 !== 0) {
    throw new ConfigError(`${source}: the head dimension (${headDim(c)}) must be even for rotary embeddings`);
  }
  return c;
}

/** The family from `model_type` and `architectures[0]` (either may be absent; both present must agree). */
function familyOf(o: Record<string, unknown>, source: string): ModelFamily {
  const families = Object.keys(MODEL_FAMILIES) as ModelFamily[];
  const type = o.model_type;
  if (type !== undefined && (typeof type !== 'string' || !families.includes(type as ModelFamily))) {
    throw new ConfigError(
      `${source}: field 'model_type' = ${JSON.stringify(type)?.slice(0, 40)} is not supported: only ${families.map((f) => `'${f}'`).join(', ')} are implemented`,
    );
  }
  const arch = Array.isArray(o.architectures) ? (o.architectures[0] as unknown) : undefined;
  if (arch === undefined) return (type as ModelFamily | undefined) ?? 'llama';
  const fromArch = families.find((f) => MODEL_FAMILIES[f] === arch);
  if (!fromArch) {
    throw new ConfigError(
      `${source}: field 'architectures' = ${JSON.stringify(o.architectures)?.slice(0, 60)} is not supported: only ${Object.values(MODEL_FAMILIES).join(', ')} are implemented`,
    );
  }
  if (type !== undefined && type !== fromArch) {
    throw new ConfigError(
      `${source}: field 'model_type' = '${type}' disagrees with architectures[0] = '${MODEL_FAMILIES[fromArch]}' (expected '${fromArch}')`,
    );
  }
  return fromArch;
}

/** `rope_scaling`: absent, null or rope_type 'default' is plain RoPE; 'llama3' is checked; any other type refused. */
function ropeScalingOf(raw: unknown, source: string): Llama3RopeScaling | undefined {
  if (raw === undefined || raw === null) return undefined;
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new ConfigError(
      `${source}: field 'rope_scaling' must be an object or null, got ${JSON.stringify(raw)?.slice(0, 40)}`,
    );
  }
  const o = raw as Record<string, unknown>;
  // transformers reads 'rope_type' and, from older configs, 'type'
  const type = o.rope_type ?? o.type;
  if (type === 'default') return undefined;
  if (type !== 'llama3') {
    throw new ConfigError(
      `${source}: field 'rope_scaling' has rope_type ${JSON.stringify(type)?.slice(0, 40)}, which is not supported: only 'llama3' RoPE scaling is implemented`,
    );
  }
  const parsed = llama3ScalingSchema.safeParse(o);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(
      `${source}: field 'rope_scaling.${issue.path.join('.')}' of the llama3 RoPE scaling: ${issue.message}`,
    );
  }
  const p = parsed.data;
  if (!(p.high_freq_factor > p.low_freq_factor)) {
    throw new ConfigError(
      `${source}: field 'rope_scaling.high_freq_factor' (${p.high_freq_factor}) must be greater than low_freq_factor (${p.low_freq_factor})`,
    );
  }
  return { rope_type: 'llama3', ...p };
}

export function family(c: LlamaConfig): ModelFamily {
  return c.model_type ?? 'llama';
}

/** Qwen2's q, k and v projections carry biases (o_proj has none). */
export function hasQkvBias(c: LlamaConfig): boolean {
  return family(c) === 'qwen2';
}

/** Qwen3 RMS-normalises each head of q and k (over head_dim) before RoPE. */
export function hasQkNorm(c: LlamaConfig): boolean {
  return family(c) === 'qwen3';
}

/**
 * RoPE's inverse frequencies θ^(-2i/hd), i < hd/2, in float64, with Llama 3's scaling when the config has it
 * (transformers' modeling_rope_utils.py `_compute_llama3_parameters`): wavelengths longer than the original
 * context / low_freq_factor are divided by `factor`, shorter than original / high_freq_factor kept, and those between
 * interpolated smoothly; the attention factor stays 1.
 */
export function ropeInverseFrequencies(c: LlamaConfig): Float64Array {
  const hd = headDim(c);
  const half = hd / 2;
  const inv = new Float64Array(half);
  for (let i = 0; i < half; i++) inv[i] = 1 / Math.pow(c.rope_theta, (2 * i) / hd);
  const s = c.rope_scaling;
  if (!s) return inv;
  const old = s.original_max_position_embeddings;
  const lowWavelen = old / s.low_freq_factor;
  const highWavelen = old / s.high_freq_factor;
  for (let i = 0; i < half; i++) {
    const f = inv[i]!;
    const wavelen = (2 * Math.PI) / f;
    if (wavelen > lowWavelen) inv[i] = f / s.factor;
    else if (wavelen >= highWavelen) {
      const smooth = (old / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      inv[i] = ((1 - smooth) * f) / s.factor + smooth * f;
    }
  }
  return inv;
}

export function headDim(c: LlamaConfig): number {
  return c.head_dim ?? c.hidden_size / c.num_attention_heads;
}

/** The config.json we write: Llama's fields plus the ones Hugging Face needs to pick the class. */
export function toHfConfigJson(c: LlamaConfig): Record<string, unknown> {
  const f = family(c);
  const { model_type: _type, rope_scaling: scaling, ...sizes } = c;
  return {
    architectures: [MODEL_FAMILIES[f]],
    model_type: f,
    hidden_act: 'silu',
    ...(f !== 'qwen2' && { attention_bias: false }),
    ...(f === 'llama' && { mlp_bias: false }),
    ...(f !== 'llama' && { use_sliding_window: false }),
    torch_dtype: 'float32',
    ...sizes,
    head_dim: headDim(c),
    ...(scaling && { rope_scaling: scaling }),
  };
}

export function parameterCount(c: LlamaConfig): number {
  const hd = headDim(c);
  const d = c.hidden_size;
  const attn =
    d * hd * (c.num_attention_heads * 2 + c.num_key_value_heads * 2) +
    (hasQkvBias(c) ? hd * (c.num_attention_heads + 2 * c.num_key_value_heads) : 0) +
    (hasQkNorm(c) ? 2 * hd : 0);
  const mlp = 3 * d * c.intermediate_size;
  const perLayer = attn + mlp + 2 * d;
  return c.vocab_size * d * (c.tie_word_embeddings ? 1 : 2) + c.num_hidden_layers * perLayer + d;
}

/** Named sizes used by presets, tests and the benchmark. Parameter counts are for vocab 512 unless stated. */
export const MODEL_SIZES = {
  /** ~20k parameters at vocab 16: demos and tests that must train in seconds. */
  micro: {
    hidden_size: 32,
    intermediate_size: 64,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
  },
  /** ~0.5M parameters. */
  tiny: {
    hidden_size: 128,
    intermediate_size: 344,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
  },
  /** ~10M parameters. */
  small: {
    hidden_size: 384,
    intermediate_size: 1024,
    num_hidden_layers: 6,
    num_attention_heads: 6,
    num_key_value_heads: 2,
  },
  /** ~50M parameters. */
  medium: {
    hidden_size: 640,
    intermediate_size: 1728,
    num_hidden_layers: 11,
    num_attention_heads: 10,
    num_key_value_heads: 2,
  },
} as const;

export type ModelSize = keyof typeof MODEL_SIZES;

export function sizedConfig(size: ModelSize, over: Partial<LlamaConfig> = {}): LlamaConfig {
  return parseLlamaConfig({
    vocab_size: 512,
    max_position_embeddings: 1024,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: false,
    ...MODEL_SIZES[size],
    ...over,
  });
}
