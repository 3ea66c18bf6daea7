/**
 * Every record a run folder holds, one zod schema each, with a `version` (version.ts): metrics.jsonl lines
 * (metrics.ts), events.jsonl lines (events.ts), trajectories.jsonl lines and live.json (trajectories.ts, with each
 * algorithm's record in seqgrpo.ts, mars.ts and marti.ts), and evaluation results (evaluation.ts). Trainers are typed by
 * them, the renderer imports their types (`import type` only: zod stays out of the page), and readers parse with them.
 *
 * `readRecord` is the one way to read a line: it names the file and line in a UserError when the record does not fit.
 */
import type { z } from 'zod';
import { UserError } from '../base/userError';

export * from './version';
export * from './metrics';
export * from './events';
export * from './seqgrpo';
export * from './mars';
export * from './marti';
export * from './trajectories';
export * from './evaluation';

/**
 * `value` read with `schema`, or a UserError naming `where` (a file, and its line) and the first field that does not
 * fit. A record without `version` reads as version 1.
 */
export function readRecord<S extends z.ZodType>(schema: S, value: unknown, where: string): z.output<S> {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const issue = r.error.issues[0]!;
  const at = issue.path.length ? issue.path.map(String).join('.') : '(the record)';
  throw new UserError(
    `${where}: ${at}: ${issue.message}; not a record this version of mars-lab reads (re-record it, or read it with the version that wrote it)`,
  );
}
