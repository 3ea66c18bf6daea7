/**
 * What the importers share (issue 18 part 4): their options and result, a bounded walk for log files, the warnings of
 * an import (one per damaged line, naming file and line; the rest is imported), and progress over bytes read.
 */
import fs from 'node:fs';
import path from 'node:path';

export interface ImportProgress {
  /** Bytes read of all the files to read. */
  bytes: number;
  totalBytes: number;
  file: string;
}

export interface ImportOptions {
  home: string;
  /** The folder the trainer wrote. */
  dir: string;
  /** The new run's id (else one is made up from the date and the folder's name). */
  id?: string;
  /** verl: the file logger's JSONL; MARTI: a TensorBoard event file or folder; when it is not under `dir`. */
  metricsFile?: string;
  /** MARTI: nodes per search tree (workflow_args.max_num_nodes), to cut a prompt folder's calls into trees. */
  nodesPerTree?: number;
  onProgress?: (p: ImportProgress) => void;
  /** Told each warning as it is found (the CLI prints them). */
  onWarning?: (message: string) => void;
}

export interface ImportResult {
  id: string;
  dir: string;
  /** Records imported (verl samples, MARTI calls). */
  records: number;
  /** Lines or files skipped with a warning. */
  skipped: number;
  steps: number;
  warnings: string[];
}

/** Files under `dir` (itself included) whose name `want`s, at most `depth` folders down, in path order. */
export function findFiles(dir: string, want: (name: string) => boolean, depth: number): string[] {
  const out: string[] = [];
  const walk = (d: string, left: number) => {
    let entries: fs.Dirent[];
    try {
      entries = fs.readdirSync(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
      const p = path.join(d, e.name);
      if (e.isDirectory() && left > 0 && !e.name.startsWith('.')) walk(p, left - 1);
      else if (e.isFile() && want(e.name)) out.push(p);
    }
  };
  walk(dir, depth);
  return out;
}

/** Warnings kept for run.json's events: each one as found; past `keep`, only counted. */
export class ProblemLog {
  count = 0;
  readonly #kept: string[] = [];
  readonly #keep: number;
  readonly #onWarning: ((message: string) => void) | undefined;

  constructor(onWarning?: (message: string) => void, keep = 100) {
    this.#onWarning = onWarning;
    this.#keep = keep;
  }

  add(message: string): void {
    this.count++;
    if (this.count <= this.#keep) {
      this.#kept.push(message);
      this.#onWarning?.(message);
    } else if (this.count === this.#keep + 1) this.#onWarning?.(`more lines skipped; their count is in the summary`);
  }

  summary(): string[] {
    return this.count > this.#keep ? [...this.#kept, `${this.count - this.#keep} more lines skipped`] : [...this.#kept];
  }
}

/** Bytes read over all files, told at most every 4 MiB (and at each file's end). */
export class ProgressMeter {
  readonly totalBytes: number;
  readonly #done = new Map<string, number>();
  readonly #onProgress: ((p: ImportProgress) => void) | undefined;
  #lastTold = 0;
  #bytes = 0;

  constructor(files: readonly string[], onProgress?: (p: ImportProgress) => void) {
    this.totalBytes = files.reduce((s, f) => s + fs.statSync(f).size, 0);
    this.#onProgress = onProgress;
  }

  read(file: string, bytesOfFile: number): void {
    this.#bytes += bytesOfFile - (this.#done.get(file) ?? 0);
    this.#done.set(file, bytesOfFile);
    const bytes = this.#bytes;
    if (this.#onProgress && (bytes - this.#lastTold >= 4 << 20 || bytes >= this.totalBytes)) {
      this.#lastTold = bytes;
      this.#onProgress({ bytes, totalBytes: this.totalBytes, file });
    }
  }
}
