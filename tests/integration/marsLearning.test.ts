/**
 * A short real MARS training run on a one-hop-only tiny world raises the training reward (the MARS issue's "Tests that
 * must exist"): from the shipped base model (resources/mars/base-tiny; resources/README.md has the command that
 * reproduces it), the full dual system trains on the one-hop questions of a single training world; the mean exact-match
 * reward of the last four of twelve steps beats that of the first three. Measured (wasm, 2026-11-30): rewards
 * 0.05 0 0.05 0.09 0 0.05 0.09 0.03 0.03 0.23 0.14 0.28, first three 0.03, last four 0.17; with rl.lr = 1e-9 instead,
 * 0.05 0.03 0.02 0.08 0 0.03 0.11 0.09 0 0.03 0.05 0.03 (last four 0.03), so the test fails without learning.
 *
 * What it shows is that the algorithm improves the policy on its training questions, not that it learns to research:
 * the base model read this world's pages in pretraining, and held-out exact match stays at 0 (docs/results/mars.md).
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { MarsConfig } from '../../engine/mars/configSchema';
import { mars } from '../../engine/mars/trainer';
import { resolvePresetConfig } from '../../engine/runs/presets';
import { useBackend } from '../helpers/backends';

const BASE = 'resources/mars/base-tiny';
const STEPS = 12;
beforeAll(() => useBackend('wasm'));

describe('MARS learning', () => {
  it('a short run on a one-hop tiny world raises the training reward', async () => {
    expect(fs.existsSync(`${BASE}/model.safetensors`)).toBe(true);
    const cfg = resolvePresetConfig('mars-tiny', ['seed=2', 'backend=wasm', 'task.trainWorlds=1', 'task.families=["direct","paraphrase"]', 'rl.lr=0.001']) as MarsConfig;
    const tr = await mars.createTrainer(cfg);
    const rewards: number[] = [];
    try {
      for (let s = 0; s < STEPS; s++) rewards.push((await tr.trainStep()).metrics.reward!);
    } finally {
      tr.dispose();
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = mean(rewards.slice(0, 3));
    const last = mean(rewards.slice(-4));
    expect(last, `rewards ${rewards.map((r) => r.toFixed(2)).join(' ')}`).toBeGreaterThan(first + 0.05);
  }, 240_000);
});
