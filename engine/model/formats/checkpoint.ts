/**
 * Checkpoints: a folder with Hugging Face's files (`config.json`, `model.safetensors`) plus, when training, the
 * optimiser state (`optimizer.safetensors`) and the trainer's own state (`trainer_state.json`).
 *
 * Writes are atomic: everything goes into a temporary sibling folder, each file is fsynced, then the folder is renamed
 * into place, so a reader never sees half a checkpoint and a crash leaves at most a stray `*.tmp-*` folder.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { faultPoint } from '../../base/faultPoints';
import { UserError } from '../../base/userError';
import { jsonParseProblem } from '../../base/boundedText';
import { MAX_MODEL_CONFIG_BYTES, openRegularFile, readOpenFile } from '../../base/regularFile';
import { parseLlamaConfig, toHfConfigJson, type LlamaConfig } from '../config';
import { checkHfTensors, modelFromHf, modelToHf, type HostTensor } from './hfWeights';
import type { LlamaModel } from '../llama';
import { encodeSafetensors, readSafetensorsFile } from './safetensors';
import { SHARD_INDEX_FILE, loadShardedWeights } from './shardedWeights';

import { CONFIG_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE, WEIGHTS_FILE } from './checkpointFiles';

export { CONFIG_FILE, OPTIMIZER_FILE, TRAINER_STATE_FILE, WEIGHTS_FILE };

export interface OptimizerState {
  step: number;
  tensors: Record<string, HostTensor>;
}

export interface CheckpointContents {
  /** The folder it was loaded from (for files an algorithm adds). */
  dir: string;
  model: LlamaModel;
  optimizer?: OptimizerState;
  trainerState?: unknown;
}

function writeFileSynced(file: string, data: Uint8Array | string): void {
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, typeof data === 'string' ? Buffer.from(data) : data);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

function fsyncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    // Some platforms cannot open directories; the rename itself is still atomic there.
  }
}

/**
 * Write files into `dir` atomically. An existing `dir` is replaced (moved aside, then removed after the new one is in
 * place). A name may hold one folder level (`agent-b/adapter_model.safetensors`: a second adapter in PEFT's layout).
 */
