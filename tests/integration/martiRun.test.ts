/**
 * A MARTI run through the run layer: a heterogeneous run stopped and resumed equals the uninterrupted run (metrics,
 * trees, both agents' weights, samples waiting in a not-yet-full buffer), and every tree in trajectories.jsonl carries
 * every field the inspector shows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../engine/runs/configSchema';
import { runFilePaths } from '../../engine/runs/runFolder';
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
  marti: { configuration: 'heterogeneous', problemsPerStep: 2, nodesPerTree: 3, trainBatch: 7, evalNodes: 2, tplus: { nodes: 3 } },
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
    const state = JSON.parse(fs.readFileSync(path.join(part.dir, 'checkpoints', '2', 'trainer_state.json'), 'utf8')) as { paramSets: { buffer: unknown[] }[] };
    expect(state.paramSets.some((p) => p.buffer.length > 0)).toBe(true);
    await resumeRun(part.dir);
    const [a, b] = [runFilePaths(whole.dir), runFilePaths(part.dir)];
    expect(metricLines(b.metrics)).toEqual(metricLines(a.metrics));
    expect(metricLines(b.metrics).at(-1)!['eval.pass1']).toBeTypeOf('number');
    expect(fs.readFileSync(b.trajectories, 'utf8')).toBe(fs.readFileSync(a.trajectories, 'utf8'));
    for (const f of ['model.safetensors', 'agent-beta.safetensors', 'agent-beta_optimizer.safetensors', 'optimizer.safetensors']) {
      const read = (dir: string) => fs.readFileSync(path.join(dir, 'checkpoints', '4', f));
      expect(read(part.dir).equals(read(whole.dir)), f).toBe(true);
    }
  });

  it('writes every tree to trajectories.jsonl with every node field', async () => {
    const r = await startRun(home, { ...config, budget: { steps: 1 } });
    const lines = fs.readFileSync(runFilePaths(r.dir).trajectories, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(lines).toHaveLength(2);
    for (const t of lines) {
      expect(t).toMatchObject({ kind: 'marti.tree', step: 1 });
      for (const k of ['treeId', 'taskId', 'statement', 'publicTests', 'agents', 'metrics', 'agentShares', 'nodes']) expect(t, k).toHaveProperty(k);
      expect(t.nodes).toHaveLength(4);
      for (const n of t.nodes.slice(1)) {
        for (const k of ['id', 'parentId', 'depth', 'agent', 'paramId', 'prompt', 'completion', 'program', 'feedback', 'public', 'private', 'score', 'expansion', 'posteriors', 'advantage', 'trained']) {
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
});
