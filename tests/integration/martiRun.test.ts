/**
 * A MARTI run through the run layer: a heterogeneous run stopped and resumed equals the uninterrupted run (metrics,
 * trees, both agents' weights, samples waiting in a not-yet-full buffer), every tree in trajectories.jsonl carries
 * every field the inspector shows, and while a step runs live.json holds its trees as they grow (and only then).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { marti } from '../../engine/marti/trainer';
import { readLiveTrajectories, type LiveTrajectories } from '../../engine/runs/folder/liveTrajectories';
import type { StepHooks } from '../../engine/training/trainer';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { runFilePaths } from '../../engine/runs/folder/runFolder';
import { resumeRun, startRun } from '../../engine/runs/runLoop';
import { useBackend } from '../helpers/backends';
import { metricLines } from '../helpers/runFixtures';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-marti-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

const config = parseRunConfig({
  algorithm: 'marti',
  seed: 7,
  backend: 'wasm',
  model: { size: 'micro' },
  task: { trainTasks: 10, maxProgramTokens: 8 },
  // 2 trees × 3 nodes a step, buffers update at 7 samples: some samples wait across a checkpoint
  marti: {
    configuration: 'heterogeneous',
    problemsPerStep: 2,
    nodesPerTree: 3,
    trainBatch: 7,
    evalNodes: 2,
    tplus: { nodes: 3 },
  },
  rl: { lr: 1e-2, klCoef: 1e-3 },
  budget: { steps: 4 },
  eval: { every: 0, items: 2 },
  checkpoint: { every: 2 },
});

describe('MARTI run', () => {
  it('stopped and resumed equals uninterrupted: metrics, trees and both agents’ weights', async () => {
    const whole = await startRun(home, config);
    expect(whole.status).toBe('finished');
    const part = await startRun(home, config, { stopAfterStep: 2 });
    expect(part.status).toBe('stopped');
    const state = JSON.parse(
      fs.readFileSync(path.join(part.dir, 'checkpoints', '2', 'trainer_state.json'), 'utf8'),
    ) as { paramSets: { buffer: unknown[] }[] };
    expect(state.paramSets.some((p) => p.buffer.length > 0)).toBe(true);
    await resumeRun(part.dir);
    const [a, b] = [runFilePaths(whole.dir), runFilePaths(part.dir)];
    expect(metricLines(b.metrics)).toEqual(metricLines(a.metrics));
    expect(metricLines(b.metrics).at(-1)!['eval.pass1']).toBeTypeOf('number');
    expect(fs.readFileSync(b.trajectories, 'utf8')).toBe(fs.readFileSync(a.trajectories, 'utf8'));
    for (const f of [
      'model.safetensors',
      'agent-beta.safetensors',
      'agent-beta_optimizer.safetensors',
      'optimizer.safetensors',
    ]) {
      const read = (dir: string) => fs.readFileSync(path.join(dir, 'checkpoints', '4', f));
      expect(read(part.dir).equals(read(whole.dir)), f).toBe(true);
    }
  });

  it('writes every tree to trajectories.jsonl with every node field', async () => {
    const r = await startRun(home, { ...config, budget: { steps: 1 } });
    const lines = fs
      .readFileSync(runFilePaths(r.dir).trajectories, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    for (const t of lines) {
      expect(t).toMatchObject({ kind: 'marti.tree', step: 1 });
      for (const k of ['treeId', 'taskId', 'statement', 'publicTests', 'agents', 'metrics', 'agentShares', 'nodes']) {
        expect(t, k).toHaveProperty(k);
      }
      expect(t.nodes).toHaveLength(4);
      for (const n of t.nodes.slice(1)) {
        for (const k of [
          'id',
          'parentId',
          'depth',
          'agent',
          'paramId',
          'prompt',
          'completion',
          'program',
          'feedback',
          'public',
          'private',
          'score',
          'expansion',
          'posteriors',
          'advantage',
          'trained',
        ]) {
          expect(n, `node field ${k}`).toHaveProperty(k);
        }
        expect(typeof n.prompt).toBe('string');
        expect(n.prompt).toContain('problem:');
        expect(typeof n.feedback).toBe('string');
        expect(n.public).toMatchObject({ total: 3 });
        expect(n.private).toMatchObject({ total: 10 });
        expect(['alpha', 'beta']).toContain(n.agent);
        expect(n.depth).toBe(t.nodes[n.parentId].depth + 1);
        expect(n.expansion.agent.chosen).toBe(n.agent);
        expect(n.posteriors.gen).toHaveProperty('mean');
        expect(typeof n.advantage).toBe('number');
      }
    }
  });

  it('while a step runs, live.json holds its trees as they grow; it is gone once they are in trajectories.jsonl', async () => {
    // Read live.json each time the run loop has just written it (the trainer's report goes through the wrapper).
    const seen: { step: number; live: LiveTrajectories | null; finalLines: number }[] = [];
    let dir = '';
    const create = marti.createTrainer.bind(marti);
    const spy = vi.spyOn(marti, 'createTrainer').mockImplementation(async (cfg, from) => {
      const trainer = await create(cfg, from);
      const trainStep = trainer.trainStep.bind(trainer);
      trainer.trainStep = (hooks?: StepHooks) =>
        trainStep({
          live: (records) => {
            hooks?.live?.(records);
            const files = runFilePaths(dir);
            seen.push({
              step: trainer.step + 1,
              live: readLiveTrajectories(files.live),
              finalLines: fs.readFileSync(files.trajectories, 'utf8').split('\n').filter(Boolean).length,
            });
          },
        });
      return trainer;
    });
    try {
      const r = await startRun(home, { ...config, budget: { steps: 2 } }, { onCreated: (c) => (dir = c.dir) });
      expect(r.status).toBe('finished');
    } finally {
      spy.mockRestore();
    }
    const files = runFilePaths(dir);
    expect(fs.existsSync(files.live)).toBe(false);
    const finals = fs
      .readFileSync(files.trajectories, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { step: number; treeId: string; nodes: { id: number; program: string | null }[] });
    // exactly one final record per tree per step: the live reports added none
    expect(finals.map((t) => t.step)).toEqual([1, 1, 2, 2]);
    // one report per round (3 nodes per tree), each written to live.json with the step in flight on every record
    expect(seen.map((s) => s.step)).toEqual([1, 1, 1, 2, 2, 2]);
    seen.forEach(({ step, live, finalLines }, i) => {
      expect(live?.step).toBe(step);
      // the step's final records are not written yet while it runs
      expect(finalLines).toBe(2 * (step - 1));
      const trees = live!.records as {
        step: number;
        treeId: string;
        live: boolean;
        nodes: { id: number; program: string | null }[];
      }[];
      const mine = finals.filter((t) => t.step === step);
      expect(trees.map((t) => [t.step, t.treeId, t.live])).toEqual(mine.map((t) => [step, t.treeId, true]));
      const round = (i % 3) + 1;
      trees.forEach((t, k) =>
        expect(t.nodes.map((n) => [n.id, n.program])).toEqual(
          mine[k]!.nodes.slice(0, round + 1).map((n) => [n.id, n.program]),
        ),
      );
    });
  });
});
