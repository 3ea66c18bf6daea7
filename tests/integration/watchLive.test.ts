/**
 * A run started from a terminal appears live to a watcher (as the app's windows will see it): created, running,
 * every metrics line in order, its checkpoints, finished — from folders, not from the process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { watchHome, type HomeWatcher, type RunEvent } from '../../engine/runs/watch/watcher';
import { cli } from '../helpers/cli';
import { quickConfig } from '../helpers/runFixtures';

let home: string;
let watcher: HomeWatcher | undefined;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-live-'));
});
afterAll(async () => {
  await watcher?.close();
  fs.rmSync(home, { recursive: true, force: true });
});

describe('watching a terminal run', () => {
  it('sees the run appear, every metrics step once and in order, its checkpoints, and its end', async () => {
    const events: RunEvent[] = [];
    watcher = await watchHome(home, (e) => events.push(e));
    const cfg = path.join(home, 'c.json');
    fs.writeFileSync(cfg, JSON.stringify(quickConfig({ steps: 20, checkpointEvery: 5, evalEvery: 10 })));
    const r = await cli(['train', '--config', cfg, '--home', home, '--json']);
    expect(r.code).toBe(0);
    const runId = JSON.parse(r.stdout.trim().split('\n').at(-1)!).runId as string;
    // let the last appends' events arrive (liveness, not a latency assertion)
    for (let i = 0; i < 100 && !events.some((e) => e.type === 'runStatus' && e.status === 'finished'); i++) {
      await new Promise((res) => setTimeout(res, 50));
    }
    const ours = events.filter((e) => 'runId' in e && e.runId === runId);
    expect(ours[0]!.type).toBe('runCreated');
    const steps = ours.flatMap((e) => (e.type === 'metrics' ? e.points.map((p) => p.step) : []));
    expect(steps).toEqual([...Array(20).keys()].map((i) => i + 1));
    expect(ours.filter((e) => e.type === 'checkpointAdded').map((e) => (e as { step: number }).step)).toEqual([
      5, 10, 15, 20,
    ]);
    // The run is announced with the status it had when first read (created, or already running when the folder and
    // the switch to running fall into one watcher batch, as under load); later changes come as runStatus events.
    const statuses = ours.flatMap((e) =>
      e.type === 'runCreated' ? [e.meta.status] : e.type === 'runStatus' ? [e.status] : [],
    );
    expect(statuses).toContain('running');
    expect(statuses.at(-1)).toBe('finished');
    expect(ours.some((e) => e.type === 'trajectories')).toBe(true);
  }, 60_000);
});
