/**
 * A short real MARTI training run raises the training reward: from the shipped tiny base checkpoint
 * (resources/marti/base-tiny; resources/README.md has the command that reproduces it), a homogeneous team trains on a pool of four tasks;
 * the mean reward (share of public tests passed) of its trees over the last five of ten steps beats that of the first
 * three (measured: 0.04 over steps 1–3, 0.22 over steps 6–10).
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../engine/runs/configSchema';
import type { MartiConfig } from '../../engine/marti/configSchema';
import { createMartiTrainer } from '../../engine/marti/trainer';
import { useBackend } from '../helpers/backends';

const BASE = 'resources/marti/base-tiny';
beforeAll(() => useBackend('wasm'));

describe('MARTI learning', () => {
  it('a short homogeneous run from the base model raises the training reward', async () => {
    expect(fs.existsSync(`${BASE}/model.safetensors`)).toBe(true);
    const cfg = parseRunConfig({
      algorithm: 'marti',
      seed: 2,
      backend: 'wasm',
      model: { size: 'tiny', from: { kind: 'checkpoint', path: BASE } },
      task: { trainTasks: 4, rewardMode: 'fraction', maxProgramTokens: 32 },
      marti: { configuration: 'homogeneous', problemsPerStep: 4, nodesPerTree: 6, trainBatch: 24 },
      rl: { lr: 2e-3, klCoef: 0 },
    }) as MartiConfig;
    const tr = await createMartiTrainer(cfg);
    const rewards: number[] = [];
    try {
      for (let s = 0; s < STEPS; s++) rewards.push((await tr.trainStep()).metrics.reward!);
    } finally {
      tr.dispose();
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = mean(rewards.slice(0, 3));
    const last = mean(rewards.slice(-5));
    expect(last, `rewards ${rewards.map((r) => r.toFixed(2)).join(' ')}`).toBeGreaterThan(first + 0.05);
  }, 120_000);
});

const STEPS = 10;
