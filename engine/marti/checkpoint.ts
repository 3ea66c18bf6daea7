/**
 * A MARTI checkpoint's extra files (docs/architecture.md "Run folder"): the first parameter set is the checkpoint's
 * main model and optimiser; every other set (heterogeneous teams) is saved beside them as `agent-<id>.safetensors`
 * with its config and optimiser, like MARS's separate System 1. Also the trainer state a resume needs, checked.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../base/userError';
import { MAX_MODEL_CONFIG_BYTES, readRegularJson } from '../base/regularFile';
import { parseLlamaConfig, toHfConfigJson } from '../model/config';
import {
  encodeModelWeights,
  loadModelWeights,
  type CheckpointContents,
  type OptimizerState,
} from '../model/formats/checkpoint';
import { encodeSafetensors, readSafetensorsFile } from '../model/formats/safetensors';
import type { LlamaModel } from '../model/llama';
import type { Adam } from '../rl/adam';
import type { Sample } from '../rl/sample';

const agentFile = (id: string) => `agent-${id}.safetensors`;
const agentConfigFile = (id: string) => `agent-${id}.config.json`;
const agentOptFile = (id: string) => `agent-${id}_optimizer.safetensors`;

/** Whether `dir` holds parameter set `id`'s own weights (a base checkpoint from `pretrain` has one model only). */
export function hasAgentModel(dir: string, id: string): boolean {
  return fs.existsSync(path.join(dir, agentFile(id)));
}

export async function loadAgentModel(dir: string, id: string): Promise<LlamaModel> {
  const file = path.join(dir, agentFile(id));
  const cfgFile = path.join(dir, agentConfigFile(id));
  if (!fs.existsSync(file) || !fs.existsSync(cfgFile)) {
    throw new UserError(`${file} is missing: a checkpoint of a heterogeneous MARTI run carries every agent's weights`);
  }
  // Named, bounded and never quoted: a checkpoint folder may be anyone's (V8's parse message quotes the file).
  return loadModelWeights(file, parseLlamaConfig(readRegularJson(cfgFile, MAX_MODEL_CONFIG_BYTES), cfgFile));
}

/** Adds parameter set `id`'s weights, config and optimiser state to a snapshot's `files`. */
export async function addAgentFiles(
  files: Record<string, string | Uint8Array>,
  id: string,
  model: LlamaModel,
  opt: Adam,
): Promise<void> {
  files[agentFile(id)] = await encodeModelWeights(model);
  files[agentConfigFile(id)] = JSON.stringify(toHfConfigJson(model.config), null, 2) + '\n';
  const o = await opt.exportState();
  files[agentOptFile(id)] = encodeSafetensors(o.tensors, { step: String(o.step) });
}

/** Restores parameter set `id`'s optimiser state from its file in `dir`. */
export async function importAgentOptimizer(dir: string, id: string, opt: Adam): Promise<void> {
  const file = path.join(dir, agentOptFile(id));
  if (!fs.existsSync(file)) throw new UserError(`${file} is missing; the checkpoint cannot be resumed exactly`);
  const decoded = await readSafetensorsFile(file);
  opt.importState({
    step: Number(decoded.metadata.step),
    tensors: Object.fromEntries(
      Object.entries(decoded.tensors).map(([k, t]) => [k, { shape: t.shape, data: t.data as Float32Array }]),
    ),
  });
}

/** What trainer_state.json holds beyond the streams: the step and each set's update count and waiting samples. */
export interface MartiSavedState {
  step?: number;
  paramSets?: { id: string; updates: number; buffer: Sample[] }[];
}

/** The saved state and main optimiser of a checkpoint to resume from; refuses one that cannot resume exactly. */
export function resumeState(from: CheckpointContents): { state: MartiSavedState; optimizer: OptimizerState } {
  const state = from.trainerState as MartiSavedState;
  if (!Number.isInteger(state?.step)) {
    throw new UserError('trainer_state.json: step is missing; the checkpoint cannot be resumed');
  }
  if (!from.optimizer) {
    throw new UserError('optimizer.safetensors is missing; the checkpoint cannot be resumed exactly');
  }
  return { state, optimizer: from.optimizer };
}
