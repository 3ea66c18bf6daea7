/**
 * What a model file is, read from its headers before any weight is loaded (`mars-lab model info`, issue 30 item 2):
 * format, architecture, parameters, tensor types, context, vocabulary, tokenizer kind, chat template and its roles, and
 * whether this engine computes it (and if not, the one line saying why). No TensorFlow.js here; the memory figures
 * are the command's (engine/training/memoryBudget.ts, a floor above).
 *
 *   .gguf file          the GGUF header (formats/gguf/), its tokenizer metadata and tokenizer.chat_template;
 *   HF / mars-lab folder config.json, the safetensors headers (model.safetensors, or the shards its index names),
 *                        tokenizer.json (an HF tokenizer) or mars-lab-tokenizer.json (mars-lab's own), and the template.
 */
import { open, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { UserError } from '../base/userError';
import { parseLlamaConfig, parameterCount, type LlamaConfig } from './config';
import { checkpointTokenizerFile, CONFIG_FILE, WEIGHTS_FILE } from './formats/checkpointFiles';
import { withGgufFile } from './formats/gguf/ggufFile';
import { planGgufToHf } from './formats/gguf/ggufToHf';
import { MAX_HEADER_BYTES } from './formats/safetensors';
import { tokenizerFilesFromGguf } from './tokenizers/hf/ggufTokenizer';
import { readHfTokenizerFiles } from './tokenizers/hf/hfFolder';
import type { HfTokenizerConfig } from './tokenizers/hf/hfTokenizer';
import { loadChatTemplate, templateTokens } from './chat/templateSource';

export interface ModelInfo {
  path: string;
  format: 'gguf' | 'hf-folder' | 'mars-lab-checkpoint';
  /** The file's own architecture name (GGUF general.architecture, or config.json's architectures[0] / model_type). */
  architecture: string;
  name: string | null;
  parameters: number;
  /** Tensor type → how many tensors have it. */
  tensorTypes: Record<string, number>;
  context: number | null;
  vocabulary: number | null;
  tokenizer: { kind: string; detail: string | null } | null;
  chatTemplate: { origin: string; roles: string[]; generationPrompt: boolean } | null;
  /** The licence the files state (GGUF general.license; a folder's README.md front matter), null when none says. */
  license: string | null;
  /** The architecture as this engine computes it, or why it cannot. */
  config: LlamaConfig | null;
  unsupported: string | null;
}

const MAX_JSON_BYTES = 16 * 2 ** 20;

function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0] ?? '';
}

async function readJson(file: string): Promise<unknown> {
  const st = await stat(file);
  if (!st.isFile()) throw new UserError(`${file}: is not a regular file`);
  if (st.size > MAX_JSON_BYTES) {
    throw new UserError(`${file}: is ${st.size} bytes, more than a model's JSON file may be`);
  }
  try {
    return JSON.parse(await readFile(file, 'utf8'));
  } catch {
    throw new UserError(`${file}: is not valid JSON`);
  }
}

async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}

const headerEntry = z.looseObject({ dtype: z.string(), shape: z.array(z.number().int().min(0)) });

/** The dtypes and element count of a safetensors file, from its header alone. */
async function safetensorsHeader(file: string): Promise<{ types: Record<string, number>; elements: number }> {
  const fh = await open(file, 'r');
  try {
    const st = await fh.stat();
    const lengthBytes = Buffer.alloc(8);
    await fh.read(lengthBytes, 0, 8, 0);
    const n = Number(lengthBytes.readBigUInt64LE(0));
    if (st.size < 8 || n > MAX_HEADER_BYTES || 8 + n > st.size) {
      throw new UserError(`${file}: its header length (${n} bytes) does not fit the file (${st.size} bytes)`);
    }
    const header = Buffer.alloc(n);
    await fh.read(header, 0, n, 8);
    let raw: unknown;
    try {
      raw = JSON.parse(header.toString('utf8'));
    } catch {
      throw new UserError(`${file}: its header is not valid JSON`);
    }
    const types: Record<string, number> = {};
    let elements = 0;
    for (const [name, entry] of Object.entries(raw as Record<string, unknown>)) {
      if (name === '__metadata__') continue;
      const e = headerEntry.safeParse(entry);
      if (!e.success) {
        throw new UserError(`${file}: tensor entry ${JSON.stringify(name.slice(0, 60))} has no dtype and shape`);
      }
      types[e.data.dtype] = (types[e.data.dtype] ?? 0) + 1;
      elements += e.data.shape.reduce((a, b) => a * b, 1);
    }
    return { types, elements };
  } finally {
    await fh.close();
  }
}

