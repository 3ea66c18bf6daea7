/**
 * A short real MARS training run raises exact match (the MARS issue's "Tests that must exist": a short real training
 * run on a one-hop-only tiny world raises the training reward). The mars-tiny preset as shipped (one-hop questions of
 * 128 training worlds, from resources/mars/base-tiny; resources/README.md has the command that reproduces it) trains
 * for 30 steps at each of three seeds; greedy exact match on the 164 held-out questions of worlds never trained on is
 * measured before and after. A held-out figure is the stronger claim (the policy learned to research, not to recall)
 * and, being greedy on a fixed question set, far less noisy than a window of training rewards.
 *
 * Why three seeds and these margins (issue 28, docs/results/kernel-audit.md): one seed's figure is a figure of one
 * float path. At seed 2 alone the rise was 0.055 on the EPYC it was written on, 0.037 after a later rollout fix and
 * 0.036 on an Intel Xeon (the CI failure against a +0.04 threshold). Measured at seeds 0–2 under OpenBLAS's Cooperlake,
 * Haswell and Prescott kernels and the stock wasm kernels (tests/study/kernelAudit.ts): every run rises (by 0.037 to
 * 0.122, i.e. 6 to 20 questions), and the mean rise over the three seeds is 0.053–0.077 on every kernel. The test asks
 * that each seed rises and that the mean rise exceeds 0.025 (4 questions), half the smallest mean measured; with
 * MARS_LEARNING_LR=1e-9 (no learning) nothing moves and it fails. About 3 minutes on an idle 2-core VM.
 */
import fs from 'node:fs';
import { beforeAll, describe, expect, it } from 'vitest';
import type { MarsConfig } from '../../engine/mars/configSchema';
import { mars } from '../../engine/mars/trainer';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { useBackend } from '../helpers/backends';

const BASE = 'resources/mars/base-tiny';
const STEPS = 30;
const SEEDS = [0, 1, 2];
const MEAN_RISE = 0.025;
beforeAll(() => useBackend('wasm'));

/** Held-out exact match before and after STEPS steps of mars-tiny at `seed`. */
async function run(seed: number): Promise<{ seed: number; before: number; after: number }> {
  const cfg = resolvePresetConfig('mars-tiny', [
    `seed=${seed}`,
    'backend=wasm',
    `rl.lr=${process.env.MARS_LEARNING_LR ?? '0.001'}`,
  ]) as MarsConfig;
  const tr = await mars.createTrainer(cfg);
  try {
    const before = (await tr.evaluate()).metrics.exactMatch!;
    for (let s = 0; s < STEPS; s++) await tr.trainStep();
    const after = (await tr.evaluate()).metrics.exactMatch!;
    return { seed, before, after };
  } finally {
    tr.dispose();
  }
}

describe('MARS learning', () => {
  it('short runs on one-hop questions raise held-out exact match at every seed', async () => {
    expect(fs.existsSync(`${BASE}/model.safetensors`)).toBe(true);
    const runs = [];
    for (const seed of SEEDS) runs.push(await run(seed));
    const shown = runs.map((r) => `seed ${r.seed}: ${r.before.toFixed(3)} -> ${r.after.toFixed(3)}`).join('; ');
    console.log(`held-out exact match ${shown}`);
    for (const r of runs) expect(r.after, shown).toBeGreaterThan(r.before);
    const meanRise = runs.reduce((a, r) => a + r.after - r.before, 0) / runs.length;
    expect(meanRise, shown).toBeGreaterThan(MEAN_RISE);
  }, 1_800_000);
});
