/**
 * A llama / qwen2 / qwen3 GGUF file seen as a Hugging Face checkpoint (issue 30, item 3): the model config
 * (LlamaConfig, config.ts) from the file's metadata, and every tensor under its HF name in HF's layout, as the HF
 * loader (hfWeights.ts `modelFromHf`) consumes them.
 *
 * Names follow llama.cpp's tensor map (gguf-py tensor_mapping.py): token_embd → model.embed_tokens, blk.N.attn_q →
 * model.layers.N.self_attn.q_proj, …, output_norm → model.norm, output → lm_head (absent: tied embeddings). A ggml
 * shape is HF's reversed (dims[0] is a row's length) and the data are row-major either way, so no transpose is needed.
 * For the llama architecture only, llama.cpp's converter (convert_hf_to_gguf.py `LlamaModel.permute`) reorders the
 * rows of q_proj and k_proj within each head from HF's rotate-half order (i·hd/2 + j) to interleaved pairs (2j + i),
 * because ggml's RoPE rotates adjacent values; `unpermuteRows` undoes it. qwen2 and qwen3 are converted unpermuted.
 *
 * Everything is checked before any tensor data are read (`planGgufToHf`): the architecture, each required metadata
 * field, RoPE scaling and mixtures of experts (refused: not implemented), every tensor's name, shape and type.
 */
import type { LlamaConfig } from '../../config';
import { headDim, MODEL_FAMILIES, parseLlamaConfig, type ModelFamily } from '../../config';
import { expectedHfShapes, type HostTensor } from '../hfWeights';
import { GgufFile, withGgufFile } from './ggufFile';
import { GgufError, brief, isDequantised, type GgufTensorInfo, type GgufValue } from './ggufTypes';

/** GGUF's `general.architecture` names are the model families' own (llama, qwen2, qwen3), each an HF class. */
export const GGUF_ARCHITECTURES = MODEL_FAMILIES;
export type GgufArchitecture = ModelFamily;

export interface GgufHfTensor {
  ggufName: string;
  hfName: string;
  /** HF's shape: the ggml dims reversed. */
  shape: number[];
  info: GgufTensorInfo;
  /** Heads whose q/k rows llama.cpp permuted (llama only), else 0. */
  unpermuteHeads: number;
}

export interface GgufHfPlan {
  architecture: GgufArchitecture;
  hfArchitecture: (typeof GGUF_ARCHITECTURES)[GgufArchitecture];
  config: LlamaConfig;
  tensors: GgufHfTensor[];
}

/** Per-layer GGUF suffix → HF suffix (after `model.layers.N.`). */
const LAYER_NAMES: Record<string, string> = {
  'attn_norm.weight': 'input_layernorm.weight',
  'attn_q.weight': 'self_attn.q_proj.weight',
  'attn_k.weight': 'self_attn.k_proj.weight',
  'attn_v.weight': 'self_attn.v_proj.weight',
  'attn_output.weight': 'self_attn.o_proj.weight',
  'attn_q.bias': 'self_attn.q_proj.bias',
  'attn_k.bias': 'self_attn.k_proj.bias',
  'attn_v.bias': 'self_attn.v_proj.bias',
  'attn_q_norm.weight': 'self_attn.q_norm.weight',
  'attn_k_norm.weight': 'self_attn.k_norm.weight',
  'ffn_norm.weight': 'post_attention_layernorm.weight',
  'ffn_gate.weight': 'mlp.gate_proj.weight',
  'ffn_up.weight': 'mlp.up_proj.weight',
  'ffn_down.weight': 'mlp.down_proj.weight',
};
const TOP_NAMES: Record<string, string> = {
  'token_embd.weight': 'model.embed_tokens.weight',
  'output_norm.weight': 'model.norm.weight',
  'output.weight': 'lm_head.weight',
};

/** The HF name of a GGUF tensor name, or null if llama.cpp's llama/qwen2/qwen3 graphs have no such tensor. */
export function hfNameOf(ggufName: string): string | null {
  // hasOwn: a crafted name such as '__proto__' must not find Object.prototype
  if (Object.hasOwn(TOP_NAMES, ggufName)) return TOP_NAMES[ggufName]!;
  const m = /^blk\.(0|[1-9]\d{0,5})\.(.+)$/.exec(ggufName);
  if (!m || !Object.hasOwn(LAYER_NAMES, m[2]!)) return null;
  return `model.layers.${m[1]}.${LAYER_NAMES[m[2]!]}`;
}

/** Metadata readers: each refusal names the file and the key. */
class Meta {
  constructor(
    private readonly m: Map<string, GgufValue>,
    private readonly source: string,
  ) {}
  fail(key: string, detail: string): never {
    throw new GgufError(`${this.source}: metadata '${key}' ${detail}`);
  }
  has(key: string): boolean {
    return this.m.has(key);
  }
  string(key: string): string | undefined {
    const v = this.m.get(key);
    if (v !== undefined && typeof v !== 'string') this.fail(key, `must be a string, got ${brief(v)}`);
    return v;
  }
  int(key: string, required: boolean): number | undefined {
    const v = this.m.get(key);
    if (v === undefined) {
      if (required) this.fail(key, 'is missing; the file lacks a field the model needs (re-convert it with llama.cpp)');
      return undefined;
    }
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < 0) {
      this.fail(key, `must be a non-negative integer, got ${brief(v)}`);
    }
    return n;
  }
  float(key: string, required: boolean): number | undefined {
    const v = this.m.get(key);
    if (v === undefined) {
      if (required) this.fail(key, 'is missing; the file lacks a field the model needs (re-convert it with llama.cpp)');
      return undefined;
    }
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(key, `must be a finite number, got ${brief(v)}`);
    return v;
  }
}

