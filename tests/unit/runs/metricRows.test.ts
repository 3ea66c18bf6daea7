/**
 * A run's pre-parsed metric rows (engine/runs/summary/metricRows.ts, kept by the run loop's summary keeper): the overlay's
 * columns read from them, then from the log past them, equal parsing every line of the log; a cold read of a covered
 * log reads only its few checked bytes and its tail; rows that no longer describe the log (a resume cut it back) are
 * not used.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { clearSeriesCaches, runsMetricSeries } from '../../../engine/api/views/runsSeries';
import { decimate } from '../../../engine/runs/summary/decimate';
import { RUN_FILES } from '../../../engine/runs/folder/home';
import { JsonlAppender } from '../../../engine/runs/folder/jsonl';
import { createRunFolder, type NewRunMeta } from '../../../engine/runs/folder/runFolder';
import { isRowsFile } from '../../../engine/runs/summary/metricRows';
import { SummaryKeeper } from '../../../engine/runs/summary/summarySidecar';
import { parsedColumn } from '../../helpers/metricReference';

const META: NewRunMeta = {
  algorithm: 'seqgrpo',
  preset: 'toy',
  config: { budget: { steps: 100 } },
  engineVersion: '0',
  seed: 1,
  tags: [],
  notes: '',
};

let home: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-rows-'));
  clearSeriesCaches();
});
afterEach(() => {
  vi.restoreAllMocks();
  fs.rmSync(home, { recursive: true, force: true });
});

function append(dir: string, records: object[]): void {
  const log = new JsonlAppender(path.join(dir, RUN_FILES.metrics));
  for (const r of records) log.append(r);
  log.close();
}

const steps = (from: number, to: number, extra: (s: number) => object = () => ({})) =>
  Array.from({ length: to - from + 1 }, (_, i) => {
    const s = from + i;
    return { step: s, time: 1e9 + s / 3, reward: Math.sin(s) / 7, loss: s % 9 === 0 ? null : 1 / s, ...extra(s) };
  });

const rowsFiles = (dir: string) => fs.readdirSync(dir).filter(isRowsFile);

/** Series of `names` for one run as the overlay asks them, and the bytes of metrics.jsonl read to answer. */
function overlay(runId: string, dir: string, names: string[], x: 'step' | 'time') {
  const file = path.join(dir, RUN_FILES.metrics);
  const fds = new Map<number, string>();
  let bytes = 0;
  const realOpen = fs.openSync;
  const realRead = fs.readSync;
  vi.spyOn(fs, 'openSync').mockImplementation((p: fs.PathLike, ...rest: unknown[]) => {
    const fd = (realOpen as (...args: unknown[]) => number)(p, ...rest);
    fds.set(fd, String(p));
    return fd;
  });
  vi.spyOn(fs, 'readSync').mockImplementation((fd: number, ...rest: unknown[]) => {
    const n = (realRead as (...args: unknown[]) => number)(fd, ...rest);
    if (fds.get(fd) === file) bytes += n;
    return n;
  });
  try {
    const answer = runsMetricSeries({ runIds: [runId], names, x, width: 50 }, { dirOf: () => dir });
    return { run: answer.runs[0]!, bytes };
  } finally {
    vi.restoreAllMocks();
  }
}

/** What parsing every line of the log gives, decimated as the overlay decimates. */
function expected(dir: string, name: string, x: 'step' | 'time') {
  const c = parsedColumn(fs.readFileSync(path.join(dir, RUN_FILES.metrics), 'utf8'), name, x);
  const b = decimate(
    c.x.map((xv, i) => ({ x: xv, y: c.y[i]! })),
    50,
  );
  return { x: b.map((p) => p.x), min: b.map((p) => p.min), max: b.map((p) => p.max), last: b.map((p) => p.last) };
}

