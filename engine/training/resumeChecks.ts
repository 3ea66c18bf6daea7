/**
 * What a checkpoint must carry for a trainer to continue from it exactly, checked the same way by every algorithm:
 * trainer_state.json's step, optimizer.safetensors, and the optimiser file of any further parameter set. A missing
 * piece refuses the resume with a UserError naming the file, never a run that silently starts its optimiser afresh.
 */
import fs from 'node:fs';
import { UserError } from '../base/userError';
import type { CheckpointContents, OptimizerState } from '../model/formats/checkpoint';
import { readSafetensorsFile } from '../model/formats/safetensors';

/**
 * The checkpoint's trainer state (`S`: what else the trainer saved beside the step and its random streams) with the
 * step it reached, and the main optimiser's state.
 */
export function resumePoint<S extends object = object>(
  from: CheckpointContents,
): { state: S & { step: number }; optimizer: OptimizerState } {
  const state = from.trainerState as (S & { step?: number }) | undefined;
  if (!Number.isInteger(state?.step)) {
    throw new UserError('trainer_state.json: step is missing; the checkpoint cannot be resumed');
  }
  if (!from.optimizer) {
    throw new UserError('optimizer.safetensors is missing; the checkpoint cannot be resumed exactly');
  }
  return { state: state as S & { step: number }, optimizer: from.optimizer };
}

/** The optimiser state a trainer saved in a file of its own (a second parameter set's: encodeSafetensors with `step`). */
export async function readOptimizerFile(file: string): Promise<OptimizerState> {
  if (!fs.existsSync(file)) throw new UserError(`${file} is missing; the checkpoint cannot be resumed exactly`);
  const decoded = await readSafetensorsFile(file);
  return {
    step: Number(decoded.metadata.step),
    tensors: Object.fromEntries(
      Object.entries(decoded.tensors).map(([k, t]) => [k, { shape: t.shape, data: t.data as Float32Array }]),
    ),
  };
}
