/**
 * seqgrpo's trajectories.jsonl record: one group, the G rollouts of one prompt at one step (engine/seqgrpo/trainer.ts).
 * Input, target and outputs are the task's symbols as text (`s3 s1 ...`).
 */
import { z } from 'zod';
import { versionField } from './version';

export const seqgrpoRolloutSchema = z.object({
  output: z.string(),
  reward: z.number(),
  advantage: z.number(),
  /** Per generated token, its log-probability under the behaviour policy. */
  logProbs: z.array(z.number()),
});

export const seqgrpoGroupSchema = z.object({
  kind: z.literal('seqgrpo.group'),
  version: versionField(),
  input: z.string(),
  target: z.string(),
  rollouts: z.array(seqgrpoRolloutSchema),
});

export type SeqgrpoRollout = z.output<typeof seqgrpoRolloutSchema>;
export type SeqgrpoGroupRecord = z.output<typeof seqgrpoGroupSchema>;
