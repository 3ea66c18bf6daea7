/**
 * LoRA adapters in PEFT's folder layout (issue 30, item 7), so PEFT, vLLM and llama.cpp's convert_lora_to_gguf.py read
 * what mars-lab trains, and mars-lab reads adapters trained elsewhere:
 *
 *   adapter_config.json        peft_type LORA, r, lora_alpha, lora_dropout, target_modules, base_model_name_or_path, …
 *   adapter_model.safetensors  base_model.model.model.layers.L.{self_attn|mlp}.<module>.lora_A.weight [r, in]
 *                              and .lora_B.weight [out, r] (PEFT's names with the adapter name dropped, as it saves)
 *
 * A and B are transposed on the way (lora/loraAdapters.ts keeps [in, r] and [r, out]); q_proj and k_proj are in HF's
 * row order, which llama.ts keeps (a GGUF's permuted rows are undone when it is read). What PEFT can express and this
 * cannot is refused in one line naming the field: DoRA, biases, fan_in_fan_out, per-layer ranks or alphas, layer
 * subsets, modules_to_save, a target that is not one of the seven projections. rsLoRA (alpha / √r) is read.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { readRegularJson } from '../../base/regularFile';
import { UserError } from '../../base/userError';
import type { LlamaConfig } from '../config';
import { encodeSafetensors, readSafetensorsFile } from '../formats/safetensors';
import {
  LORA_TARGET_NAMES,
  LORA_TARGETS,
  LoraAdapters,
  type LoraSpec,
  type LoraTarget,
  type LoraTensors,
} from './loraAdapters';

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';
const MAX_ADAPTER_CONFIG_BYTES = 1024 * 1024;

const ATTENTION: ReadonlySet<LoraTarget> = new Set(['q_proj', 'k_proj', 'v_proj', 'o_proj']);
const TARGET_BY_WEIGHT = new Map(Object.entries(LORA_TARGETS).map(([t, w]) => [w as string, t as LoraTarget]));

/** The PEFT name of adapter matrix `layers.L.<w>.A|B`. */
function peftName(name: string): string {
  const [, l, w, part] = /^layers\.(\d+)\.(\w+)\.([AB])$/.exec(name)!;
  const t = TARGET_BY_WEIGHT.get(w!)!;
  return `base_model.model.model.layers.${l}.${ATTENTION.has(t) ? 'self_attn' : 'mlp'}.${t}.lora_${part}.weight`;
}

const PEFT_KEY = /^base_model\.model\.model\.layers\.(\d+)\.(self_attn|mlp)\.(\w+)\.lora_(A|B)\.weight$/;

const empty = (what: string) =>
  z
    .unknown()
    .optional()
    .refine((v) => v === undefined || v === null || (typeof v === 'object' && Object.keys(v).length === 0), {
      error: `${what} is not supported (one rank and alpha for every layer and module)`,
    });
const absent = (what: string) =>
  z
    .unknown()
    .optional()
    .refine((v) => v === undefined || v === null || (Array.isArray(v) && v.length === 0), {
      error: `${what} is not supported`,
    });

const adapterConfigSchema = z.looseObject({
  peft_type: z.literal('LORA', { error: 'peft_type must be "LORA" (no other PEFT method is read)' }),
  r: z.int().min(1).max(4096),
  lora_alpha: z.number().positive(),
  lora_dropout: z.number().min(0).lt(1).default(0),
  target_modules: z
    .array(z.string(), { error: 'target_modules must be a list of module names (a regular expression is not read)' })
    .min(1),
  base_model_name_or_path: z.string().nullish(),
  bias: z.literal('none', { error: 'bias must be "none" (LoRA biases are not supported)' }).default('none'),
  fan_in_fan_out: z
    .literal(false, { error: 'fan_in_fan_out must be false (GPT-2-style Conv1D layers)' })
    .default(false),
  use_dora: z.literal(false, { error: 'use_dora must be false (DoRA is not supported)' }).default(false),
  use_rslora: z.boolean().default(false),
  rank_pattern: empty('rank_pattern'),
  alpha_pattern: empty('alpha_pattern'),
  layers_to_transform: absent('layers_to_transform'),
  modules_to_save: absent('modules_to_save'),
});

/** A LoRA adapter as read from a PEFT folder. */
export interface PeftAdapter {
  spec: LoraSpec;
  /** adapter_config.json's base_model_name_or_path, when it names one. */
  base: string | null;
  /** rsLoRA: the scale is alpha / √r instead of alpha / r. */
  rslora: boolean;
  tensors: LoraTensors;
}

/** Writes `adapters` to the folder `dir` in PEFT's layout; `base` goes into base_model_name_or_path. */
export async function savePeftAdapter(dir: string, adapters: LoraAdapters, base: string | null): Promise<void> {
  fs.mkdirSync(dir, { recursive: true });
  for (const [name, data] of Object.entries(await peftAdapterFiles(adapters, base))) {
    fs.writeFileSync(path.join(dir, name), data);
  }
}

