/**
 * What the host checks before it spends anything on a request from a window or the web (host.ts): paths stay inside
 * the places a window may name, a bounded number of worker processes run at once, and a run's writer is verified
 * before it is signalled.
 *
 * A terminal user of the CLI is not restricted by any of this: they can read any file they can already read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { CATALOGUE } from '../../fetch/catalogue';
import type { ConfigIssue, RunConfig } from '../../runs/config/configSchema';
import { PRESETS_DIR } from '../../runs/presets/presets';
import { PROJECT_ROOT } from '../../base/projectRoot';
import { provenWriter } from '../../runs/folder/writerProcess';
import { UserError } from '../../base/userError';

/** The project's resources/ folder (shipped presets and base checkpoints). */
export const RESOURCES_DIR = path.dirname(path.resolve(PRESETS_DIR));

/** Environment variable: more folders a window may name, separated by ':' (';' on Windows). */
export const ALLOW_PATHS_ENV = 'MARS_LAB_ALLOW_PATHS';

function realOrSelf(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return path.resolve(p);
  }
}

/** The folders a path from a window may lie in: the home, resources/, and MARS_LAB_ALLOW_PATHS. Real paths. */
export function allowedRoots(home: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const extra = (env[ALLOW_PATHS_ENV] ?? '').split(path.delimiter).filter((p) => p.trim() !== '' && path.isAbsolute(p));
  return [home, RESOURCES_DIR, ...extra].map(realOrSelf);
}

function inside(root: string, p: string): boolean {
  const rel = path.relative(root, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * `p` resolved the way the worker resolves `model.from.path` (configuredTraining.ts checkpointPath: as given, or
 * relative to the project folder when it does not exist relative to the working folder), then checked by its real
 * path (symlinks followed) to lie inside an allowed root. Returns the problem, or undefined when it may be used.
 * Messages name the path the request gave, never anything read from the file.
 */
export function pathProblem(p: string, roots: readonly string[]): string | undefined {
  let resolved = path.resolve(p);
  if (!path.isAbsolute(p) && !fs.existsSync(resolved)) resolved = path.join(PROJECT_ROOT, p);
  const list = `the mars-lab home, the project's resources/ folder, or a folder listed in ${ALLOW_PATHS_ENV}`;
  if (!roots.some((r) => inside(r, resolved))) return `${p} is outside the folders a window may use (${list})`;
  let real: string;
  try {
    real = fs.realpathSync(resolved);
  } catch {
    return `${p} does not exist`;
  }
  if (!roots.some((r) => inside(r, real))) {
    return `${p} leads (through a symbolic link) outside the folders a window may use (${list})`;
  }
  return undefined;
}

/** Every field of a config that can name a checkpoint folder, with its value. */
function checkpointSources(config: RunConfig): [string, { kind: string; path?: string }][] {
  if (config.algorithm === 'chatgrpo' || config.algorithm === 'martipy') return [];
  const out: [string, { kind: string; path?: string }][] = [['model.from.path', config.model.from]];
  if (config.algorithm === 'marti') {
    config.marti.agents.forEach((a, i) => a.from && out.push([`marti.agents.${i}.from.path`, a.from]));
  }
  return out;
}

/**
 * Every field of a config that names a user's file or folder: a MARS corpus and its questions, a MARTI task file, a
 * real model (chatgrpo, martipy) and martipy's evaluation task file (unless each is a name `model fetch` / `data fetch`
 * knows: that resolves inside the cache).
 */
export function taskFileSources(config: RunConfig): [string, string | undefined][] {
  const own = (field: string, value: string | undefined): [string, string | undefined][] =>
    value === undefined || CATALOGUE.some((a) => a.name === value) ? [] : [[field, value]];
  if (config.algorithm === 'martipy') {
    return [
      ...own('model.path', config.model.path),
      ...config.team.agents.flatMap((a, i) => own(`team.agents.${i}.model`, a.model)),
      ...own('task.evalTasks', config.task.evalTasks),
    ];
  }
  if (config.algorithm === 'chatgrpo') {
    return CATALOGUE.some((a) => a.name === config.model.path) ? [] : [['model.path', config.model.path]];
  }
  if (config.algorithm === 'mars') {
    return [
      ['task.corpus.folder', config.task.corpus?.folder],
      ['task.corpus.questions', config.task.corpus?.questions],
    ];
  }
  return config.algorithm === 'marti' ? [['task.file', config.task.file]] : [];
}

/**
 * The config's checkpoint paths and task files that lie outside `roots`, as issues on their fields (the form shows
 * them there): a window may have the worker read no file the host would not show it.
 */
export function configPathIssues(config: RunConfig, roots: readonly string[]): ConfigIssue[] {
  const issues: ConfigIssue[] = [];
  for (const [field, from] of checkpointSources(config)) {
    const problem = from.kind === 'checkpoint' && from.path !== undefined ? pathProblem(from.path, roots) : undefined;
    if (problem) issues.push({ path: field, message: problem });
  }
  for (const [field, p] of taskFileSources(config)) {
    const problem = p === undefined ? undefined : pathProblem(p, roots);
    if (problem) issues.push({ path: field, message: problem });
  }
  return issues;
}

/** Throws unless the checkpoint folder `dir` (inside the home by construction) is really there, symlinks followed. */
export function checkCheckpointDir(dir: string, roots: readonly string[], what: string): void {
  const problem = pathProblem(dir, roots);
  if (problem) throw new UserError(`${what}: ${problem.replace(dir, `checkpoint folder ${dir}`)}`);
}

/**
 * How many worker processes the host runs at once: one per core (each trains or evaluates on one thread of its own,
 * with its own copy of the model), at least one. Further requests are refused with a message, not queued: a window
 * can retry, and a queue would start work long after the person who asked for it has moved on.
 */
export function defaultMaxWorkers(): number {
  return Math.max(1, os.availableParallelism?.() ?? os.cpus().length);
}

export class WorkerSlots {
  private used = 0;

  constructor(readonly max: number) {}

  get inUse(): number {
    return this.used;
  }

  /** Takes a slot for a process about to start, or throws naming the limit; returns the release (idempotent). */
  take(what: string): () => void {
    if (this.used >= this.max) {
      throw new UserError(
        `cannot ${what}: ${this.used} run or evaluation process${this.used === 1 ? '' : 'es'} started from the app ` +
          `${this.used === 1 ? 'is' : 'are'} already working, the most this machine runs at once (one per core: ${this.max}); ` +
          'stop one or wait for it to finish',
      );
    }
    this.used++;
    let released = false;
    return () => {
      if (!released) {
        released = true;
        this.used--;
      }
    };
  }
}

/**
 * The verified writer of a run that says it is running, or a UserError: never signal a pid that is not the run's
 * own process (pid reuse after a crash, a crafted folder naming 0, -1 or 1, or naming a live process with its start
 * time and boot id copied): the process must hold the run's lock file open (writerProcess.ts provenWriter).
 */
export function verifiedWriterPid(runId: string, dir: string, meta: { pid?: number; statusAt?: string }): number {
  const writer = provenWriter(dir, meta); // alive, with the start time recorded, and holding the run's lock open
  if (writer.state === 'alive') return writer.pid;
  if (writer.state === 'unknown') {
    throw new UserError(
      `run ${runId}: cannot tell whether its writer is alive here (${writer.reason}); stop it where it runs`,
    );
  }
  throw new UserError(`run ${runId}: no live process holds this run (${writer.reason}); resume it`);
}
