/**
 * eval and compare: a fixed held-out set whose identity travels with the results, per-item outcomes, a cache keyed
 * by (weights, evaluation identity), and a paired comparison of two checkpoints on the same items.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Rng } from '../../engine/random/prng';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { compareCheckpoints, evaluateCheckpoint } from '../../engine/runs/evaluation/evaluation';
import { startRun } from '../../engine/runs/runLoop';
import { SeqTask } from '../../engine/seqgrpo/task';
import { useBackend } from '../helpers/backends';
import { quickConfig } from '../helpers/runFixtures';

let home: string;
let ck: (step: number) => string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-eval-'));
  const cfg = parseRunConfig({
    ...quickConfig({ steps: 60, checkpointEvery: 30, evalEvery: 0 }),
    task: { kind: 'copy', symbols: 5, length: 3, groupSize: 16, promptsPerStep: 4 },
    eval: { every: 0, items: 20 },
  });
  const run = await startRun(home, cfg);
  ck = (step) => path.join(run.dir, 'checkpoints', String(step));
}, 120_000);
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('evaluation', () => {
  it('held-out items are never training inputs, and training draws never produce them', () => {
    const task = new SeqTask({
      kind: 'reverse',
      symbols: 4,
      length: 4,
      trainSeed: 1,
      evalSeed: 2,
      heldoutFraction: 0.25,
    });
    const heldout = new Set(task.evalItems(40).map((it) => it.input.join(',')));
    expect(heldout.size).toBe(40);
    const rng = new Rng(9);
    for (let i = 0; i < 2000; i++) expect(heldout.has(task.sampleTrain(rng).input.join(','))).toBe(false);
  });

  it('writes per-item outcomes with the evaluation identity, and a second call is served from the cache', async () => {
    const first = await evaluateCheckpoint(home, ck(30));
    expect(first.cached).toBe(false);
    expect(first.items).toHaveLength(20);
    expect(first.identity).toMatchObject({ algorithm: 'seqgrpo', split: 'heldout', evalSeed: 2, items: 20 });
    const stored = JSON.parse(fs.readFileSync(first.file, 'utf8'));
    expect(stored.items.map((i: { id: string }) => i.id)).toEqual(first.items.map((i) => i.id));
    expect(first.metrics.accuracy).toBeCloseTo(first.items.filter((i) => i.correct).length / 20, 12);
    const again = await evaluateCheckpoint(home, ck(30));
    expect(again.cached).toBe(true);
    expect(again.metrics).toEqual(first.metrics);
    // another checkpoint is another cache entry
    expect((await evaluateCheckpoint(home, ck(60))).cached).toBe(false);
  });

  it('compare pairs the same items: flips, McNemar and the bootstrap interval are consistent with the outcomes', async () => {
    const c = await compareCheckpoints(home, ck(30), ck(60));
    expect(c.a.items.map((i) => i.id)).toEqual(c.b.items.map((i) => i.id));
    const n01 = c.a.items.filter((it, i) => !it.correct && c.b.items[i]!.correct).length;
    const n10 = c.a.items.filter((it, i) => it.correct && !c.b.items[i]!.correct).length;
    expect(c.flippedToRight).toHaveLength(n01);
    expect(c.flippedToWrong).toHaveLength(n10);
    expect(c.mcnemar).toMatchObject({ n01, n10 });
    const diff = c.metrics.find((m) => m.name === 'positionAccuracy')!.diff;
    expect(c.scoreDiff.meanDiff).toBeCloseTo(diff, 10);
    expect(c.scoreDiff.low).toBeLessThanOrEqual(diff);
    expect(c.scoreDiff.high).toBeGreaterThanOrEqual(diff);
    // training helped on held-out inputs (the later checkpoint is better), and the comparison says so
    expect(c.b.metrics.positionAccuracy!).toBeGreaterThan(c.a.metrics.positionAccuracy!);
    // comparing a checkpoint with itself: no flips, p = 1
    const same = await compareCheckpoints(home, ck(60), ck(60));
    expect(same.flippedToRight.length + same.flippedToWrong.length).toBe(0);
    expect(same.mcnemar.pValue).toBe(1);
  });
});
