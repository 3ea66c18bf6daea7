/** The algorithms a run can use, by the name in its config's `algorithm` field. */
import type { RunConfig } from './config/configSchema';
import type { Algorithm } from '../training/trainer';
import { mars } from '../mars/trainer';
import { marti } from '../marti/trainer';
import { seqgrpo } from '../seqgrpo/trainer';
import { chatgrpo } from '../chatgrpo/trainer';
import { martipy } from '../marti/python/trainer';
import { UserError } from '../base/userError';

const ALGORITHMS: { [K in RunConfig['algorithm']]: Algorithm<Extract<RunConfig, { algorithm: K }>> } = {
  seqgrpo,
  mars,
  marti,
  chatgrpo,
  martipy,
};

export function algorithmFor(config: RunConfig): Algorithm<RunConfig> {
  const a = ALGORITHMS[config.algorithm] as Algorithm<RunConfig> | undefined;
  if (!a) {
    throw new UserError(
      `algorithm '${String(config.algorithm)}' is not implemented (known: ${Object.keys(ALGORITHMS).join(', ')})`,
    );
  }
  return a;
}
