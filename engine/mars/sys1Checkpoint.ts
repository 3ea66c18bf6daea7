/**
 * The files a checkpoint of a MARS run with its own System 1 parameters ('separate' or 'frozen') carries beside the
 * policy: System 1's weights and, when it trains ('separate'), its optimiser state. The trainer writes and resumes from
 * them; the evaluation of a checkpoint reads the weights.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../base/userError';
import { loadModelWeights } from '../model/formats/checkpoint';
import type { LlamaConfig } from '../model/config';
import type { LlamaModel } from '../model/llama';

export const SYS1_WEIGHTS = 'sys1.safetensors';
export const SYS1_OPTIMIZER = 'sys1_optimizer.safetensors';

/** The System 1 model a checkpoint of a 'separate' or 'frozen' run carries. */
export async function sys1FromCheckpoint(dir: string, config: LlamaConfig): Promise<LlamaModel> {
  const file = path.join(dir, SYS1_WEIGHTS);
  if (!fs.existsSync(file)) {
    throw new UserError(
      `${file} is missing: a checkpoint of a run with separate or frozen System 1 parameters carries them`,
    );
  }
  return loadModelWeights(file, config);
}