const indexSchema = z.looseObject({ weight_map: z.record(z.string(), z.string()) });
const hfConfigSchema = z.looseObject({
  architectures: z.array(z.string()).optional(),
  model_type: z.string().optional(),
  max_position_embeddings: z.number().optional(),
  vocab_size: z.number().optional(),
  _name_or_path: z.string().optional(),
});

async function chatTemplateOf(where: string, config: HfTokenizerConfig | null): Promise<ModelInfo['chatTemplate']> {
  const loaded = await loadChatTemplate(where, templateTokens(config ?? {}));
  if (loaded === null) return null;
  return { origin: loaded.template.origin, roles: loaded.probe.roles, generationPrompt: loaded.probe.generationPrompt };
}

async function describeGguf(file: string): Promise<ModelInfo> {
  const facts = await withGgufFile(file, async (f) => {
    const meta = f.metadata;
    const arch = meta.get('general.architecture');
    const types: Record<string, number> = {};
    let elements = 0;
    for (const t of f.tensors) {
      types[t.type.name] = (types[t.type.name] ?? 0) + 1;
      elements += t.elements;
    }
    let config: LlamaConfig | null = null;
    let unsupported: string | null = null;
    try {
      config = planGgufToHf(f).config;
    } catch (err) {
      unsupported = firstLine(err);
    }
    let tokenizerConfig: HfTokenizerConfig | null = null;
    let tokenizer: ModelInfo['tokenizer'] = null;
    let vocabulary: number | null = null;
    const model = meta.get('tokenizer.ggml.model');
    if (typeof model === 'string') {
      const pre = meta.get('tokenizer.ggml.pre');
      tokenizer = { kind: `GGUF ${model}`, detail: typeof pre === 'string' ? `pre-tokenizer ${pre}` : null };
      try {
        const files = tokenizerFilesFromGguf(meta, file);
        tokenizerConfig = files.config;
        const vocab = (files.tokenizer.model as { vocab: Record<string, number> }).vocab;
        vocabulary = Object.keys(vocab).length;
      } catch (err) {
        tokenizer.detail = `not usable: ${firstLine(err)}`;
      }
    }
    const name = meta.get('general.name');
    const license = meta.get('general.license');
    const context = typeof arch === 'string' ? meta.get(`${arch}.context_length`) : undefined;
    return {
      architecture: typeof arch === 'string' ? arch : '(absent)',
      name: typeof name === 'string' ? name : null,
      license: typeof license === 'string' ? license : null,
      parameters: elements,
      tensorTypes: types,
      context: typeof context === 'number' ? context : (config?.max_position_embeddings ?? null),
      vocabulary: vocabulary ?? config?.vocab_size ?? null,
      tokenizer,
      tokenizerConfig,
      config,
      unsupported,
    };
  });
  const { tokenizerConfig, ...rest } = facts;
  return { path: file, format: 'gguf', ...rest, chatTemplate: await chatTemplateOf(file, tokenizerConfig) };
}