function architectureOf(meta: Meta): GgufArchitecture {
  const arch = meta.string('general.architecture');
  if (arch === undefined) meta.fail('general.architecture', 'is missing; is this a model file?');
  if (!Object.hasOwn(GGUF_ARCHITECTURES, arch)) {
    meta.fail(
      'general.architecture',
      `is ${brief(arch)}, which is not supported (supported: ${Object.keys(GGUF_ARCHITECTURES).join(', ')})`,
    );
  }
  return arch as GgufArchitecture;
}

/** Features of the architectures that LlamaModel does not compute: refused rather than silently ignored. */
function refuseUnsupported(meta: Meta, arch: string, file: GgufFile): void {
  const scaling = meta.string(`${arch}.rope.scaling.type`);
  if (scaling !== undefined && scaling !== 'none') {
    meta.fail(`${arch}.rope.scaling.type`, `is ${brief(scaling)}: RoPE scaling is not implemented`);
  }
  const factor = meta.float(`${arch}.rope.scaling.factor`, false);
  if (scaling === undefined && factor !== undefined && factor !== 0 && factor !== 1) {
    meta.fail(`${arch}.rope.scaling.factor`, `is ${factor}: RoPE scaling is not implemented`);
  }
  if (file.tensor('rope_freqs.weight')) {
    throw new GgufError(
      `${file.path}: tensor 'rope_freqs.weight' (Llama 3.1-style RoPE frequency scaling) is not implemented`,
    );
  }
  const experts = meta.int(`${arch}.expert_count`, false);
  if (experts !== undefined && experts > 0) {
    meta.fail(`${arch}.expert_count`, `is ${experts}: mixtures of experts are not implemented`);
  }
}

function configOf(meta: Meta, arch: GgufArchitecture, file: GgufFile): LlamaConfig {
  refuseUnsupported(meta, arch, file);
  const embd = file.tensor('token_embd.weight');
  if (!embd || embd.dims.length !== 2) {
    throw new GgufError(`${file.path}: tensor 'token_embd.weight' is ${embd ? 'not 2-D' : 'missing'}`);
  }
  const vocab = embd.dims[1]!;
  const declaredVocab = meta.int(`${arch}.vocab_size`, false);
  if (declaredVocab !== undefined && declaredVocab !== vocab) {
    meta.fail(`${arch}.vocab_size`, `is ${declaredVocab} but token_embd.weight has ${vocab} rows`);
  }
  const heads = meta.int(`${arch}.attention.head_count`, true)!;
  const hidden = meta.int(`${arch}.embedding_length`, true)!;
  const keyLength = meta.int(`${arch}.attention.key_length`, false);
  const valueLength = meta.int(`${arch}.attention.value_length`, false);
  if (keyLength !== undefined && valueLength !== undefined && keyLength !== valueLength) {
    meta.fail(`${arch}.attention.value_length`, `is ${valueLength}, unlike key_length ${keyLength}: not implemented`);
  }
  const raw: Record<string, unknown> = {
    vocab_size: vocab,
    hidden_size: hidden,
    intermediate_size: meta.int(`${arch}.feed_forward_length`, true),
    num_hidden_layers: meta.int(`${arch}.block_count`, true),
    num_attention_heads: heads,
    // llama.cpp's own defaults where a field is absent: as many kv heads as heads, RoPE base 10000
    num_key_value_heads: meta.int(`${arch}.attention.head_count_kv`, false) ?? heads,
    max_position_embeddings: meta.int(`${arch}.context_length`, true),
    rope_theta: meta.float(`${arch}.rope.freq_base`, false) ?? 10000,
    rms_norm_eps: meta.float(`${arch}.attention.layer_norm_rms_epsilon`, true),
    tie_word_embeddings: file.tensor('output.weight') === undefined,
  };
  if (keyLength !== undefined && keyLength * heads !== hidden) raw.head_dim = keyLength;
  // the family decides the q/k/v biases (qwen2) and q/k norms (qwen3); Qwen3's head_dim default is not hidden/heads
  if (arch !== 'llama') raw.model_type = arch;
  if (arch === 'qwen3') raw.head_dim = keyLength ?? hidden / heads;
  const config = parseLlamaConfig(raw, `${file.path} (its metadata)`);
  const ropeDims = meta.int(`${arch}.rope.dimension_count`, false);
  if (ropeDims !== undefined && ropeDims !== headDim(config)) {
    meta.fail(
      `${arch}.rope.dimension_count`,
      `is ${ropeDims}, not the head dimension ${headDim(config)}: partial rotary embeddings are not implemented`,
    );
  }
  return config;
}

