/**
 * trajectories.jsonl and live.json: what each holds, for every algorithm. A trainer's step gives records of its
 * algorithm (seqgrpo.ts, mars.ts, marti.ts, codeTree.ts), told apart by `kind`; the run loop adds the step to each line. live.json
 * holds the step in flight's records as they stand (MARTI's growing trees), replaced while the step runs.
 */
import { z } from 'zod';
import { codeTreeRecordSchema } from './codeTree';
import { marsEpisodeSchema } from './mars';
import { martiTreeSchema } from './marti';
import { seqgrpoGroupSchema } from './seqgrpo';
import { versionField } from './version';

/** A record as a trainer gives it (StepOutput.trajectories, an evaluation item's `record`): no step. */
export const trajectoryRecordSchema = z.discriminatedUnion('kind', [
  seqgrpoGroupSchema,
  marsEpisodeSchema,
  martiTreeSchema,
  codeTreeRecordSchema,
]);

const step = { step: z.int().nonnegative() };

/** One line of trajectories.jsonl: a trainer's record with the step that wrote it. */
export const trajectoryLineSchema = z.discriminatedUnion('kind', [
  seqgrpoGroupSchema.extend(step),
  marsEpisodeSchema.extend(step),
  martiTreeSchema.extend(step),
  codeTreeRecordSchema.extend(step),
]);

/** live.json (engine/runs/folder/liveTrajectories.ts): the step in flight's records, each with that step. */
export const liveTrajectoriesSchema = z.object({
  version: versionField(),
  /** The step in flight (the step its records will be written under). */
  step: z.int().nonnegative(),
  /** Seconds since the epoch, when the file was written. */
  time: z.number(),
  records: z.array(trajectoryLineSchema),
});

export type TrajectoryRecord = z.output<typeof trajectoryRecordSchema>;
export type TrajectoryLine = z.output<typeof trajectoryLineSchema>;
export type TrajectoryKind = TrajectoryRecord['kind'];
/** A trajectories.jsonl line of one kind, e.g. `TrajectoryLineOf<'mars.episode'>`. */
export type TrajectoryLineOf<K extends TrajectoryKind> = Extract<TrajectoryLine, { kind: K }>;
/**
 * A trajectories.jsonl line as the file holds it, before it is read with the schema: `version` may be absent (a record
 * written before it had one). What a window receives from the host, which sends the lines as they are.
 */
export type StoredTrajectoryLine = z.input<typeof trajectoryLineSchema>;
export type StoredTrajectoryLineOf<K extends TrajectoryKind> = Extract<StoredTrajectoryLine, { kind: K }>;
export type LiveTrajectoriesFile = z.output<typeof liveTrajectoriesSchema>;
