/**
 * A run folder (docs/architecture.md, "Run folder"): run.json, the three logs, checkpoints/<step>/, and the lock that keeps a
 * second writer out.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { UserError } from '../../base/userError';
import { CHECKPOINT_REQUIRED_FILES, LOG_FILES, RUN_FILES, runDir, runsDir } from './home';
import { JsonlAppender } from './jsonl';
import { clip, jsonParseProblem, MAX_CONFIG_DEPTH } from '../../base/boundedText';
import { HomeFileError, jsonTextNestedDeeper, MAX_RECORD_DEPTH, readHomeText } from './homeFile';
import { RECORD_VERSION } from '../../records/version';

import { RUN_STATUSES, type RunStatus } from '../summary/runSummary';
export { RUN_STATUSES, type RunStatus };

/** What run.json holds. The config is validated by the config schema, not here. */
export interface RunMeta {
  id: string;
  /** ISO 8601, UTC. */
  createdAt: string;
  algorithm: string;
  preset?: string;
  config: unknown;
  engineVersion: string;
  /** Which TF.js backend ran, and why the others did not (engine/tensor's report). */
  backend?: object;
  seed: number;
  status: RunStatus;
  /** ISO 8601, UTC: when `status` last changed. */
  statusAt: string;
  /** The process writing the run while it is running. */
  pid?: number;
  tags: string[];
  notes: string;
  lastCheckpointStep?: number;
}

// Loose: fields added by later versions survive a read-modify-write by this one.
const runMetaSchema = z.looseObject({
  id: z.string().min(1),
  createdAt: z.string(),
  algorithm: z.string(),
  preset: z.string().optional(),
  config: z.unknown(),
  engineVersion: z.string(),
  backend: z.looseObject({}).optional(),
  seed: z.number(),
  status: z.enum(RUN_STATUSES),
  statusAt: z.string(),
  pid: z.number().int().optional(),
  tags: z.array(z.string()),
  notes: z.string(),
  lastCheckpointStep: z.number().int().nonnegative().optional(),
});

export class RunFolderError extends UserError {}

/** The largest run.json read: a config is at most 256 KiB (MAX_CONFIG_BYTES), the rest a few KB. */
const MAX_RUN_JSON_BYTES = 4 << 20;
/** The largest labels.json read (tags and notes typed in a window). */
const MAX_LABELS_BYTES = 1 << 20;

function metaPath(dir: string): string {
  return path.join(dir, RUN_FILES.meta);
}

/**
 * run.json with the tags and notes of labels.json laid over it. run.json is written only by the process that holds the
 * run (status, checkpoints); labels edited from a window go to labels.json, so the two writers never replace each
 * other's file and neither can undo the other's change.
 */
export function readRunMeta(dir: string): RunMeta {
  const meta = readRunJson(dir);
  const labels = readRunLabels(dir);
  return labels ? { ...meta, tags: labels.tags, notes: labels.notes } : meta;
}

/** run.json as written, without labels.json (what the run's own read-modify-writes start from). */
function readRunJson(dir: string): RunMeta {
  const file = metaPath(dir);
  let text: string | null;
  try {
    text = readHomeText(file, MAX_RUN_JSON_BYTES);
  } catch (err) {
    if (err instanceof HomeFileError) throw new RunFolderError(err.message);
    throw new RunFolderError(`${file}: cannot read it (${(err as Error).message})`);
  }
  if (text === null) {
    throw new RunFolderError(`${file} is missing: this folder is not a mars-lab run (or it was deleted)`);
  }
  // Before the parse: a config nested thousands deep parses, then overflows every recursive walk (the watcher's
  // comparisons, zod, the answer's JSON) and would end the host that read it.
  if (jsonTextNestedDeeper(text)) {
    throw new RunFolderError(
      `${file} is nested more than ${MAX_RECORD_DEPTH} levels deep (a run description is at most ${MAX_CONFIG_DEPTH + 1}): ` +
        'the file is damaged or crafted; delete the run folder',
    );
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new RunFolderError(
      `${file} is not valid JSON (${jsonParseProblem(err)}): the file is damaged; restore it from a backup, or ` +
        'delete the run folder',
    );
  }
  const parsed = runMetaSchema.safeParse(value);
  if (!parsed.success) {
    // Bounded: a crafted run.json may have 200,000 bad tags, and this message is kept in index.json and sent to windows.
    const issues = parsed.error.issues;
    const problems = issues.slice(0, 10).map((i) => {
      const what = i.code === 'invalid_type' && i.message.endsWith('received undefined') ? 'missing' : i.message;
      return `"${clip(i.path.join('.') || '(top level)', 100)}": ${clip(what, 200)}`;
    });
    if (issues.length > 10) problems.push(`and ${issues.length - 10} more`);
    throw new RunFolderError(
      `${file} is not a valid run description (${problems.join('; ')}); fix those fields, or delete the run folder`,
    );
  }
  return parsed.data;
}