describe('pre-parsed metric rows', () => {
  it('the overlay from the rows and the log past them equals parsing every line, and reads only the tail of a 1 MB log', () => {
    const { id, dir } = createRunFolder(home, META);
    // lines of awkward shapes among the run loop's: a string, a repeated key (JSON.parse keeps the last), an eval
    // metric every 50 steps, a torn line, a metric named __proto__
    append(
      dir,
      steps(1, 15_000, (s) =>
        s % 50 === 0 ? { 'eval.accuracy': s / 15_000 } : s % 777 === 0 ? JSON.parse('{"__proto__": 3}') : {},
      ),
    );
    fs.appendFileSync(
      path.join(dir, RUN_FILES.metrics),
      '{"step":15001,"reward":1,"reward":2}\n{"step":15002,"phase":"x","reward":0.5}\n{"step":15003,"rew',
    );
    new SummaryKeeper(dir).flush();
    expect(rowsFiles(dir)).toHaveLength(1);
    expect(fs.statSync(path.join(dir, rowsFiles(dir)[0]!)).size).toBeGreaterThan(0);
    // the log grows past the rows
    fs.appendFileSync(path.join(dir, RUN_FILES.metrics), 'ard":9}\n');
    append(dir, steps(15_004, 15_020));
    const size = fs.statSync(path.join(dir, RUN_FILES.metrics)).size;
    expect(size).toBeGreaterThan(1e6);

    const cold = overlay(
      id,
      dir,
      ['reward', 'loss', 'eval.accuracy', '__proto__', 'missing', 'reward', 'step'],
      'step',
    );
    for (const name of ['reward', 'loss', 'eval.accuracy', '__proto__', 'step']) {
      expect(Object.hasOwn(cold.run.series, name), name).toBe(true);
      expect(cold.run.series[name], name).toEqual(expected(dir, name, 'step'));
    }
    expect(Object.hasOwn(cold.run.series, 'missing')).toBe(false);
    // (step, asked as a metric, is read from the log: the rows hold no step column; so the log is read once here)
    clearSeriesCaches();
    const byRows = overlay(id, dir, ['reward', 'loss'], 'time');
    for (const name of ['reward', 'loss']) expect(byRows.run.series[name], name).toEqual(expected(dir, name, 'time'));
    // A few bytes checked at the start and before the covered offset, then the lines after it.
    expect(byRows.bytes).toBeGreaterThan(0);
    expect(byRows.bytes).toBeLessThan(32 << 10); // (with the progress's last lines: 16 KiB)
  });

  it('rows that no longer describe the log (cut back by a resume, then rewritten) are not used', () => {
    const { id, dir } = createRunFolder(home, META);
    append(dir, steps(1, 3_000));
    new SummaryKeeper(dir).flush();
    const [oldRows] = rowsFiles(dir);
    const file = path.join(dir, RUN_FILES.metrics);
    // a resume from step 1,000: the log cut there, then other values written for the same steps
    const text = fs.readFileSync(file, 'utf8');
    fs.writeFileSync(file, text.split('\n').slice(0, 1000).join('\n') + '\n');
    append(
      dir,
      steps(1_001, 3_000).map((r) => ({ ...r, reward: -r.reward })),
    );
    const { run } = overlay(id, dir, ['reward'], 'step');
    expect(run.series.reward).toEqual(expected(dir, 'reward', 'step'));

    // the writer's next process continues from the log as it is: its rows are read from the start again, into a file
    // of a new generation (a reader holding the old sidecar never reads them under the old names); the old one goes
    new SummaryKeeper(dir).flush();
    expect(rowsFiles(dir)).toHaveLength(1);
    expect(rowsFiles(dir)[0]).not.toBe(oldRows);
    clearSeriesCaches();
    const again = overlay(id, dir, ['reward'], 'step');
    expect(again.run.series.reward).toEqual(expected(dir, 'reward', 'step'));
    expect(again.bytes).toBeLessThan(20 << 10);
  });

  it('a sidecar that points its rows at another path is not taken', () => {
    const { id, dir } = createRunFolder(home, META);
    append(dir, steps(1, 500));
    new SummaryKeeper(dir).flush();
    const sidecar = path.join(dir, 'metrics.summary.json');
    const data = JSON.parse(fs.readFileSync(sidecar, 'utf8')) as { rows: { file: string } };
    fs.copyFileSync(path.join(dir, data.rows.file), path.join(home, 'elsewhere.bin'));
    data.rows.file = '../../elsewhere.bin';
    fs.writeFileSync(sidecar, JSON.stringify(data));
    const { run, bytes } = overlay(id, dir, ['reward'], 'step');
    expect(run.series.reward).toEqual(expected(dir, 'reward', 'step'));
    expect(bytes).toBeGreaterThanOrEqual(fs.statSync(path.join(dir, RUN_FILES.metrics)).size); // the log, read whole
  });
});