/** A model card's licence: `license:` in README.md's YAML front matter (the hub's convention). */
async function readmeLicense(dir: string): Promise<string | null> {
  const file = path.join(dir, 'README.md');
  if (!(await exists(file))) return null;
  const head = (await readFile(file, 'utf8')).slice(0, 8192);
  const front = /^---\r?\n([\s\S]*?)\r?\n---/.exec(head)?.[1];
  return front ? (/^license:\s*["']?([^"'\s]+)/m.exec(front)?.[1] ?? null) : null;
}

async function describeFolder(dir: string): Promise<ModelInfo> {
  const configFile = path.join(dir, CONFIG_FILE);
  if (!(await exists(configFile))) {
    throw new UserError(
      `${dir}: has no ${CONFIG_FILE}; give an HF model folder, a mars-lab checkpoint or a .gguf file`,
    );
  }
  const raw = await readJson(configFile);
  const hf = hfConfigSchema.safeParse(raw);
  if (!hf.success) throw new UserError(`${configFile}: is not a model's config.json (${hf.error.issues[0]!.message})`);
  let config: LlamaConfig | null = null;
  let unsupported: string | null = null;
  try {
    config = parseLlamaConfig(raw, configFile);
  } catch (err) {
    unsupported = firstLine(err);
  }
  // Weights: one file, or the shards a safetensors index names.
  const indexFile = path.join(dir, 'model.safetensors.index.json');
  let shards = [path.join(dir, WEIGHTS_FILE)];
  if (await exists(indexFile)) {
    const index = indexSchema.safeParse(await readJson(indexFile));
    if (!index.success) throw new UserError(`${indexFile}: has no weight_map of tensor → shard file`);
    shards = [...new Set(Object.values(index.data.weight_map))].map((s) => path.join(dir, path.basename(s)));
  }
  const tensorTypes: Record<string, number> = {};
  let parameters = 0;
  for (const shard of shards) {
    if (!(await exists(shard))) throw new UserError(`${shard}: is missing (the model's weights)`);
    const h = await safetensorsHeader(shard);
    parameters += h.elements;
    for (const [t, n] of Object.entries(h.types)) tensorTypes[t] = (tensorTypes[t] ?? 0) + n;
  }
  // mars-lab's own tokenizer file, or an older checkpoint's tokenizer.json in mars-lab's format (the shipped bases').
  const ownFile = checkpointTokenizerFile(dir);
  const ownTokenizer = await exists(ownFile);
  let tokenizer: ModelInfo['tokenizer'] = null;
  let tokenizerConfig: HfTokenizerConfig | null = null;
  let vocabulary = hf.data.vocab_size ?? config?.vocab_size ?? null;
  if (!ownTokenizer && (await exists(path.join(dir, 'tokenizer.json')))) {
    const files = await readHfTokenizerFiles(dir);
    tokenizerConfig = files.config;
    const model = files.tokenizer.model as { type?: string; vocab?: unknown };
    const pre = files.tokenizer.pre_tokenizer as { type?: string } | null | undefined;
    tokenizer = { kind: `HF ${model.type ?? 'BPE'}`, detail: pre?.type ? `pre-tokenizer ${pre.type}` : null };
    // The vocabulary and the added tokens, which HF's len(tokenizer) also counts.
    if (model.vocab && typeof model.vocab === 'object' && !Array.isArray(model.vocab)) {
      const ids = new Set(Object.values(model.vocab as Record<string, number>));
      for (const t of (files.tokenizer.added_tokens as Array<{ id: number }> | undefined) ?? []) ids.add(t.id);
      vocabulary = ids.size;
    }
  } else if (ownTokenizer) {
    tokenizer = { kind: 'mars-lab', detail: path.basename(ownFile) };
  }
  return {
    path: dir,
    format: ownTokenizer || (await exists(path.join(dir, 'trainer_state.json'))) ? 'mars-lab-checkpoint' : 'hf-folder',
    architecture: hf.data.architectures?.[0] ?? hf.data.model_type ?? '(not stated)',
    name: hf.data._name_or_path ?? null,
    license: await readmeLicense(dir),
    parameters: config && parameters === 0 ? parameterCount(config) : parameters,
    tensorTypes,
    context: hf.data.max_position_embeddings ?? null,
    vocabulary,
    tokenizer,
    chatTemplate: await chatTemplateOf(dir, tokenizerConfig),
    config,
    unsupported,
  };
}

/** Describes the model at `where` (a .gguf file or a model folder) from its headers. */
export async function describeModel(where: string): Promise<ModelInfo> {
  let st;
  try {
    st = await stat(where);
  } catch {
    throw new UserError(
      `${where}: no such file or folder (give an HF model folder, a .gguf file or a name model fetch knows)`,
    );
  }
  if (st.isDirectory()) return describeFolder(where);
  if (where.toLowerCase().endsWith('.gguf')) return describeGguf(where);
  throw new UserError(`${where}: is neither a .gguf file nor a model folder`);
}
