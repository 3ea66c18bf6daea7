/**
 * seqgrpo's trajectories.jsonl record: one group, the G rollouts of one prompt at one step (engine/seqgrpo/trainer.ts).
 * Input, target and outputs are the task's symbols as text (`s3 s1 ...`). chatgrpo (engine/chatgrpo/trainer.ts) writes
 * the same record for a real model's replies, each with its `raw` text beside the plain one.
 */
import { z } from 'zod';
import { versionField } from './version';

export const seqgrpoRolloutSchema = z.object({
  output: z.string(),
  reward: z.number(),
  advantage: z.number(),
  /** Per generated token, its log-probability under the behaviour policy. */
  logProbs: z.array(z.number()),
  /**
   * The reply as the model wrote it, special tokens included (the end-of-turn token it stopped on, `<|im_end|>`), where
   * `output` is decoded without them: what the Replies tab shows when "special tokens" is ticked. chatgrpo writes it;
   * absent in seqgrpo's records and in chatgrpo's from before it (an addition an old reader ignores: still version 1).
   */
  raw: z.string().optional(),
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