export function writeFolderAtomic(dir: string, files: Record<string, Uint8Array | string>): void {
  const abs = path.resolve(dir);
  const parent = path.dirname(abs);
  fs.mkdirSync(parent, { recursive: true });
  const tmp = `${abs}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  fs.mkdirSync(tmp);
  try {
    for (const [name, data] of Object.entries(files)) {
      const parts = name.split('/');
      if (parts.length > 2 || parts.some((p) => p === '' || p === '.' || p === '..' || p.includes('\\'))) {
        throw new Error(`writeFolderAtomic: ${JSON.stringify(name)} is not a file name or folder/file name`);
      }
      if (parts.length === 2) fs.mkdirSync(path.join(tmp, parts[0]!), { recursive: true });
      writeFileSynced(path.join(tmp, name), data);
      faultPoint('checkpoint-write');
    }
    fsyncDir(tmp);
    let old: string | null = null;
    if (fs.existsSync(abs)) {
      old = `${abs}.old-${process.pid}-${randomBytes(4).toString('hex')}`;
      fs.renameSync(abs, old);
    }
    fs.renameSync(tmp, abs);
    fsyncDir(parent);
    if (old) fs.rmSync(old, { recursive: true, force: true });
  } catch (err) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** A model's weights as safetensors bytes in Hugging Face's layout (for a second model inside one checkpoint). */
export async function encodeModelWeights(model: LlamaModel): Promise<Uint8Array> {
  return encodeSafetensors(await modelToHf(model), { format: 'pt' });
}

/** Load weights written by encodeModelWeights for a model of `config`'s architecture. */
export async function loadModelWeights(file: string, config: LlamaConfig): Promise<LlamaModel> {
  const weights = await readSafetensorsFile(file);
  checkHfTensors(config, weights.tensors, file);
  const host: Record<string, HostTensor> = {};
  for (const [name, t] of Object.entries(weights.tensors)) {
    host[name] = { shape: t.shape, data: t.data as Float32Array };
  }
  weights.tensors = {};
  return modelFromHf(config, host, true); // each host tensor dropped once it is a variable
}

export async function saveCheckpoint(
  dir: string,
  model: LlamaModel,
  extra: { optimizer?: OptimizerState; trainerState?: unknown; files?: Record<string, string | Uint8Array> } = {},
): Promise<void> {
  const files: Record<string, Uint8Array | string> = {
    [CONFIG_FILE]: JSON.stringify(toHfConfigJson(model.config), null, 2) + '\n',
    // Hugging Face's loader insists on metadata format "pt" before it reads a safetensors file.
    [WEIGHTS_FILE]: await encodeModelWeights(model),
    ...extra.files,
  };
  if (extra.optimizer) {
    files[OPTIMIZER_FILE] = encodeSafetensors(extra.optimizer.tensors, { step: String(extra.optimizer.step) });
  }
  if (extra.trainerState !== undefined) files[TRAINER_STATE_FILE] = JSON.stringify(extra.trainerState, null, 2) + '\n';
  writeFolderAtomic(dir, files);
}

export class CheckpointError extends UserError {}

/** config.json and trainer_state.json are a few KB (MARTI's buffers: a few MB); the bound keeps /dev/zero out. */
const MAX_JSON_FILE_BYTES = 256 * 1024 * 1024;

function readJson(file: string, maxBytes = MAX_JSON_FILE_BYTES): unknown {
  // Never blocking on a FIFO nor reading a device without end: regularFile.ts refuses both before any read.
  let text: string;
  let opened: ReturnType<typeof openRegularFile>;
  try {
    opened = openRegularFile(file);
  } catch (err) {
    throw new CheckpointError(
      `${file}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); is this a checkpoint folder?`,
    );
  }
  if ('missing' in opened) {
    throw new CheckpointError(`${file}: cannot read (no such file); is this a checkpoint folder?`);
  }
  if ('kind' in opened) {
    throw new CheckpointError(`${file} is ${opened.kind}, not a regular file; is this a checkpoint folder?`);
  }
  try {
    text = readOpenFile(opened.fd, maxBytes, file).toString('utf8');
  } finally {
    fs.closeSync(opened.fd);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new CheckpointError(`${file}: not valid JSON (${jsonParseProblem(err)})`); // never the parser's message: it quotes the file
  }
}

/**
 * Load a checkpoint folder: ours, or an HF Llama / Qwen2 / Qwen3 checkpoint in float32/float16/bfloat16 made
 * elsewhere, in one model.safetensors or sharded with its model.safetensors.index.json (shardedWeights.ts).
 */
export async function loadCheckpoint(dir: string): Promise<CheckpointContents> {
  const configFile = path.join(dir, CONFIG_FILE);
  const config = parseLlamaConfig(readJson(configFile, MAX_MODEL_CONFIG_BYTES), configFile);
  const weightsPath = path.join(dir, WEIGHTS_FILE);
  const sharded = !fs.existsSync(weightsPath) && fs.existsSync(path.join(dir, SHARD_INDEX_FILE));
  if (!sharded && !fs.existsSync(weightsPath)) {
    throw new CheckpointError(`${weightsPath}: missing (and no ${SHARD_INDEX_FILE} of a sharded checkpoint either)`);
  }
  const model = sharded ? await loadShardedWeights(dir, config) : await loadModelWeights(weightsPath, config);
  const out: CheckpointContents = { dir, model };
  const optPath = path.join(dir, OPTIMIZER_FILE);
  if (fs.existsSync(optPath)) {
    const opt = await readSafetensorsFile(optPath);
    const step = Number(opt.metadata.step);
    if (!Number.isInteger(step) || step < 0) {
      throw new CheckpointError(`${optPath}: metadata 'step' must be a non-negative integer`);
    }
    const tensors: Record<string, HostTensor> = {};
    for (const [name, t] of Object.entries(opt.tensors)) {
      tensors[name] = { shape: t.shape, data: t.data as Float32Array };
    }
    out.optimizer = { step, tensors };
  }
  const statePath = path.join(dir, TRAINER_STATE_FILE);
  if (fs.existsSync(statePath)) out.trainerState = readJson(statePath);
  return out;
}
