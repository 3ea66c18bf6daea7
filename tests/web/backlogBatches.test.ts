/**
 * A run copied into the home with a large backlog reaches the windows in bounded events (issue 15): the host's pushed
 * metrics and trajectories events each carry at most EVENT_BATCH_BYTES of JSON, and together they are the whole log, in
 * order. Before, the whole log was one event (a 250 MB log became one 233 MB socket message).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent } from '../../engine/api/contract/contract';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { RUN_FILES } from '../../engine/runs/folder/home';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { batchBySize, EVENT_BATCH_BYTES } from '../../engine/runs/watch/watcher';

let home: string;
let elsewhere: string;
let host: Host;
const events: ApiEvent[] = [];

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-backlog-'));
  elsewhere = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-backlog-src-'));
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  host.subscribe((event) => events.push(event));
});

afterAll(async () => {
  await host?.close();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(elsewhere, { recursive: true, force: true });
});

async function until(what: string, predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 600 && !predicate(); i++) await new Promise((r) => setTimeout(r, 100));
  if (!predicate()) throw new Error(`gave up waiting for ${what}`);
}

describe('a copied-in run with a large backlog', () => {
  it('is pushed in bounded events whose concatenation is the whole log', async () => {
    // A finished run, written elsewhere, then moved into the watched home in one rename (as a copy would land).
    const { id, dir } = createRunFolder(elsewhere, {
      algorithm: 'seqgrpo',
      config: {},
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    const metrics = Array.from({ length: 20_000 }, (_, i) => ({
      step: i + 1,
      time: 1_700_000_000 + i,
      reward: i / 7,
      loss: 1 / (i + 1),
      'eval.pass@1': (i % 100) / 100,
    }));
    const trajectories = Array.from({ length: 1_500 }, (_, i) => ({
      step: i + 1,
      group: i % 8,
      text: `episode ${i} `.padEnd(2_000, 'x'),
    }));
    fs.writeFileSync(path.join(dir, RUN_FILES.metrics), metrics.map((m) => JSON.stringify(m) + '\n').join(''));
    fs.writeFileSync(
      path.join(dir, RUN_FILES.trajectories),
      trajectories.map((t) => JSON.stringify(t) + '\n').join(''),
    );
    expect(fs.statSync(path.join(dir, RUN_FILES.metrics)).size).toBeGreaterThan(2 * EVENT_BATCH_BYTES);
    expect(fs.statSync(path.join(dir, RUN_FILES.trajectories)).size).toBeGreaterThan(2 * EVENT_BATCH_BYTES);
    fs.renameSync(dir, path.join(home, 'runs', id));

    const metricEvents = (): Extract<ApiEvent, { type: 'metrics' }>[] =>
      events.filter((e): e is Extract<ApiEvent, { type: 'metrics' }> => e.type === 'metrics' && e.runId === id);
    const trajectoryEvents = (): Extract<ApiEvent, { type: 'trajectories' }>[] =>
      events.filter(
        (e): e is Extract<ApiEvent, { type: 'trajectories' }> => e.type === 'trajectories' && e.runId === id,
      );
    await until('every metrics line', () => metricEvents().reduce((n, e) => n + e.points.length, 0) >= metrics.length);
    await until(
      'every trajectories line',
      () => trajectoryEvents().reduce((n, e) => n + e.records.length, 0) >= trajectories.length,
    );

    // Several events, each bounded as a socket message would carry it ({event}), never one the size of the log.
    for (const list of [metricEvents(), trajectoryEvents()]) {
      expect(list.length).toBeGreaterThan(1);
      for (const event of list) {
        expect(Buffer.byteLength(JSON.stringify({ event }))).toBeLessThanOrEqual(EVENT_BATCH_BYTES + 1024);
      }
    }
    // In order, nothing lost, nothing twice.
    expect(metricEvents().flatMap((e) => e.points)).toEqual(metrics);
    expect(trajectoryEvents().flatMap((e) => e.records)).toEqual(trajectories);
  }, 120_000);
});

describe('batchBySize', () => {
  it('keeps a small read whole, and splits a large one into bounded runs in order; a record over the bound goes alone', () => {
    const small = [{ a: 1 }, { a: 2 }];
    expect(batchBySize(small, 100, 1000)).toEqual([small]);
    const items = [{ t: 'x'.repeat(300) }, { t: 'y'.repeat(300) }, { t: 'z'.repeat(5000) }, { t: 'w'.repeat(10) }];
    const batches = batchBySize(items, 10_000, 1000);
    expect(batches.flat()).toEqual(items);
    expect(batches).toEqual([[items[0], items[1]], [items[2]], [items[3]]]);
    for (const b of batches) if (b.length > 1) expect(Buffer.byteLength(JSON.stringify(b))).toBeLessThanOrEqual(1000);
  });
});
