/**
 * The run index: `<home>/index.json`, summaries of every run so a list of hundreds of runs opens without reading their
 * logs. It is a cache (docs/architecture.md, "Run folder"): each entry remembers the size and mtime of the files it was built from
 * and is rebuilt when they change; a missing or damaged index.json is rebuilt from the folders. A run's metrics are
 * summarised from its sidecar (summarySidecar.ts, written by the run loop) and the log past the offset it covers, so
 * rebuilding the index of a home of 1,000 runs does not read every log whole.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { LowSync, type SyncAdapter } from 'lowdb';
import { z } from 'zod';
import { clip } from '../../base/boundedText';
import { UserError } from '../../base/userError';
import { headlineScore, type HeadlineScore } from './headlineMetric';
import { INDEX_FILE, RUN_FILES, runsDir } from '../folder/home';
import { readAt, type MetricStats, type ReadAt } from './metricStats';
import { runSummarySchema, SUMMARY_BOUNDS } from './runSummary';
import { isRunFolderName, listCheckpoints, readRunMeta, type RunStatus } from '../folder/runFolder';
import {
  extendCover,
  readSummarySidecar,
  SIDECAR_MIN_SCAN,
  tailPrint,
  writeSummarySidecar,
  writerMayBeAlive,
  type MetricsCover,
  type SidecarRead,
} from './summarySidecar';
import { shownStatus } from '../folder/writerProcess';
import { HomeFileError, readHomeText } from '../folder/homeFile';

/** index.json: a summary of a few KB a run; far above a home of tens of thousands of runs. */
const MAX_INDEX_BYTES = 512 * 1024 * 1024;

export type { MetricStats } from './metricStats';

export interface RunSummary {
  id: string;
  /** 'corrupt': run.json is missing or damaged; `error` says how. */
  status: RunStatus | 'corrupt';
  error?: string;
  algorithm?: string;
  preset?: string;
  createdAt?: string;
  statusAt?: string;
  /** Step of the last metrics line; null before the first. */
  steps: number | null;
  /** The run's budget.steps as launched (run.json's config), for "step of total"; absent when it has none. */
  totalSteps?: number;
  metrics: Record<string, MetricStats>;
  tags: string[];
  notes: string;
  checkpoints: number;
  lastCheckpointStep?: number;
  /** Latest modification (ms since the epoch) of run.json, metrics.jsonl or checkpoints/. */
  mtime: number;
  /**
   * The held-out score: the algorithm's headline metric (headlineMetric.ts), its label, and its last value (null before
   * the first evaluation). Absent when the algorithm is unknown. Derived when listed, never stored in the index.
   */
  headline?: HeadlineScore;
}

export interface RunIndex {
  readonly path: string;
  /** Every run under the home, by id (creation time to the second), brought up to date with the folders. */
  list(): RunSummary[];
  /**
   * One run's summary, brought up to date with its folder alone (a run page needs no listing of the home), with the
   * number of metrics lines read; undefined when there is no such run folder.
   */
  get(id: string): { summary: RunSummary; metricLines: number } | undefined;
}

// 2: entries stamp labels.json too (tags and notes edited after launch live there).
// 3: summaries carry totalSteps (budget.steps), for the Runs table's "step of total".
// 4: the cursor counts the metrics lines read (getRun's metricPoints without reading the log).
const INDEX_VERSION = 4;

const stampSchema = z.object({ size: z.number(), mtimeMs: z.number(), ino: z.number() });
type FileStamp = z.infer<typeof stampSchema>;

const entrySchema = z.object({
  summary: runSummarySchema,
  meta: stampSchema.nullable(),
  labels: stampSchema.nullable(),
  metrics: stampSchema.nullable(),
  checkpoints: stampSchema.nullable(),
  cursor: z.object({ offset: z.number(), nextLine: z.number(), fingerprint: z.string(), lines: z.number() }),
});
type IndexEntry = z.infer<typeof entrySchema>;
const indexSchema = z.object({ version: z.literal(INDEX_VERSION), runs: z.record(z.string(), entrySchema) });
type IndexData = z.infer<typeof indexSchema>;

/**
 * lowdb's own file adapters write through one fixed temp name (`.index.json.tmp`), which two processes (the app and a
 * terminal run) would share; this one uses a per-writer temp name, and reads a damaged file as absent.
 */
class IndexFile implements SyncAdapter<IndexData> {
  constructor(private readonly file: string) {}

