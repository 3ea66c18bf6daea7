/**
 * Pretraining makes a base model that writes well-formed answers of the pretraining transformation but rarely solves
 * the RL task, and an RL run can start from it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { evaluateCheckpoint } from '../../engine/runs/evaluation/evaluation';
import { pretrain } from '../../engine/runs/presets/pretrain';
import { startRun } from '../../engine/runs/runLoop';
import { quickConfig } from '../helpers/runFixtures';
import { useBackend } from '../helpers/backends';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-pretrain-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('pretrain', () => {
  it('learns the pretraining transformation on held-out inputs, not the RL task, and RL can start from it', async () => {
    const base = {
      ...quickConfig({ steps: 3 }),
      task: { kind: 'reverse', pretrainKind: 'copy', symbols: 5, length: 4, groupSize: 8, promptsPerStep: 2 },
      pretrain: { steps: 200, lr: 3e-3, batch: 32 },
      eval: { every: 0, items: 40 },
    } as const;
    const config = parseRunConfig(base);
    const out = path.join(home, 'base');
    const r = await pretrain(config, out);
    expect(r.steps).toBe(200);
    const onCopy = await evaluateCheckpoint(
      home,
      out,
      parseRunConfig({ ...base, task: { ...base.task, kind: 'copy' } }),
    );
    const onReverse = await evaluateCheckpoint(home, out);
    expect(onCopy.metrics.accuracy).toBeGreaterThan(0.9);
    expect(onReverse.metrics.accuracy).toBeLessThan(0.3);
    await expect(pretrain(config, out)).rejects.toThrow(/already exists \(add --force/);

    const fromBase = parseRunConfig({ ...base, model: { size: 'micro', from: { kind: 'checkpoint', path: out } } });
    const run = await startRun(home, fromBase);
    const scratch = await startRun(home, config);
    // the run starts from the base: its first rollouts are mostly copies of the input; a random policy's are not
    const copyShare = (dir: string) => {
      const first = fs
        .readFileSync(path.join(dir, 'trajectories.jsonl'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .filter((t) => t.step === 1);
      const rollouts = first.flatMap((t: { input: string; rollouts: { output: string }[] }) =>
        t.rollouts.map((r) => r.output === t.input.replace(/<bos>\s*|\s*<sep>/g, '')),
      );
      return rollouts.filter(Boolean).length / rollouts.length;
    };
    expect(copyShare(run.dir)).toBeGreaterThan(0.5);
    expect(copyShare(scratch.dir)).toBeLessThan(0.1);
  }, 120_000);
});