/** HF names and shapes the architecture needs beyond Llama's (qwen2: q/k/v biases; qwen3: q/k norms). */
function expectedShapes(c: LlamaConfig, arch: GgufArchitecture): Map<string, number[]> {
  const m = expectedHfShapes(c);
  const hd = headDim(c);
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.self_attn`;
    if (arch === 'qwen2') {
      m.set(`${p}.q_proj.bias`, [c.num_attention_heads * hd]);
      m.set(`${p}.k_proj.bias`, [c.num_key_value_heads * hd]);
      m.set(`${p}.v_proj.bias`, [c.num_key_value_heads * hd]);
    }
    if (arch === 'qwen3') {
      m.set(`${p}.q_norm.weight`, [hd]);
      m.set(`${p}.k_norm.weight`, [hd]);
    }
  }
  return m;
}

function planTensors(file: GgufFile, c: LlamaConfig, arch: GgufArchitecture): GgufHfTensor[] {
  const expected = expectedShapes(c, arch);
  const out: GgufHfTensor[] = [];
  for (const info of file.tensors) {
    const what = `${file.path}: tensor '${info.name}'`;
    const hfName = hfNameOf(info.name);
    if (hfName === null || !expected.has(hfName)) {
      throw new GgufError(`${what} is not part of a ${arch} model of this config (an unsupported variant?)`);
    }
    const want = expected.get(hfName)!;
    const shape = [...info.dims].reverse();
    if (shape.length !== want.length || shape.some((s, i) => s !== want[i])) {
      throw new GgufError(`${what} has HF shape [${shape}], but the metadata's config needs [${want}]`);
    }
    if (!isDequantised(info.type.name)) {
      throw new GgufError(
        `${what} has tensor type ${info.type.name}, which is not supported (supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K)`,
      );
    }
    const qk = arch === 'llama' && /\.self_attn\.[qk]_proj\.weight$/.test(hfName);
    const heads = hfName.includes('.q_proj.') ? c.num_attention_heads : c.num_key_value_heads;
    out.push({ ggufName: info.name, hfName, shape, info, unpermuteHeads: qk ? heads : 0 });
    expected.delete(hfName);
  }
  for (const [name, shape] of expected) {
    throw new GgufError(`${file.path}: no tensor for HF '${name}' (shape [${shape}]); the file is incomplete`);
  }
  return out;
}

/** Checks that `file` is a model this engine computes and says how each tensor maps; reads no tensor data. */
export function planGgufToHf(file: GgufFile): GgufHfPlan {
  const meta = new Meta(file.metadata, file.path);
  const architecture = architectureOf(meta);
  const config = configOf(meta, architecture, file);
  return {
    architecture,
    hfArchitecture: GGUF_ARCHITECTURES[architecture],
    config,
    tensors: planTensors(file, config, architecture),
  };
}

/**
 * Undoes llama.cpp's row permutation of a [rows, cols] q or k projection with `heads` heads: HF row h·hd + i·hd/2 + j
 * was written as row h·hd + 2j + i (i ∈ {0, 1}, j < hd/2).
 */
export function unpermuteRows(data: Float32Array, rows: number, cols: number, heads: number): Float32Array {
  const hd = rows / heads;
  const half = hd / 2;
  if (!Number.isInteger(half) || data.length !== rows * cols) {
    throw new GgufError(`cannot unpermute ${rows} rows of ${cols} into ${heads} heads of an even size`);
  }
  const out = new Float32Array(data.length);
  for (let h = 0; h < heads; h++) {
    for (let i = 0; i < 2; i++) {
      for (let j = 0; j < half; j++) {
        const from = (h * hd + 2 * j + i) * cols;
        out.set(data.subarray(from, from + cols), (h * hd + i * half + j) * cols);
      }
    }
  }
  return out;
}

/** One planned tensor, read, dequantised and in HF's layout. */
export async function readHfTensor(file: GgufFile, t: GgufHfTensor): Promise<HostTensor> {
  const data = await file.readFloat32(t.ggufName);
  if (t.unpermuteHeads === 0) return { shape: t.shape, data };
  const [rows, cols] = t.shape as [number, number];
  return { shape: t.shape, data: unpermuteRows(data, rows, cols, t.unpermuteHeads) };
}

/** The planned tensors one at a time, so a consumer can convert and drop each before the next is read. */
export async function* hfTensors(file: GgufFile, plan: GgufHfPlan): AsyncGenerator<[string, HostTensor]> {
  for (const t of plan.tensors) yield [t.hfName, await readHfTensor(file, t)];
}

/** The whole model as HF-named float32 tensors, with its config: what `modelFromHf` takes. */
export async function readGgufAsHf(path: string): Promise<{ plan: GgufHfPlan; tensors: Record<string, HostTensor> }> {
  return withGgufFile(path, async (file) => {
    const plan = planGgufToHf(file);
    const tensors: Record<string, HostTensor> = {};
    for await (const [name, t] of hfTensors(file, plan)) tensors[name] = t;
    return { plan, tensors };
  });
}
