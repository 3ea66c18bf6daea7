/**
 * A run folder made from another trainer's logs (issue 18 part 4). It is built under a hidden name in runs/ (which the
 * run index and the watcher skip: runFolder.ts isRunFolderName) and renamed into place once complete, so the app never
 * shows half an import. run.json says where the run came from in `imported` (a field the run layer keeps: its schema
 * is loose), including that the advantages were recomputed here and how; each trajectory record says so as well.
 *
 * Imported runs are finished runs with no config of ours (`config: null`) and no checkpoints: they can be inspected,
 * charted and compared, not resumed.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { LOG_FILES, RUN_FILES, runDir, runsDir } from '../../runs/folder/home';
import { JsonlAppender } from '../../runs/folder/jsonl';
import { logTime, newRunId, RunFolderError, writeRunMeta, type RunMeta } from '../../runs/folder/runFolder';
import { ENGINE_VERSION } from '../../base/version';

/** What run.json's `imported` field holds. */
export interface ImportedInfo {
  /** The trainer whose logs these were. */
  from: 'verl' | 'marti';
  /** The folder imported (absolute). */
  source: string;
  importedAt: string;
  /** Files read, relative to `source`. */
  files: string[];
  /** Samples (verl) or LLM calls (MARTI) imported, and lines or files skipped with a warning. */
  records: number;
  skipped: number;
  /** The advantages were not in the logs: they were recomputed here, as described. */
  advantages: {
    recomputed: true;
    method: string;
    groupedBy: string;
    eps: number;
    stdMode: 'unbiased' | 'population';
    singleton: 'zero' | 'verl';
  };
  [k: string]: unknown;
}

export class ImportedRunWriter {
  readonly id: string;
  readonly staging: string;
  readonly metrics: JsonlAppender;
  readonly trajectories: JsonlAppender;
  readonly #events: JsonlAppender;
  readonly #home: string;

  constructor(home: string, label: string, opts: { id?: string } = {}) {
    this.#home = home;
    const parent = runsDir(home);
    fs.mkdirSync(parent, { recursive: true });
    this.id = opts.id ?? newRunId(label);
    const dir = runDir(home, this.id);
    if (fs.existsSync(dir)) throw new RunFolderError(`${dir} already exists: choose another --id`);
    this.staging = path.join(parent, `.${this.id}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`);
    fs.mkdirSync(this.staging);
    fs.mkdirSync(path.join(this.staging, RUN_FILES.checkpoints));
    for (const log of LOG_FILES) fs.closeSync(fs.openSync(path.join(this.staging, log), 'a'));
    this.metrics = new JsonlAppender(path.join(this.staging, RUN_FILES.metrics));
    this.trajectories = new JsonlAppender(path.join(this.staging, RUN_FILES.trajectories));
    this.#events = new JsonlAppender(path.join(this.staging, RUN_FILES.events));
  }

  /** A warning kept in events.jsonl (the app's run page lists them). */
  warn(message: string): void {
    this.#events.append({ time: logTime(), type: 'warning', message });
  }

  /** Writes run.json and moves the folder into place; returns the run's folder. */
  finish(algorithm: string, imported: ImportedInfo, notes: string): { id: string; dir: string } {
    const now = new Date().toISOString();
    this.#events.append({ time: logTime(), type: 'status', status: 'finished', imported: true });
    for (const f of [this.metrics, this.trajectories, this.#events]) {
      f.sync();
      f.close();
    }
    const meta: RunMeta & { imported: ImportedInfo } = {
      id: this.id,
      createdAt: now,
      algorithm,
      config: null,
      engineVersion: ENGINE_VERSION,
      seed: 0,
      status: 'finished',
      statusAt: now,
      tags: ['imported', imported.from],
      notes,
      imported,
    };
    writeRunMeta(this.staging, meta);
    const dir = runDir(this.#home, this.id);
    try {
      fs.renameSync(this.staging, dir);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST') {
        throw new RunFolderError(`${dir} appeared while importing: choose another --id`);
      }
      throw err;
    }
    return { id: this.id, dir };
  }

  /** Removes the unfinished folder (an import that failed leaves nothing behind). */
  abort(): void {
    for (const f of [this.metrics, this.trajectories, this.#events]) f.close();
    fs.rmSync(this.staging, { recursive: true, force: true });
  }
}
