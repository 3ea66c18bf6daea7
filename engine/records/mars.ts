/**
 * MARS's trajectories.jsonl record: one episode, a System 2 rollout with each turn's System 1 windows
 * (engine/mars/trainer.ts trajectoryRecord; the episode inspector draws it). Evaluation episodes have the same form
 * (an evaluation item's `record`, shown in Compare) with advantage 0 and no System 1 advantages.
 */
import { z } from 'zod';
import { versionField } from './version';

/** One System 1 window: the pages packed into it (and how many of each one's tokens), and what System 1 wrote. */
export const marsBinSchema = z.object({
  pages: z.array(z.object({ id: z.string(), take: z.int().nonnegative() })),
  /** Tokens of the window the bin used (pages + separators). */
  used: z.int().nonnegative(),
  output: z.string(),
  outputTokens: z.array(z.string()),
  outputLogProbs: z.array(z.number()),
  /** The System 1 sample's advantage (absent or null when the trainer had none for it, as in evaluation). */
  advantage: z.number().nullable().optional(),
  /** How many times the balanced sample kept this System 1 sample (0: balancing dropped it). */
  kept: z.int().nonnegative().nullable().optional(),
});

/** One System 2 turn: its text and tokens, the search it made (if any) and the windows System 1 read. */
export const marsTurnSchema = z.object({
  text: z.string(),
  tokens: z.array(z.string()),
  logProbs: z.array(z.number()),
  query: z.string().nullable(),
  purpose: z.string().nullable(),
  results: z.array(z.object({ id: z.string(), length: z.int().nonnegative() })),
  bins: z.array(marsBinSchema),
  /** System 1's window capacity for this search (records written before it was recorded have none). */
  capacity: z.int().nullable().optional(),
  info: z.string(),
});

export const MARS_END_REASONS = ['answer', 'maxTurns', 'overflow'] as const;

export const marsEpisodeSchema = z.object({
  kind: z.literal('mars.episode'),
  version: versionField(),
  questionId: z.string(),
  family: z.string(),
  question: z.string(),
  gold: z.array(z.string()),
  turns: z.array(marsTurnSchema),
  answer: z.string().nullable(),
  end: z.enum(MARS_END_REASONS),
  reward: z.number(),
  f1: z.number(),
  advantage: z.number(),
});

export type MarsBin = z.output<typeof marsBinSchema>;
export type MarsTurn = z.output<typeof marsTurnSchema>;
export type MarsEpisodeRecord = z.output<typeof marsEpisodeSchema>;
