/**
 * The metrics summary sidecar (engine/runs/summary/summarySidecar.ts): a cold listing of a run whose log it covers reads only
 * the log's few recorded bytes and its tail; a stale or broken sidecar is ignored and written again; a listing with
 * sidecars equals the listing that reads every log whole; a run of an earlier version gets one on its first listing.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { INDEX_FILE, RUN_FILES } from '../../../engine/runs/folder/home';
import { JsonlAppender } from '../../../engine/runs/folder/jsonl';
import { createRunFolder, updateStatus, type NewRunMeta } from '../../../engine/runs/folder/runFolder';
import { openRunIndex, type RunSummary } from '../../../engine/runs/summary/runIndex';
import { readSummarySidecar, SUMMARY_SIDECAR, SummaryKeeper } from '../../../engine/runs/summary/summarySidecar';
import type { ReadAt } from '../../../engine/runs/summary/metricStats';

const META: NewRunMeta = {
  algorithm: 'seqgrpo',
  preset: 'toy',
  config: { budget: { steps: 50000 } },
  engineVersion: '0',
  seed: 1,
  tags: [],
  notes: '',
};

let home: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-sidecar-'));
});
afterEach(() => fs.rmSync(home, { recursive: true, force: true }));

/** Appends metrics lines for steps from..to (as the run loop writes them: one JSON.stringify a line). */
function appendSteps(dir: string, from: number, to: number, extra: (s: number) => object = () => ({})): void {
  const log = new JsonlAppender(path.join(dir, RUN_FILES.metrics));
  for (let s = from; s <= to; s++) {
    log.append({ step: s, time: 1e9 + s, reward: Math.sin(s) / 3 + s / to, loss: 1 / s, ...extra(s) });
  }
  log.close();
}

/** A reader that counts the bytes it reads from any metrics.jsonl (through the index's injectable reader). */
function countingReader(): { read: ReadAt; bytes: () => number } {
  let bytes = 0;
  return {
    read: (fd, buffer, offset, length, position) => {
      const n = fs.readSync(fd, buffer, offset, length, position);
      bytes += n;
      return n;
    },
    bytes: () => bytes,
  };
}

/** What a listing shows but the files' modification times (a copied home's are its copy's). */
type Shown = Omit<RunSummary, 'mtime'>;
const shown = (list: RunSummary[]): Shown[] => list.map(({ mtime: _m, ...rest }) => rest);

/** A listing as a new process makes it (no index.json). */
function coldList(read?: ReadAt): Shown[] {
  fs.rmSync(path.join(home, INDEX_FILE), { force: true });
  return shown(openRunIndex(home, read ? { read } : {}).list());
}

/** The listing of a copy of the home without its sidecars: every log read from its start. */
function fullScanList(): Shown[] {
  const copy = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-sidecar-ref-'));
  try {
    fs.cpSync(path.join(home, 'runs'), path.join(copy, 'runs'), {
      recursive: true,
      filter: (src) => path.basename(src) !== SUMMARY_SIDECAR && path.basename(src) !== INDEX_FILE,
    });
    return shown(openRunIndex(copy).list());
  } finally {
    fs.rmSync(copy, { recursive: true, force: true });
  }
}

/** A run that ended, with `steps` metrics lines and its sidecar written as the run loop writes it. */
function endedRun(steps: number, opts: { sidecar?: boolean; now?: Date } = {}): { id: string; dir: string } {
  const run = createRunFolder(home, META, opts.now ? { now: opts.now } : {});
  appendSteps(run.dir, 1, steps);
  if (opts.sidecar !== false) new SummaryKeeper(run.dir).flush();
  updateStatus(run.dir, 'finished', { step: steps });
  return run;
}

