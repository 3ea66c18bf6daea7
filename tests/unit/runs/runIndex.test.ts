import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { INDEX_FILE, RUN_FILES } from '../../../engine/runs/folder/home';
import { JsonlAppender, truncateTo } from '../../../engine/runs/folder/jsonl';
import { createRunFolder, updateStatus, type NewRunMeta } from '../../../engine/runs/folder/runFolder';
import { openRunIndex } from '../../../engine/runs/summary/runIndex';

const META: NewRunMeta = {
  algorithm: 'mars',
  preset: 'toy',
  config: {},
  engineVersion: '0.1.0',
  seed: 1,
  tags: ['x'],
  notes: 'n',
};

let home: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-index-'));
});
afterEach(() => {
  vi.restoreAllMocks();
  fs.rmSync(home, { recursive: true, force: true });
});

function appendMetrics(dir: string, lines: object[]): void {
  const log = new JsonlAppender(path.join(dir, RUN_FILES.metrics));
  for (const l of lines) log.append(l);
  log.close();
}

function addCheckpoint(dir: string, step: number): void {
  const ck = path.join(dir, RUN_FILES.checkpoints, String(step));
  fs.mkdirSync(ck);
  fs.writeFileSync(path.join(ck, 'config.json'), '{}');
  fs.writeFileSync(path.join(ck, 'model.safetensors'), 'x');
}

describe('openRunIndex', () => {
  it('summarises runs: status, last step, last/min/max of every metric, checkpoints', () => {
    const { id, dir } = createRunFolder(home, META);
    updateStatus(dir, 'running');
    appendMetrics(dir, [
      { step: 1, time: 1, loss: 2, reward: 0 },
      { step: 2, time: 2, loss: 5, phase: 'warmup' },
      { step: 3, time: 3, loss: 1, reward: null },
    ]);
    addCheckpoint(dir, 2);
    const [s] = openRunIndex(home).list();
    expect(s).toMatchObject({
      id,
      status: 'running',
      algorithm: 'mars',
      preset: 'toy',
      steps: 3,
      tags: ['x'],
      notes: 'n',
      checkpoints: 1,
      lastCheckpointStep: 2,
      metrics: { loss: { last: 1, min: 1, max: 5 }, reward: { last: null, min: 0, max: 0 } },
    });
    expect(s!.metrics.phase).toBeUndefined();
    expect(fs.existsSync(path.join(home, INDEX_FILE))).toBe(true);
  });

  it('gives the same summaries after index.json is deleted or damaged', () => {
    for (let i = 0; i < 3; i++) {
      const { dir } = createRunFolder(home, META);
      appendMetrics(dir, [
        { step: 1, time: 1, loss: i },
        { step: 2, time: 2, loss: i + 1 },
      ]);
      if (i === 1) addCheckpoint(dir, 2);
    }
    const before = openRunIndex(home).list();
    expect(before).toHaveLength(3);
    fs.rmSync(path.join(home, INDEX_FILE));
    expect(openRunIndex(home).list()).toEqual(before);
    fs.writeFileSync(path.join(home, INDEX_FILE), '{"version":1,"runs":{"x":');
    expect(openRunIndex(home).list()).toEqual(before);
    fs.writeFileSync(path.join(home, INDEX_FILE), JSON.stringify({ version: 1, runs: { bogus: { summary: 3 } } }));
    expect(openRunIndex(home).list()).toEqual(before);
  });

  it('picks up new runs, new metric lines (reading only the new bytes), new checkpoints, and drops removed runs', () => {
    const a = createRunFolder(home, META, { now: new Date(Date.UTC(2026, 0, 1)) });
    // Long enough that "read from the recorded offset" and "read from the start" differ by more than the fingerprint.
    appendMetrics(a.dir, [{ step: 1, time: 1, loss: 3, note: 'x'.repeat(300) }]);
    const index = openRunIndex(home);
    expect(index.list().map((s) => s.steps)).toEqual([1]);
    const metricsFile = path.join(a.dir, RUN_FILES.metrics);
    const indexed = fs.statSync(metricsFile).size;

    const b = createRunFolder(home, { ...META, preset: 'other' }, { now: new Date(Date.UTC(2026, 0, 2)) });
    appendMetrics(a.dir, [
      { step: 2, time: 2, loss: 0.5 },
      { step: 3, time: 3, loss: 4 },
    ]);
    addCheckpoint(a.dir, 2);

    // Which file each read hits, at the time of the read (descriptors are reused).
    const fds = new Map<number, string>();
    const metricReads: number[] = [];
    const realOpen = fs.openSync;
    const realRead = fs.readSync;
    vi.spyOn(fs, 'openSync').mockImplementation((p: fs.PathLike, ...rest: unknown[]) => {
      const fd = (realOpen as (...args: unknown[]) => number)(p, ...rest);
      fds.set(fd, String(p));
      return fd;
    });
    vi.spyOn(fs, 'readSync').mockImplementation((fd: number, ...rest: unknown[]) => {
      if (fds.get(fd) === metricsFile) metricReads.push(rest[3] as number);
      return (realRead as (...args: unknown[]) => number)(fd, ...rest);
    });
    const list = index.list();
    vi.restoreAllMocks();

    expect(list.map((s) => s.id)).toEqual([a.id, b.id]);
    expect(list[0]).toMatchObject({
      steps: 3,
      checkpoints: 1,
      lastCheckpointStep: 2,
      metrics: { loss: { last: 4, min: 0.5, max: 4 } },
    });
    expect(list[1]).toMatchObject({ preset: 'other', steps: null, metrics: {} });
    // Continued from the recorded offset (less the 64 bytes it compares to notice a rewritten file).
    expect(metricReads.length).toBeGreaterThan(0);
    expect(Math.min(...metricReads)).toBeGreaterThanOrEqual(indexed - 64);

    // A fresh index (another process) sees the same.
    expect(openRunIndex(home).list()).toEqual(list);

    fs.rmSync(b.dir, { recursive: true });
    expect(index.list().map((s) => s.id)).toEqual([a.id]);
  });

  it('starts over when metrics.jsonl was truncated (a resume)', () => {
    const { dir } = createRunFolder(home, META);
    const log = new JsonlAppender(path.join(dir, RUN_FILES.metrics));
    log.append({ step: 1, time: 1, loss: 1 });
    const mark = log.append({ step: 2, time: 2, loss: 2 });
    log.append({ step: 3, time: 3, loss: 100 });
    log.close();
    const index = openRunIndex(home);
    expect(index.list()[0]!.metrics.loss!.max).toBe(100);
    truncateTo(path.join(dir, RUN_FILES.metrics), mark);
    appendMetrics(dir, [
      { step: 3, time: 4, loss: 3 },
      { step: 4, time: 5, loss: 0.1 },
    ]);
    expect(index.list()[0]).toMatchObject({ steps: 4, metrics: { loss: { last: 0.1, min: 0.1, max: 3 } } });
  });

  it('lists a damaged run as corrupt with the reason, and recovers when run.json is fixed', () => {
    const { id, dir } = createRunFolder(home, META);
    const good = fs.readFileSync(path.join(dir, 'run.json'), 'utf8');
    fs.writeFileSync(path.join(dir, 'run.json'), 'not json');
    fs.mkdirSync(path.join(home, 'runs', 'stray-folder'));
    const index = openRunIndex(home);
    const list = index.list();
    expect(list.map((s) => [s.id, s.status])).toEqual([
      [id, 'corrupt'],
      ['stray-folder', 'corrupt'],
    ]);
    expect(list[0]!.error).toContain(`${path.join(dir, 'run.json')} is not valid JSON`);
    expect(list[1]!.error).toContain('is missing: this folder is not a mars-lab run');
    fs.writeFileSync(path.join(dir, 'run.json'), good);
    expect(index.list()[0]).toMatchObject({ id, status: 'created' });
  });

  it('lists nothing, and writes nothing, for a home without runs', () => {
    const empty = path.join(home, 'nothing-here');
    expect(openRunIndex(empty).list()).toEqual([]);
    expect(fs.existsSync(empty)).toBe(false);
  });
});