function writeFile(file: string, text: string, durable: boolean): void {
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, text);
    if (durable) fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Replace a file by writing a temporary one beside it and renaming it over, so a reader (the watcher, another window)
 * sees the old or the new text, never half of it. `durable` syncs the new text to disk before the rename.
 */
export function replaceFile(file: string, text: string, opts: { durable: boolean }): void {
  const tmp = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    writeFile(tmp, text, opts.durable);
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
}

/** Replace run.json atomically. Only the process that holds the run writes it (see readRunMeta). */
export function writeRunMeta(dir: string, meta: RunMeta): void {
  replaceFile(metaPath(dir), JSON.stringify(meta, null, 2) + '\n', { durable: true });
}

/** Read-modify-write of run.json by the run's own process: from run.json as written, so labels stay in labels.json. */
export function updateRunMeta(dir: string, change: (meta: RunMeta) => RunMeta): RunMeta {
  const next = change(readRunJson(dir));
  writeRunMeta(dir, next);
  return next;
}

// --- labels: tags and notes edited after launch ---------------------------------------------------------------------

const labelsSchema = z.looseObject({ tags: z.array(z.string()), notes: z.string() });
export type RunLabels = z.infer<typeof labelsSchema>;

/** labels.json, or null when there is none (or it cannot be read: run.json's tags and notes then stand). */
function readRunLabels(dir: string): RunLabels | null {
  let text: string | null;
  try {
    // A FIFO, a link out of the run's folder or a huge file is no labels file (homeFile.ts).
    text = readHomeText(path.join(dir, RUN_FILES.labels), MAX_LABELS_BYTES);
  } catch {
    return null;
  }
  if (text === null || jsonTextNestedDeeper(text)) return null;
  try {
    const parsed = labelsSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/**
 * Replace a run's tags and/or notes (what is not given stays). They go to labels.json, never run.json, so an edit
 * cannot race the run's own rewrites of run.json (status, last checkpoint). Returns the run's description with them.
 */
export function writeRunLabels(dir: string, change: { tags?: string[]; notes?: string }): RunMeta {
  const meta = readRunMeta(dir);
  const labels: RunLabels = { tags: change.tags ?? meta.tags, notes: change.notes ?? meta.notes };
  replaceFile(
    path.join(dir, RUN_FILES.labels),
    JSON.stringify({ ...labels, updatedAt: new Date().toISOString() }, null, 2) + '\n',
    { durable: true },
  );
  return { ...meta, ...labels };
}

/** Paths of a run folder's files. */
export function runFilePaths(dir: string): { [K in keyof typeof RUN_FILES]: string } {
  return {
    meta: path.join(dir, RUN_FILES.meta),
    metrics: path.join(dir, RUN_FILES.metrics),
    trajectories: path.join(dir, RUN_FILES.trajectories),
    events: path.join(dir, RUN_FILES.events),
    checkpoints: path.join(dir, RUN_FILES.checkpoints),
    lock: path.join(dir, RUN_FILES.lock),
    live: path.join(dir, RUN_FILES.live),
    labels: path.join(dir, RUN_FILES.labels),
  };
}

/** Seconds since the epoch, the `time` of every log line (metrics lines use the same clock). */
export function logTime(): number {
  return Date.now() / 1000;
}

/** Append one line to events.jsonl; every event carries `time` (seconds since the epoch) and `type`. */
export function appendEvent(dir: string, event: { type: string; [field: string]: unknown }): void {
  const log = new JsonlAppender(path.join(dir, RUN_FILES.events));
  try {
    log.append({ version: RECORD_VERSION, time: logTime(), ...event });
  } finally {
    log.close();
  }
}

function slug(text: string): string {
  return (
    text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40) || 'run'
  );
}

/** `20261130-024512-toy-copy-3f9a`: UTC time first, so ids sort by creation. */
export function newRunId(label: string, now: Date = new Date()): string {
  const iso = now.toISOString(); // 2026-11-30T02:45:12.345Z
  const stamp = `${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}`;
  return `${stamp}-${slug(label)}-${randomBytes(2).toString('hex')}`;
}

export type NewRunMeta = Omit<RunMeta, 'id' | 'createdAt' | 'status' | 'statusAt'> &
  Partial<Pick<RunMeta, 'createdAt' | 'status' | 'statusAt'>>;

/**
 * Create `runs/<id>/` with its layout. The folder is built under a hidden name and renamed into place, so watchers and
 * listings never see a run without its run.json.
 */
export function createRunFolder(
  home: string,
  init: NewRunMeta,
  opts: { id?: string; now?: Date } = {},
): { id: string; dir: string; meta: RunMeta } {
  const now = opts.now ?? new Date();
  const parent = runsDir(home);
  fs.mkdirSync(parent, { recursive: true });
  for (let attempt = 0; ; attempt++) {
    const id = opts.id ?? newRunId(init.preset ?? init.algorithm, now);
    const dir = runDir(home, id);
    if (fs.existsSync(dir)) {
      if (opts.id !== undefined) {
        throw new RunFolderError(`${dir} already exists: choose another run id, or resume that run instead`);
      }
      if (attempt < 16) continue;
      throw new Error(`${parent}: could not find a free run id`);
    }
    const iso = now.toISOString();
    const meta: RunMeta = {
      ...init,
      id,
      createdAt: init.createdAt ?? iso,
      status: init.status ?? 'created',
      statusAt: init.statusAt ?? iso,
    };
    const staging = path.join(parent, `.${id}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    fs.mkdirSync(staging);
    try {
      fs.mkdirSync(path.join(staging, RUN_FILES.checkpoints));
      for (const log of LOG_FILES) fs.closeSync(fs.openSync(path.join(staging, log), 'a'));
      appendEvent(staging, { type: 'status', status: meta.status });
      writeRunMeta(staging, meta);
      // rename(2) would quietly replace an empty folder of that name created meanwhile; that is harmless.
      fs.renameSync(staging, dir);
    } catch (err) {
      fs.rmSync(staging, { recursive: true, force: true });
      if ((err as NodeJS.ErrnoException).code === 'ENOTEMPTY' || (err as NodeJS.ErrnoException).code === 'EEXIST') {
        if (opts.id !== undefined) {
          throw new RunFolderError(`${dir} already exists: choose another run id, or resume that run instead`);
        }
        continue;
      }
      throw err;
    }
    return { id, dir, meta };
  }
}

/** `pid` and `lastCheckpointStep` also go into run.json; every field goes into the events.jsonl line. */
export interface StatusUpdate {
  /** The process that now writes the run (for 'running'; defaults to this one). */
  pid?: number;
  lastCheckpointStep?: number;
  /** Why: an error message for 'failed', a signal name for 'interrupted'. */
  message?: string;
  [field: string]: unknown;
}

const LIVE_STATUSES: ReadonlySet<RunStatus> = new Set(['running']);

/** Change the run's status in run.json and record it in events.jsonl. */
export function updateStatus(dir: string, status: RunStatus, extra: StatusUpdate = {}): RunMeta {
  const now = new Date();
  const next = updateRunMeta(dir, (meta) => {
    const out: RunMeta = { ...meta, status, statusAt: now.toISOString() };
    if (LIVE_STATUSES.has(status)) out.pid = extra.pid ?? process.pid;
    else delete out.pid;
    if (extra.lastCheckpointStep !== undefined) out.lastCheckpointStep = extra.lastCheckpointStep;
    return out;
  });
  const event: { type: string; [field: string]: unknown } = { ...extra, type: 'status', status };
  if (next.pid !== undefined) event.pid = next.pid;
  appendEvent(dir, event);
  return next;
}

export interface CheckpointEntry {
  step: number;
  path: string;
}

const STEP_NAME = /^\d+$/;

/** Whether a `checkpoints/<name>` folder is a finished checkpoint (leftover `*.tmp-*` / `*.old-*` folders are not). */
export function isCompleteCheckpoint(folder: string): boolean {
  if (!STEP_NAME.test(path.basename(folder))) return false;
  return CHECKPOINT_REQUIRED_FILES.every((f) => fs.existsSync(path.join(folder, f)));
}

/** Complete checkpoints, by ascending step. */
export function listCheckpoints(dir: string): CheckpointEntry[] {
  const root = path.join(dir, RUN_FILES.checkpoints);
  let names: fs.Dirent[];
  try {
    names = fs.readdirSync(root, { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  return names
    .filter((d) => d.isDirectory() && STEP_NAME.test(d.name) && isCompleteCheckpoint(path.join(root, d.name)))
    .map((d) => ({ step: Number(d.name), path: path.join(root, d.name) }))
    .sort((a, b) => a.step - b.step);
}

export type RunListing =
  { id: string; dir: string; ok: true; meta: RunMeta } | { id: string; dir: string; ok: false; error: string };

/** Whether a name under runs/ can be a run (hidden names are folders being created). */
export function isRunFolderName(name: string): boolean {
  return !name.startsWith('.') && !/\.(tmp|old)-/.test(name);
}

/** Every run folder under the home, oldest first; a damaged one is listed with the reason instead of its run.json. */
export function listRuns(home: string): RunListing[] {
  let entries: fs.Dirent[];
  try {
    entries = fs.readdirSync(runsDir(home), { withFileTypes: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const out: RunListing[] = [];
  for (const e of entries) {
    if (!e.isDirectory() || !isRunFolderName(e.name)) continue;
    const dir = path.join(runsDir(home), e.name);
    try {
      out.push({ id: e.name, dir, ok: true, meta: readRunMeta(dir) });
    } catch (err) {
      if (!(err instanceof UserError)) throw err;
      out.push({ id: e.name, dir, ok: false, error: err.message });
    }
  }
  return out.sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
}