/** The two files of `adapters` in PEFT's layout, by name, for a folder written whole (a run's checkpoint). */
export async function peftAdapterFiles(
  adapters: LoraAdapters,
  base: string | null,
): Promise<Record<string, Uint8Array | string>> {
  const s = adapters.spec;
  const config = {
    peft_type: 'LORA',
    task_type: 'CAUSAL_LM',
    base_model_name_or_path: base,
    r: s.rank,
    lora_alpha: s.alpha,
    lora_dropout: s.dropout,
    target_modules: [...s.targets],
    bias: 'none',
    fan_in_fan_out: false,
    inference_mode: true,
    init_lora_weights: true,
    use_dora: false,
    use_rslora: false,
    rank_pattern: {},
    alpha_pattern: {},
    modules_to_save: null,
    layers_to_transform: null,
  };
  const tensors: Record<string, { shape: number[]; data: Float32Array }> = {};
  for (const [name, t] of await adapters.toTensors()) {
    const [rows, cols] = t.shape;
    const data = new Float32Array(rows * cols);
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) data[j * rows + i] = t.data[i * cols + j]!;
    tensors[peftName(name)] = { shape: [cols, rows], data };
  }
  return {
    [ADAPTER_WEIGHTS_FILE]: encodeSafetensors(tensors, { format: 'pt' }),
    [ADAPTER_CONFIG_FILE]: JSON.stringify(config, null, 2) + '\n',
  };
}

/** Whether `dir` is a PEFT adapter folder. */
export function isPeftAdapter(dir: string): boolean {
  return fs.existsSync(path.join(dir, ADAPTER_CONFIG_FILE));
}

/** Reads the PEFT adapter folder `dir`; anything it cannot apply exactly is refused in one line. */
export async function readPeftAdapter(dir: string): Promise<PeftAdapter> {
  const configFile = path.join(dir, ADAPTER_CONFIG_FILE);
  const raw = readRegularJson(configFile, MAX_ADAPTER_CONFIG_BYTES, configFile);
  const parsed = adapterConfigSchema.safeParse(raw);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new UserError(`${configFile}: ${i.path.join('.') || '(top level)'}: ${i.message}`);
  }
  const c = parsed.data;
  const targets: LoraTarget[] = [];
  for (const m of c.target_modules) {
    if (!(LORA_TARGET_NAMES as string[]).includes(m)) {
      throw new UserError(
        `${configFile}: target_modules: '${m}' is not one of the projections mars-lab adapts (${LORA_TARGET_NAMES.join(', ')})`,
      );
    }
    if (!targets.includes(m as LoraTarget)) targets.push(m as LoraTarget);
  }
  // Keep the spec in one canonical order, so the tensors' order (the optimiser's) does not depend on the file.
  targets.sort((a, b) => LORA_TARGET_NAMES.indexOf(a) - LORA_TARGET_NAMES.indexOf(b));
  const weightsFile = path.join(dir, ADAPTER_WEIGHTS_FILE);
  if (!fs.existsSync(weightsFile)) {
    throw new UserError(
      `${dir}: has no ${ADAPTER_WEIGHTS_FILE} (PEFT's .bin adapters are not read; save with safe_serialization)`,
    );
  }
  const file = await readSafetensorsFile(weightsFile);
  const tensors: LoraTensors = new Map();
  for (const [key, t] of Object.entries(file.tensors)) {
    const m = PEFT_KEY.exec(key);
    const target = m?.[3] as LoraTarget | undefined;
    if (!m || !target || !targets.includes(target) || t.shape.length !== 2) {
      throw new UserError(`${weightsFile}: tensor '${key}' is not a LoRA matrix of one of target_modules`);
    }
    const [rows, cols] = t.shape as [number, number];
    const data = new Float32Array(rows * cols);
    for (let i = 0; i < rows; i++) for (let j = 0; j < cols; j++) data[j * rows + i] = t.data[i * cols + j]!;
    tensors.set(`layers.${m[1]}.${LORA_TARGETS[target]}.${m[4]}`, { shape: [cols, rows], data });
  }
  const spec: LoraSpec = { rank: c.r, alpha: c.lora_alpha, dropout: c.lora_dropout, targets };
  return { spec, base: c.base_model_name_or_path ?? null, rslora: c.use_rslora, tensors };
}

/** The adapters of a PEFT folder on `config`'s model (shapes checked against it). */
export function adaptersFromPeft(config: LlamaConfig, adapter: PeftAdapter): LoraAdapters {
  // rsLoRA's scale alpha/√r is LoRA's alpha'/r with alpha' = alpha·√r.
  const spec = adapter.rslora
    ? { ...adapter.spec, alpha: adapter.spec.alpha * Math.sqrt(adapter.spec.rank) }
    : adapter.spec;
  const extra = adapter.tensors.size - 2 * config.num_hidden_layers * spec.targets.length;
  if (extra > 0) {
    throw new UserError(
      `LoRA adapter: ${extra} matrices name layers the model (${config.num_hidden_layers} layers) does not have`,
    );
  }
  return LoraAdapters.fromTensors(config, spec, adapter.tensors);
}
