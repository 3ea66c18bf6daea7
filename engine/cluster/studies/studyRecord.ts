/**
 * A study: one preset's variants × seeds, run here or as Ray jobs. Its record, `<home>/studies/<id>.json`, lists every
 * run (its id, which is also its Ray job's submission id), where it runs, and its last known status and headline
 * score; it is rewritten (atomically) whenever one of those changes, so a study whose cluster became unreachable, or
 * whose terminal was closed, can be re-attached later (`mars-lab study status ID`). Each Ray job's log, as followed,
 * is kept next to it in `<home>/studies/<id>/<runId>.log`.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { UserError } from '../../base/userError';
import { jsonParseProblem } from '../../base/boundedText';
import {
  HomeFileError,
  insideReal,
  jsonTextNestedDeeper,
  openHomeFile,
  readHomeText,
} from '../../runs/folder/homeFile';

/** A study's record: its runs' ids, states and messages (a few hundred bytes a run). */
const MAX_STUDY_RECORD_BYTES = 16 * 1024 * 1024;

export const RUN_STATES = ['pending', 'submitted', 'running', 'finished', 'failed', 'stopped', 'unknown'] as const;
export type RunState = (typeof RUN_STATES)[number];
export const FINAL_STATES: ReadonlySet<RunState> = new Set(['finished', 'failed', 'stopped']);

const idText = z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { error: 'letters, digits, ".", "_", "-"' });

export const studyRunSchema = z.object({
  runId: idText,
  /** A preset variant's name, or null for the preset as it is. */
  variant: z.string().nullable(),
  seed: z.number().int(),
  /** The real model its config names (chatgrpo's model.path: a catalogue name or a path); absent for none. */
  model: z.string().optional(),
  state: z.enum(RUN_STATES),
  /** The Ray job's status as last seen (PENDING, RUNNING, …), for runs on a cluster. */
  jobStatus: z.string().optional(),
  /** Why it failed or stopped, in one line. */
  message: z.string().optional(),
  step: z.number().int().nonnegative().optional(),
  totalSteps: z.number().int().nonnegative().optional(),
  headline: z.object({ key: z.string(), label: z.string(), value: z.number().nullable() }).nullable().optional(),
  startedAt: z.string().optional(),
  endedAt: z.string().optional(),
  /** Fetch-back of the run folder from a cluster without a shared home: 'fetched', 'kept: …' or 'fetch failed: …'. */
  fetch: z.string().optional(),
  /** Fetch jobs submitted so far (each attempt has its own submission id). */
  fetchAttempts: z.number().int().nonnegative().optional(),
});
export type StudyRun = z.infer<typeof studyRunSchema>;

export const studyWhereSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('local'), parallel: z.number().int().positive() }),
  z.object({
    kind: z.literal('ray'),
    /** The dashboard address (no token: that comes from the environment or a flag each time). */
    url: z.string(),
    /** The home the jobs write their runs into, as the cluster's nodes see it. */
    rayHome: z.string(),
    /** The project folder on the cluster (where engine/bin/mars-lab.mjs is). */
    project: z.string(),
    node: z.string(),
    cpusPerJob: z.number().nonnegative(),
    /** GPUs Ray reserves for each job (entrypoint_num_gpus); absent in records from before GPUs could be asked for. */
    gpusPerJob: z.number().nonnegative().optional(),
    /** The user asserted that the configs' paths (a model, a base checkpoint, a task file) are read at the same absolute
     * path on every node (--ray-shared-paths or its older name --ray-shared-models; jobModels.ts, jobPaths.ts); absent:
     * not. The name is the one records had when it covered models only. */
    sharedModels: z.literal(true).optional(),
    /** Fetch each finished run's folder back here (the ray home is not shared): the last checkpoint, or all. */
    fetch: z.enum(['last', 'all']).optional(),
    /** The jobs' runtime_env (a shipped project's working_dir among it) and setup command, for runs submitted on a
     * re-attach exactly as the first ones were. */
    runtimeEnv: z.record(z.string(), z.unknown()).optional(),
    setup: z.string().optional(),
  }),
]);
export type StudyWhere = z.infer<typeof studyWhereSchema>;

export const studyRecordSchema = z.object({
  version: z.literal(1),
  id: idText,
  createdAt: z.string(),
  preset: z.string(),
  algorithm: z.string(),
  variants: z.array(z.string().nullable()).min(1),
  seeds: z.array(z.number().int()).min(1),
  sets: z.array(z.string()),
  where: studyWhereSchema,
  runs: z.array(studyRunSchema).min(1),
});
export type StudyRecord = z.infer<typeof studyRecordSchema>;

export function studiesDir(home: string): string {
  return path.join(home, 'studies');
}