  read(): IndexData | null {
    let text: string;
    try {
      // a cache: a FIFO, a link out of the home or a file past the bound is no index, rebuilt (homeFile.ts)
      const read = readHomeText(this.file, MAX_INDEX_BYTES);
      if (read === null) return null;
      text = read;
    } catch (err) {
      if (err instanceof HomeFileError) return null;
      throw err;
    }
    try {
      const parsed = indexSchema.safeParse(JSON.parse(text));
      return parsed.success ? parsed.data : null;
    } catch {
      return null;
    }
  }

  write(data: IndexData): void {
    const tmp = `${this.file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
    try {
      fs.writeFileSync(tmp, JSON.stringify(data) + '\n');
      fs.renameSync(tmp, this.file);
    } catch (err) {
      fs.rmSync(tmp, { force: true });
      throw err;
    }
  }
}

function stampOf(file: string): FileStamp | null {
  try {
    const s = fs.statSync(file);
    return { size: s.size, mtimeMs: s.mtimeMs, ino: s.ino };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
}

function sameStamp(a: FileStamp | null, b: FileStamp | null): boolean {
  if (a === null || b === null) return a === b;
  return a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;
}

function emptySummary(id: string): RunSummary {
  return { id, status: 'corrupt', steps: null, metrics: {}, tags: [], notes: '', checkpoints: 0, mtime: 0 };
}

function withHeadline(summary: RunSummary): RunSummary {
  const headline = headlineScore(summary.algorithm, (key) =>
    Object.hasOwn(summary.metrics, key) ? summary.metrics[key]!.last : undefined,
  );
  if (headline) summary.headline = headline;
  return summary;
}

function rebuildEntry(dir: string, id: string, old: IndexEntry | undefined, stamps: Stamps, read: ReadAt): IndexEntry {
  const summary = emptySummary(id);
  try {
    const meta = readRunMeta(dir);
    summary.status = meta.status;
    summary.algorithm = meta.algorithm;
    if (meta.preset !== undefined) summary.preset = meta.preset;
    summary.createdAt = meta.createdAt;
    summary.statusAt = meta.statusAt;
    summary.tags = meta.tags.slice(0, SUMMARY_BOUNDS.tags).map((t) => clip(t, SUMMARY_BOUNDS.tagChars));
    summary.notes = clip(meta.notes, SUMMARY_BOUNDS.notesChars);
    const total = (meta.config as { budget?: { steps?: unknown } } | null | undefined)?.budget?.steps;
    if (typeof total === 'number' && Number.isFinite(total)) summary.totalSteps = total;
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    summary.error = clip(err.message, SUMMARY_BOUNDS.errorChars);
  }

  const metricsFile = path.join(dir, RUN_FILES.metrics);
  let cursor = { offset: 0, nextLine: 1, fingerprint: '', lines: 0 };
  if (old && sameStamp(old.metrics, stamps.metrics)) {
    summary.steps = old.summary.steps;
    summary.metrics = old.summary.metrics;
    cursor = old.cursor;
  } else if (stamps.metrics) {
    const resumable =
      old?.metrics &&
      old.metrics.ino === stamps.metrics.ino &&
      stamps.metrics.size >= old.cursor.offset &&
      tailPrint(metricsFile, old.cursor.offset, read) === old.cursor.fingerprint;
    // Where the summary starts: this index's own entry, else the run's sidecar (summarySidecar.ts), else the log's start.
    let from: MetricsCover | null = null;
    let sidecar: SidecarRead | undefined;
    if (resumable) {
      const { steps, metrics } = old.summary;
      const { offset, nextLine, fingerprint, lines } = old.cursor;
      from = { steps, metrics, lines, end: offset, nextLine, head: '', tail: fingerprint };
    } else {
      sidecar = readSummarySidecar(dir, read);
      if ('cover' in sidecar) from = sidecar.cover;
    }
    // Complete lines only: the run may be writing its next line right now; a half line is read on the next refresh.
    const { cover, scanned } = extendCover(metricsFile, from, read);
    summary.steps = cover.steps;
    summary.metrics = cover.metrics;
    cursor = { offset: cover.end, nextLine: cover.nextLine, fingerprint: cover.tail, lines: cover.lines };
    // A run of an earlier version (no sidecar), or one whose sidecar is broken or far behind, gets one now, so the
    // next cold listing reads little of its log; never while its writer may be alive (it keeps its own).
    const broken = sidecar !== undefined && 'problem' in sidecar && sidecar.problem !== 'absent';
    if (sidecar !== undefined && (broken || scanned >= SIDECAR_MIN_SCAN) && !writerMayBeAlive(dir)) {
      writeSummarySidecar(dir, cover);
    }
  }

  if (old && sameStamp(old.checkpoints, stamps.checkpoints)) {
    summary.checkpoints = old.summary.checkpoints;
    if (old.summary.lastCheckpointStep !== undefined) summary.lastCheckpointStep = old.summary.lastCheckpointStep;
  } else {
    const ckpts = listCheckpoints(dir);
    summary.checkpoints = ckpts.length;
    if (ckpts.length > 0) summary.lastCheckpointStep = ckpts[ckpts.length - 1]!.step;
  }

  summary.mtime = Math.max(stamps.meta?.mtimeMs ?? 0, stamps.metrics?.mtimeMs ?? 0, stamps.checkpoints?.mtimeMs ?? 0);
  return {
    summary,
    meta: stamps.meta,
    labels: stamps.labels,
    metrics: stamps.metrics,
    checkpoints: stamps.checkpoints,
    cursor,
  };
}

interface Stamps {
  meta: FileStamp | null;
  labels: FileStamp | null;
  metrics: FileStamp | null;
  checkpoints: FileStamp | null;
}

function runFolderIds(home: string): string[] {
  try {
    return fs
      .readdirSync(runsDir(home), { withFileTypes: true })
      .filter((e) => e.isDirectory() && isRunFolderName(e.name))
      .map((e) => e.name)
      .sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

function shownWriterStatus(dir: string): RunStatus {
  try {
    return shownStatus(dir, readRunMeta(dir));
  } catch (err) {
    if (err instanceof UserError) return 'running';
    throw err;
  }
}

export interface RunIndexOptions {
  /** How metrics.jsonl is read (a test counts the bytes). */
  read?: ReadAt;
}

export function openRunIndex(home: string, opts: RunIndexOptions = {}): RunIndex {
  const read = opts.read ?? readAt;
  const file = path.join(home, INDEX_FILE);
  const db = new LowSync<IndexData>(new IndexFile(file), { version: INDEX_VERSION, runs: {} });
  db.read();

  /** Rebuilds run `id`'s entry if a file it was built from changed; whether it did. */
  const refresh = (id: string): boolean => {
    const runs = db.data.runs;
    const dir = path.join(runsDir(home), id);
    const stamps: Stamps = {
      meta: stampOf(path.join(dir, RUN_FILES.meta)),
      labels: stampOf(path.join(dir, RUN_FILES.labels)),
      metrics: stampOf(path.join(dir, RUN_FILES.metrics)),
      checkpoints: stampOf(path.join(dir, RUN_FILES.checkpoints)),
    };
    const old = runs[id];
    if (
      old &&
      sameStamp(old.meta, stamps.meta) &&
      sameStamp(old.labels, stamps.labels) &&
      sameStamp(old.metrics, stamps.metrics) &&
      sameStamp(old.checkpoints, stamps.checkpoints)
    ) {
      return false;
    }
    runs[id] = rebuildEntry(dir, id, old, stamps, read);
    return true;
  };

  const save = (): void => {
    try {
      db.write();
    } catch {
      // A cache that cannot be saved (read-only home, full disk) is rebuilt next time; the listing stands.
    }
  };

  /** A run's summary as shown: a copy, with its headline score and its writer's liveness. */
  const shown = (id: string): RunSummary => {
    const summary = withHeadline(structuredClone(db.data.runs[id]!.summary));
    // Liveness is in no file's stamp: a run whose writer died (killed, out of memory) still says 'running' in
    // run.json, which only its own process writes. It is shown interrupted, checked at every listing.
    if (summary.status === 'running') summary.status = shownWriterStatus(path.join(runsDir(home), id));
    return summary;
  };

  return {
    path: file,
    list(): RunSummary[] {
      const runs = db.data.runs;
      const ids = runFolderIds(home);
      const present = new Set(ids);
      let changed = false;
      for (const id of Object.keys(runs)) {
        if (!present.has(id)) {
          delete runs[id];
          changed = true;
        }
      }
      for (const id of ids) if (refresh(id)) changed = true;
      if (changed || (ids.length > 0 && !fs.existsSync(file))) save();
      return ids.map(shown);
    },
    get(id) {
      if (!isRunFolderName(id) || !fs.existsSync(path.join(runsDir(home), id))) return undefined;
      if (refresh(id)) save();
      return { summary: shown(id), metricLines: db.data.runs[id]!.cursor.lines };
    },
  };
}