describe('metrics summary sidecar', () => {
  it('a cold listing of a run whose sidecar covers its 3 MB log reads a few hundred bytes of it, and shows the same', () => {
    const { dir } = endedRun(35_000);
    const size = fs.statSync(path.join(dir, RUN_FILES.metrics)).size;
    expect(size).toBeGreaterThan(3e6);
    const reader = countingReader();
    const listed = coldList(reader.read);
    // The sidecar is checked against the log (its first bytes and those before the covered offset), nothing more.
    expect(reader.bytes()).toBeGreaterThan(0);
    expect(reader.bytes()).toBeLessThan(1024);
    expect(listed).toEqual(fullScanList());
    expect(listed[0]).toMatchObject({ steps: 35_000, status: 'finished' });

    // Lines appended past the covered offset are read, and only they.
    appendSteps(dir, 35_001, 35_010);
    const grown = countingReader();
    const relisted = coldList(grown.read);
    expect(relisted[0]!.steps).toBe(35_010);
    expect(grown.bytes()).toBeLessThan(4096);
    expect(relisted).toEqual(fullScanList());
  });

  it('a run without a sidecar (an earlier version) is read once and given one; the next cold listing reads little', () => {
    const { dir } = endedRun(10_000, { sidecar: false });
    const first = countingReader();
    const listed = coldList(first.read);
    expect(first.bytes()).toBeGreaterThanOrEqual(fs.statSync(path.join(dir, RUN_FILES.metrics)).size);
    const sidecar = readSummarySidecar(dir);
    expect('cover' in sidecar && sidecar.cover.lines).toBe(10_000);
    const second = countingReader();
    expect(coldList(second.read)).toEqual(listed);
    expect(second.bytes()).toBeGreaterThan(0);
    expect(second.bytes()).toBeLessThan(1024);
  });

  const broken: [string, (dir: string) => void][] = [
    ['not JSON', (dir) => fs.writeFileSync(path.join(dir, SUMMARY_SIDECAR), '{"version":1,"end":')],
    [
      'another version',
      (dir) => fs.writeFileSync(path.join(dir, SUMMARY_SIDECAR), JSON.stringify({ version: 99, end: 0 })),
    ],
    [
      'a log cut shorter than the part summarised (a resume)',
      (dir) => {
        const file = path.join(dir, RUN_FILES.metrics);
        const text = fs.readFileSync(file, 'utf8');
        const lines = text.split('\n');
        fs.writeFileSync(file, lines.slice(0, 1000).join('\n') + '\n');
      },
    ],
    [
      'a log replaced by another of the same length',
      (dir) => {
        const file = path.join(dir, RUN_FILES.metrics);
        const text = fs.readFileSync(file, 'utf8');
        // the same bytes but for one digit of the last line's loss, and of the first line's time
        const last = text.lastIndexOf('"loss":') + '"loss":0.0'.length;
        const swap = (t: string, at: number) => t.slice(0, at) + (t[at] === '9' ? '8' : '9') + t.slice(at + 1);
        fs.writeFileSync(file, swap(swap(text, last), text.indexOf('"time":') + 9));
      },
    ],
    [
      "another run's sidecar copied over",
      (dir) => {
        // another run's sidecar copied over: its recorded bytes are not this log's
        const other = endedRun(2_000, { now: new Date(Date.UTC(2030, 0, 1)) });
        fs.copyFileSync(path.join(other.dir, SUMMARY_SIDECAR), path.join(dir, SUMMARY_SIDECAR));
        fs.rmSync(other.dir, { recursive: true });
      },
    ],
  ];
  for (const [what, breakIt] of broken) {
    it(`a sidecar that no longer describes the log is ignored and written again: ${what}`, () => {
      const { dir } = endedRun(3_000);
      breakIt(dir);
      const listed = coldList();
      expect(listed).toEqual(fullScanList());
      const size = fs.statSync(path.join(dir, RUN_FILES.metrics)).size;
      const again = readSummarySidecar(dir);
      expect('cover' in again && again.cover.end).toBe(size);
      expect('cover' in again && again.cover.lines).toBe(listed[0]!.steps);
    });
  }

  it('a listing with sidecars equals the listing that reads every log whole (stale, torn, awkward and live runs)', () => {
    const day = (d: number) => new Date(Date.UTC(2026, 0, d));
    // covered, then grown past its sidecar
    const grown = createRunFolder(home, META, { now: day(1) });
    appendSteps(grown.dir, 1, 5_000, (s) => (s % 100 === 0 ? { 'eval.accuracy': s / 5_000 } : {}));
    new SummaryKeeper(grown.dir).flush();
    appendSteps(grown.dir, 5_001, 5_050);
    // an earlier version's run, large enough to be given a sidecar
    const legacy = endedRun(4_000, { sidecar: false, now: day(2) });
    // a small one (no sidecar written for it: read as fast as one)
    const small = endedRun(20, { sidecar: false, now: day(3) });
    // a torn last line and lines of other shapes: strings, NaN written as null, a metric named __proto__, a bad line
    const awkward = createRunFolder(home, META, { now: day(4) });
    appendSteps(awkward.dir, 1, 3_000, (s) =>
      s % 7 === 0 ? { phase: 'warm', reward: null } : s % 11 === 0 ? JSON.parse('{"__proto__": 5}') : {},
    );
    fs.appendFileSync(
      path.join(awkward.dir, RUN_FILES.metrics),
      'not json\n{"step": 3001, "reward": 2}\n{"step":3002,"rew',
    );
    new SummaryKeeper(awkward.dir).flush();
    updateStatus(awkward.dir, 'failed', { step: 3001, error: 'x' });
    // a run being written by a live process (this one holds its lock): its sidecar is behind, and broken
    const live = createRunFolder(home, META, { now: day(5) });
    appendSteps(live.dir, 1, 4_000);
    new SummaryKeeper(live.dir).flush();
    appendSteps(live.dir, 4_001, 4_100);
    fs.writeFileSync(
      path.join(live.dir, RUN_FILES.lock),
      JSON.stringify({ pid: process.pid, host: os.hostname(), since: new Date().toISOString() }),
    );
    updateStatus(live.dir, 'running', { pid: process.pid, step: 4_100 });
    const liveSidecar = fs.readFileSync(path.join(live.dir, SUMMARY_SIDECAR), 'utf8');

    const reference = fullScanList();
    expect(reference.map((r) => r.steps)).toEqual([5_050, 4_000, 20, 3_001, 4_100]);
    expect(coldList()).toEqual(reference);
    // The earlier version's run got its sidecar; the small one did not need one; the live run's was left to its writer.
    expect('cover' in readSummarySidecar(legacy.dir)).toBe(true);
    expect(fs.existsSync(path.join(small.dir, SUMMARY_SIDECAR))).toBe(false);
    expect(fs.readFileSync(path.join(live.dir, SUMMARY_SIDECAR), 'utf8')).toBe(liveSidecar);
    // And again from the sidecars now on disk, after the logs grew.
    appendSteps(legacy.dir, 4_001, 4_003);
    appendSteps(live.dir, 4_101, 4_110);
    fs.appendFileSync(path.join(awkward.dir, RUN_FILES.metrics), 'ard":1}\n');
    const later = fullScanList();
    expect(coldList()).toEqual(later);
    expect(later.map((r) => r.steps)).toEqual([5_050, 4_003, 20, 3_002, 4_110]);
  });
});
