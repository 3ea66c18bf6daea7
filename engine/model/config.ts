import { UserError } from '../base/userError';

/**
 * The policy's architecture, in Hugging Face Llama's own field names (`config.json`), so a checkpoint written here
 * loads in other Llama implementations and a tiny Llama checkpoint made elsewhere loads here.
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
}

/** Fields a Llama config.json may carry that change the computation and that this implementation does not support. */
const UNSUPPORTED: Array<[string, (v: unknown) => boolean, string]> = [
  ['hidden_act', (v) => v !== undefined && v !== 'silu', "only 'silu' (SwiGLU) is implemented"],
  ['attention_bias', (v) => v === true, 'attention projections with bias are not implemented'],
  ['mlp_bias', (v) => v === true, 'MLP projections with bias are not implemented'],
  ['rope_scaling', (v) => v !== undefined && v !== null, 'RoPE scaling variants are not implemented'],
  ['model_type', (v) => v !== undefined && v !== 'llama', "only model_type 'llama' is implemented"],
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
  for (const [field, bad, why] of UNSUPPORTED) {
    if (bad(o[field])) {
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

export function headDim(c: LlamaConfig): number {
  return c.head_dim ?? c.hidden_size / c.num_attention_heads;
}

/** The config.json we write: Llama's fields plus the ones Hugging Face needs to pick the class. */
export function toHfConfigJson(c: LlamaConfig): Record<string, unknown> {
  return {
    architectures: ['LlamaForCausalLM'],
    model_type: 'llama',
    hidden_act: 'silu',
    attention_bias: false,
    mlp_bias: false,
    torch_dtype: 'float32',
    ...c,
    head_dim: headDim(c),
  };
}

export function parameterCount(c: LlamaConfig): number {
  const hd = headDim(c);
  const d = c.hidden_size;
  const attn = d * hd * (c.num_attention_heads * 2 + c.num_key_value_heads * 2);
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
