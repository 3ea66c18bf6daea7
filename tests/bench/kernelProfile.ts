/**
 * Where one training step's kernel launches and kernel time go (issue 16: what to fuse next), per model size: the
 * GRPO step of engineBench profiled with tf.profile, kernels grouped by name, largest total time first. Launch counts
 * do not depend on the machine's load; times do (figures, not tests). MARS_LAB_NATIVE_FUSED=0 profiles without the
 * fused transformer ops (engine/tensor/native/fused.ts), MARS_LAB_NATIVE_ADAM=0 without the fused optimiser.
 *
 *   npx tsx tests/bench/kernelProfile.ts [--sizes tiny,small] [--top 15] [--json out.json]
 */
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sizedConfig, type ModelSize } from '../../engine/model/config';
import { cloneModel, initHfTensors, modelFromHf } from '../../engine/model/formats/hfWeights';
import { Rng } from '../../engine/random/prng';
import { Adam } from '../../engine/rl/adam';
import { adamVariables, policyUpdate } from '../../engine/rl/policyUpdate';
import type { Sample } from '../../engine/rl/sample';
import { initBackend, tf } from '../../engine/tensor/backend';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: 'tiny,small' },
    top: { type: 'string', default: '15' },
    json: { type: 'string' },
  },
});
const B = 16;
const T = 64;

const report = await initBackend({ force: 'wasm' });
console.log(
  `kernel profile: ${report.native.detail}; optimiser ${report.native.adam ? 'native' : 'tensor ops'}; ${report.native.fused ? 'fused ops' : 'stock small ops'}; load ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
const out: Record<string, unknown> = {};
for (const size of args.sizes.split(',') as ModelSize[]) {
  const cfg = sizedConfig(size);
  const rng = new Rng(1);
  const model = modelFromHf(
    cfg,
    initHfTensors(cfg, () => rng.normal()),
  );
  const reference = cloneModel(model, false);
  const opt = new Adam(adamVariables(model), { lr: 1e-5 });
  const samples: Sample[] = Array.from({ length: B }, (_, i) => {
    const tokens = Array.from({ length: T }, () => rng.int(cfg.vocab_size));
    return {
      role: 'node',
      groupId: 'g',
      paramId: 'p',
      tokens,
      lossMask: tokens.map((_, t) => (t > 0 ? 1 : 0)),
      behaviourLogProbs: tokens.map(() => 0),
      reward: i % 2,
      advantage: i % 2 ? 1 : -1,
    };
  });
  const step = () => policyUpdate(model, opt, samples, { loss: { kind: 'ppoToken', klCoef: 1e-3 }, reference });
  await step(); // warm-up
  const t0 = performance.now();
  const info = await tf.profile(async () => {
    await step();
  });
  const wall = performance.now() - t0;
  // tf.profile also lists custom-gradient scopes ('forward', 'unnamed scope', op names ending in __op) whose time
  // includes the kernels inside them: those are shown apart and left out of the launch count and the total.
  const isKernel = (name: string) => tf.getKernel(name, 'wasm') !== undefined;
  const byName = new Map<string, { calls: number; ms: number }>();
  const scopes = new Map<string, { calls: number; ms: number }>();
  let kernelMs = 0;
  let launches = 0;
  for (const k of info.kernels) {
    const ms = typeof k.kernelTimeMs === 'number' ? k.kernelTimeMs : 0;
    if (!isKernel(k.name)) {
      const e = scopes.get(k.name) ?? { calls: 0, ms: 0 };
      e.calls++;
      e.ms += ms;
      scopes.set(k.name, e);
      continue;
    }
    kernelMs += ms;
    launches++;
    const e = byName.get(k.name) ?? { calls: 0, ms: 0 };
    e.calls++;
    e.ms += ms;
    byName.set(k.name, e);
  }
  const rows = [...byName.entries()].sort((a, b) => b[1].ms - a[1].ms);
  console.log(
    `\n${size}: ${launches} kernel launches, ${kernelMs.toFixed(0)} ms kernel time, ${wall.toFixed(0)} ms profiled step (profiling adds reads)`,
  );
  for (const [name, e] of rows.slice(0, Number(args.top))) {
    console.log(
      `  ${name.padEnd(24)} ${String(e.calls).padStart(5)} calls ${e.ms.toFixed(1).padStart(8)} ms ${((100 * e.ms) / kernelMs).toFixed(1).padStart(5)}%`,
    );
  }
  console.log(
    `  custom-gradient scopes (time includes their kernels): ${[...scopes.entries()].map(([n, e]) => `${n} ×${e.calls} ${e.ms.toFixed(0)} ms`).join(', ') || 'none'}`,
  );
  out[size] = {
    launches,
    kernelMs,
    wallMs: wall,
    kernels: Object.fromEntries(rows),
    scopes: Object.fromEntries(scopes),
  };
  opt.dispose();
  model.dispose();
  reference.dispose();
}
if (args.json) {
  fs.writeFileSync(args.json, JSON.stringify({ date: new Date().toISOString(), backend: report, rows: out }, null, 2));
}
process.exit(0);
