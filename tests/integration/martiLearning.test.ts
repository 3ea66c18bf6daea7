/**
 * A short real MARTI training run raises the training reward: from the shipped tiny base checkpoint
 * (resources/marti/base-tiny; resources/README.md has the command that reproduces it), a homogeneous team trains on a
 * pool of four tasks for 20 steps at each of five seeds; the mean reward (share of public tests passed) of its trees
 * over the last five steps is compared with that of the first three.
 *
 * Why five seeds and these settings (issue 28, docs/results/kernel-audit.md): the earlier test (10 steps at lr 2e-3,
 * seed 2 alone) held on every kernel, but over seeds 0–9 the same settings rose at 5 seeds and fell at 5: at lr 2e-3
 * without a KL term about half the runs collapse to reward 0 (at 30 steps, too), so seed 2 was a lucky draw, not a
 * property of the trainer. At lr 5e-4 and 20 steps (measured, OpenBLAS Cooperlake, seeds 0–9) 9 seeds of 10 rise,
 * by −0.005 to 0.28, mean 0.12; seeds 0–4 rise by 0.04–0.17 under OpenBLAS's Cooperlake and Prescott kernels and
 * the stock wasm kernels alike (means 0.101, 0.101, 0.098). The test asks that at least 4 of the 5 seeds rise and that the mean rise
 * exceeds 0.04, under half the smallest mean measured; with MARTI_LEARNING_LR=1e-9 (no learning) it fails.
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import type { MartiConfig } from '../../engine/marti/configSchema';
import { createMartiTrainer } from '../../engine/marti/trainer';
import { useBackend } from '../helpers/backends';

const BASE = 'resources/marti/base-tiny';
const STEPS = 20;
const SEEDS = [0, 1, 2, 3, 4];
const MEAN_RISE = 0.04;
beforeAll(() => useBackend('wasm'));

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

/** The training rewards of STEPS steps at `seed`. */
async function rewardsAt(seed: number): Promise<number[]> {
  const cfg = parseRunConfig({
    algorithm: 'marti',
    seed,
    backend: 'wasm',
    model: { size: 'tiny', from: { kind: 'checkpoint', path: BASE } },
    task: { trainTasks: 4, rewardMode: 'fraction', maxProgramTokens: 32 },
    marti: { configuration: 'homogeneous', problemsPerStep: 4, nodesPerTree: 6, trainBatch: 24 },
    rl: { lr: Number(process.env.MARTI_LEARNING_LR ?? 5e-4), klCoef: 0 },
  }) as MartiConfig;
  const tr = await createMartiTrainer(cfg);
  const rewards: number[] = [];
  try {
    for (let s = 0; s < STEPS; s++) rewards.push((await tr.trainStep()).metrics.reward!);
  } finally {
    tr.dispose();
  }
  return rewards;
}

describe('MARTI learning', () => {
  it('short homogeneous runs from the base model raise the training reward at most seeds', async () => {
    expect(fs.existsSync(`${BASE}/model.safetensors`)).toBe(true);
    const rises: number[] = [];
    const shown: string[] = [];
    for (const seed of SEEDS) {
      const rewards = await rewardsAt(seed);
      rises.push(mean(rewards.slice(-5)) - mean(rewards.slice(0, 3)));
      shown.push(`seed ${seed}: ${rewards.map((r) => r.toFixed(2)).join(' ')}`);
    }
    const report = `${shown.join('; ')}; rises ${rises.map((r) => r.toFixed(3)).join(' ')}`;
    console.log(report);
    expect(rises.filter((r) => r > 0).length, report).toBeGreaterThanOrEqual(4);
    expect(mean(rises), report).toBeGreaterThan(MEAN_RISE);
  }, 600_000);
});