export function studyFile(home: string, id: string): string {
  if (!idText.safeParse(id).success) {
    throw new UserError(
      `"${id}" is not a study id (letters, digits, ".", "_", "-"); list them with: mars-lab study ls`,
    );
  }
  return path.join(studiesDir(home), `${id}.json`);
}

/** Where the log of one run's Ray job is kept. */
export function studyLogFile(home: string, id: string, runId: string): string {
  return path.join(studiesDir(home), id, `${runId}.log`);
}

/**
 * A study run's kept log for reading, as a descriptor, or null when there is none yet. A home is untrusted (issue 34):
 * the log, or the study's folder, may be a link out of the home (a window would be sent the file it leads to) or a
 * FIFO (the host would block in open()); both are refused with a HomeFileError, nothing read.
 */
export function openStudyLog(home: string, id: string, runId: string): number | null {
  const file = studyLogFile(home, id, runId);
  const folder = path.dirname(file);
  if (fs.existsSync(folder) && !insideReal(studiesDir(home), folder)) {
    throw new HomeFileError(
      `${folder} leads outside ${studiesDir(home)}: a study's logs must lie in its folder; remove the link`,
    );
  }
  return openHomeFile(file, folder);
}

/**
 * A study run's log opened for writing from its first byte (the follower rewrites it). Whatever lies there that is not
 * a regular file of the study's folder (a link to a file elsewhere, a FIFO) is removed first and never written
 * through; a study folder that leads outside the home's studies/ is refused.
 */
export function openStudyLogForWrite(home: string, id: string, runId: string): number {
  const file = studyLogFile(home, id, runId);
  const folder = path.dirname(file);
  fs.mkdirSync(folder, { recursive: true });
  if (!insideReal(studiesDir(home), folder)) {
    throw new HomeFileError(
      `${folder} leads outside ${studiesDir(home)}: a study's logs must lie in its folder; remove the link`,
    );
  }
  try {
    if (!fs.lstatSync(file).isFile()) fs.rmSync(file, { force: true });
  } catch {
    // none yet
  }
  const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_TRUNC | (fs.constants.O_NOFOLLOW ?? 0);
  return fs.openSync(file, flags, 0o644);
}

/** `20261201-173000-seqgrpo-copy-3f9a`: UTC time first, so ids sort by creation. */
export function newStudyId(preset: string, now: Date = new Date()): string {
  const iso = now.toISOString();
  const slug =
    preset
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'study';
  return `${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}-${slug}-${randomBytes(2).toString('hex')}`;
}

/** The id of one run of a study (also its Ray job's submission id). */
export function studyRunId(studyId: string, variant: string | null, seed: number): string {
  return `${studyId}-${variant === null ? '' : `${variant}-`}s${seed}`;
}

export function writeStudy(home: string, record: StudyRecord): void {
  const file = studyFile(home, record.id);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  fs.writeFileSync(tmp, `${JSON.stringify(studyRecordSchema.parse(record), null, 2)}\n`);
  fs.renameSync(tmp, file);
}

export function readStudy(home: string, idOrPrefix: string): StudyRecord {
  let file = studyFile(home, idOrPrefix);
  if (!fs.existsSync(file)) {
    const matches = listStudyIds(home).filter((n) => n.startsWith(idOrPrefix));
    if (matches.length !== 1) {
      throw new UserError(
        matches.length > 1
          ? `study '${idOrPrefix}' is ambiguous: ${matches.slice(0, 5).join(', ')}`
          : `no study '${idOrPrefix}' in ${studiesDir(home)} (list them: mars-lab study ls; pass --home if it lives elsewhere)`,
      );
    }
    file = studyFile(home, matches[0]!);
  }
  let json: unknown;
  try {
    // without blocking on a FIFO, nor following a link out of studies/, nor quoting the file (homeFile.ts)
    const text = readHomeText(file, MAX_STUDY_RECORD_BYTES);
    if (text === null) throw new UserError(`${file}: no such file`);
    if (jsonTextNestedDeeper(text)) throw new UserError(`${file}: nested too deeply`);
    json = JSON.parse(text);
  } catch (err) {
    const why = err instanceof SyntaxError ? `not valid JSON (${jsonParseProblem(err)})` : (err as Error).message;
    throw new UserError(`${file}: cannot read it (${why}); it is not a study record`);
  }
  const parsed = studyRecordSchema.safeParse(json);
  if (!parsed.success) {
    const i = parsed.error.issues[0]!;
    throw new UserError(
      `${file}: ${i.path.join('.') || 'record'}: ${i.message}; it is not a study record this version reads`,
    );
  }
  return parsed.data;
}

export function listStudyIds(home: string): string[] {
  try {
    return fs
      .readdirSync(studiesDir(home))
      .filter((n) => n.endsWith('.json'))
      .map((n) => n.slice(0, -5))
      .sort();
  } catch {
    return [];
  }
}
