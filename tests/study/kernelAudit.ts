/**
 * The kernel audit (issue 28): runs the seeded learning tests' own workloads under whatever kernel the environment
 * selects (OPENBLAS_CORETYPE, MARS_LAB_NATIVE) and prints one JSON line per workload and seed, so the figures of each
 * test can be compared across float paths; docs/results/kernel-audit.md reports the table and the commands, one per
 * kernel (OPENBLAS_CORETYPE=…, MARS_LAB_NATIVE=0 or own). MARTI runs at the test's settings (lr 5e-4, 20 steps);
 * MARTI_LR=2e-3 MARTI_STEPS=10 gives the old test's, MARTI_KL a KL coefficient.
 *
 *   AUDIT=grpo,mars,marti,presets SEEDS=0,1,2 LABEL=Prescott OPENBLAS_CORETYPE=Prescott npx tsx tests/study/kernelAudit.ts
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MarsConfig } from '../../engine/mars/configSchema';
import { mars } from '../../engine/mars/trainer';
import type { MartiConfig } from '../../engine/marti/configSchema';
import { createMartiTrainer } from '../../engine/marti/trainer';
import { nativeKernelReport } from '../../engine/tensor/native/status';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { checkPresetPromise } from '../../engine/runs/presets/presetCheck';
import { listPresets, resolvePresetConfig } from '../../engine/runs/presets/presets';
import { initBackend } from '../../engine/tensor/backend';
import { toyFigures, trainToyGrpo } from '../helpers/grpoToy';

const parts = (process.env.AUDIT ?? 'grpo,mars,marti,presets').split(',');
const seeds = (process.env.SEEDS ?? '0,1,2').split(',').map(Number);
const label = process.env.LABEL ?? 'default';
const martiSteps = Number(process.env.MARTI_STEPS ?? 20);
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

await initBackend({ force: 'wasm' });
const emit = (o: Record<string, unknown>) => {
  const k = nativeKernelReport();
  console.log(JSON.stringify({ label, kernel: k ? `${k.kernel}${k.core ? ` ${k.core}` : ''}` : null, ...o }));
};

for (const seed of seeds) {
  if (parts.includes('grpo')) {
    const t0 = Date.now();
    emit({ test: 'grpo', seed, ...toyFigures(await trainToyGrpo(seed)), secs: (Date.now() - t0) / 1000 });
  }
  if (parts.includes('mars')) {
    const t0 = Date.now();
    const cfg = resolvePresetConfig('mars-tiny', [`seed=${seed}`, 'backend=wasm', 'rl.lr=0.001']) as MarsConfig;
    const tr = await mars.createTrainer(cfg);
    try {
      const before = (await tr.evaluate()).metrics.exactMatch!;
      for (let s = 0; s < 30; s++) await tr.trainStep();
      const after = (await tr.evaluate()).metrics.exactMatch!;
      emit({ test: 'mars', seed, before, after, rise: after - before, secs: (Date.now() - t0) / 1000 });
    } finally {
      tr.dispose();
    }
  }
  if (parts.includes('marti')) {
    const t0 = Date.now();
    const cfg = parseRunConfig({
      algorithm: 'marti',
      seed,
      backend: 'wasm',
      model: { size: 'tiny', from: { kind: 'checkpoint', path: 'resources/marti/base-tiny' } },
      task: { trainTasks: 4, rewardMode: 'fraction', maxProgramTokens: 32 },
      marti: { configuration: 'homogeneous', problemsPerStep: 4, nodesPerTree: 6, trainBatch: 24 },
      rl: { lr: Number(process.env.MARTI_LR ?? 5e-4), klCoef: Number(process.env.MARTI_KL ?? 0) },
    }) as MartiConfig;
    const tr = await createMartiTrainer(cfg);
    const rewards: number[] = [];
    try {
      for (let s = 0; s < martiSteps; s++) rewards.push((await tr.trainStep()).metrics.reward!);
    } finally {
      tr.dispose();
    }
    const first = mean(rewards.slice(0, 3));
    const last = mean(rewards.slice(-5));
    emit({
      test: 'marti',
      seed,
      steps: martiSteps,
      first,
      last,
      rise: last - first,
      rewards,
      secs: (Date.now() - t0) / 1000,
    });
  }
  if (parts.includes('presets')) {
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-audit-'));
    try {
      for (const preset of listPresets().filter((p) => p.success && (p.expectedRuntime.cpuSeconds ?? Infinity) <= 30)) {
        const check = await checkPresetPromise(home, preset, { seeds: [seed] });
        for (const o of check.outcomes) emit({ test: preset.name, seed, value: o.value, secs: o.seconds });
      }
    } finally {
      fs.rmSync(home, { recursive: true, force: true });
    }
  }
}
