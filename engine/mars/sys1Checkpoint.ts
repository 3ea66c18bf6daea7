/**
 * The files a checkpoint of a MARS run with its own System 1 parameters ('separate' or 'frozen') carries beside the
 * policy: System 1's weights and, when it trains ('separate'), its optimiser state. The trainer writes and resumes from
 * them; the evaluation of a checkpoint reads the weights.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../base/userError';
import { loadModelWeights, TRAINER_STATE_FILE } from '../model/formats/checkpoint';
import type { LlamaConfig } from '../model/config';
import type { LlamaModel } from '../model/llama';

export const SYS1_WEIGHTS = 'sys1.safetensors';
export const SYS1_OPTIMIZER = 'sys1_optimizer.safetensors';

/**
 * Whether the checkpoint in `dir` has a System 1 of its own: it holds sys1.safetensors, or it was written by a run
 * whose System 1 was 'separate' or 'frozen' (trainer_state.json's config), whose file must then be there
 * (sys1FromCheckpoint says it is missing). A base or a shared run's checkpoint has none.
 */
export function carriesSys1(dir: string): boolean {
  if (fs.existsSync(path.join(dir, SYS1_WEIGHTS))) return true;
  let mode: unknown;
  try {
    const state = JSON.parse(fs.readFileSync(path.join(dir, TRAINER_STATE_FILE), 'utf8')) as {
      config?: { algorithm?: unknown; mars?: { sys1Params?: unknown } };
    };
    mode = state.config?.algorithm === 'mars' ? state.config.mars?.sys1Params : undefined;
  } catch {
    return false; // no readable run config: a bare model, whose System 1 is the policy
  }
  return mode === 'separate' || mode === 'frozen';
}

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
