/**
 * One line of events.jsonl: `{time, type, ...}` (engine/runs/folder/runFolder.ts appendEvent, the run lock's takeover
 * warning, engine/interop's imported runs). `time` is seconds since the epoch. Each type names the fields it always
 * has; an event may carry more (a status change carries the run loop's step, error or checkpoint, a takeover the lock
 * it replaced), which the schemas keep.
 */
import { z } from 'zod';
import { versionField } from './version';

const base = { version: versionField(), time: z.number() };

/** run.json's status changed (created, running, finished, failed, ...). */
export const statusEventSchema = z.looseObject({
  ...base,
  type: z.literal('status'),
  status: z.string(),
  pid: z.int().optional(),
  step: z.int().nonnegative().optional(),
  error: z.string().optional(),
  lastCheckpointStep: z.int().nonnegative().optional(),
});

/** The run was resumed from its last checkpoint. */
export const resumedEventSchema = z.looseObject({
  ...base,
  type: z.literal('resumed'),
  fromStep: z.int().nonnegative(),
  pid: z.int().optional(),
});

/** Something a user should know that did not stop the run (a lock taken over, a field an import could not map). */
export const warningEventSchema = z.looseObject({ ...base, type: z.literal('warning'), message: z.string() });

export const runEventSchema = z.discriminatedUnion('type', [statusEventSchema, resumedEventSchema, warningEventSchema]);

export type RunEvent = z.output<typeof runEventSchema>;