describe('an index entry is bounded whatever run.json holds (issue 34, Low)', () => {
  function craft(patch: (meta: Record<string, unknown>) => void): string {
    const { id, dir } = createRunFolder(home, META);
    const file = path.join(dir, RUN_FILES.meta);
    const meta = JSON.parse(fs.readFileSync(file, 'utf8')) as Record<string, unknown>;
    patch(meta);
    fs.writeFileSync(file, JSON.stringify(meta));
    return id;
  }

  it('200,000 bad tags: the run is listed corrupt with an error of a few hundred characters, index.json stays small', () => {
    const id = craft((m) => (m['tags'] = Array.from({ length: 200_000 }, (_, i) => i)));
    const row = openRunIndex(home)
      .list()
      .find((r) => r.id === id)!;
    expect(row.status).toBe('corrupt');
    expect(row.error).toMatch(/"tags\.0": .*and 199990 more/);
    expect(row.error!.length).toBeLessThan(4_000);
    expect(fs.statSync(path.join(home, INDEX_FILE)).size).toBeLessThan(64 << 10);
  });

  it('20,000 tags of 70 characters and a 1 MB note (run.json may be 4 MiB): the list shows the first 32 tags and the note cut, run.json untouched', () => {
    const id = craft((m) => {
      m['tags'] = Array.from({ length: 20_000 }, (_, i) => `tag-${i}-${'x'.repeat(64)}`);
      m['notes'] = 'n'.repeat(1_000_000);
    });
    const before = fs.readFileSync(path.join(home, 'runs', id, RUN_FILES.meta), 'utf8');
    const index = openRunIndex(home);
    const row = index.list().find((r) => r.id === id)!;
    expect(row.status).toBe('created');
    expect(row.tags).toHaveLength(32);
    expect(row.tags[0]).toMatch(/^tag-0-x+…$/);
    expect(row.tags[0]!.length).toBeLessThanOrEqual(64);
    expect(row.notes.length).toBeLessThanOrEqual(10_000);
    expect(fs.statSync(path.join(home, INDEX_FILE)).size).toBeLessThan(64 << 10);
    expect(index.get(id)!.summary.tags).toEqual(row.tags); // the same bound on a run page's summary
    expect(fs.readFileSync(path.join(home, 'runs', id, RUN_FILES.meta), 'utf8')).toBe(before);
  });
});
