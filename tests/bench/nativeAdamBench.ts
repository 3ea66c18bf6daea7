/**
 * The fused native optimiser against the JS one (issue 16), interleaved in one process so that a loaded machine
 * disturbs both sides alike (figures, not tests):
 *
 * - update: `Adam.step` alone on fixed random gradients of the model's shape, the two optimisers alternating (ABBA);
 * - step: the whole GRPO training step of engineBench (forward, backward, Adam) with either optimiser, alternating
 *   the same way on one model (each optimiser keeps its own moments; a step's time does not depend on the values).
 *
 * Wall and CPU ms (user + system of the process) per call, median over the repeats, and the load average.
 *
 *   npx tsx tests/bench/nativeAdamBench.ts [--sizes tiny,small,medium] [--repeats 6] [--json out.json]
 */
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sizedConfig, parameterCount, type ModelSize } from '../../engine/model/config';
import { cloneModel, initHfTensors, modelFromHf } from '../../engine/model/formats/hfWeights';
import { Rng } from '../../engine/random/prng';
import { Adam } from '../../engine/rl/adam';
import { fusedUpdateCount } from '../../engine/rl/nativeAdam';
import { adamVariables, policyUpdate } from '../../engine/rl/policyUpdate';
import type { Sample } from '../../engine/rl/sample';
import { initBackend, tf } from '../../engine/tensor/backend';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: 'tiny,small,medium' },
    repeats: { type: 'string', default: '6' },
    json: { type: 'string' },
  },
});
const B = 16;
const T = 64;

interface Timed {
  wall: number;
  cpu: number;
}

async function timed(f: () => Promise<unknown>): Promise<Timed> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await f();
  const wall = performance.now() - t0;
  const c = process.cpuUsage(c0);
  return { wall, cpu: (c.user + c.system) / 1000 };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/** ABBA order over `repeats` rounds after one warm-up of each; medians of wall and CPU ms per side. */
async function interleave(repeats: number, a: () => Promise<unknown>, b: () => Promise<unknown>) {
  await a();
  await b();
  const ta: Timed[] = [];
  const tb: Timed[] = [];
  for (let r = 0; r < repeats; r++) {
    if (r % 2 === 0) {
      ta.push(await timed(a));
      tb.push(await timed(b));
    } else {
      tb.push(await timed(b));
      ta.push(await timed(a));
    }
  }
  const sum = (ts: Timed[]) => ({
    wall: median(ts.map((t) => t.wall)),
    cpu: median(ts.map((t) => t.cpu)),
    n: ts.length,
  });
  return { native: sum(ta), js: sum(tb) };
}

function batch(vocab: number, rng: Rng): Sample[] {
  return Array.from({ length: B }, (_, i) => {
    const tokens = Array.from({ length: T }, () => rng.int(vocab));
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
}

const report = await initBackend({ force: 'wasm' });
if (!report.native.adam) throw new Error(`the fused optimiser is not active here: ${report.native.adamDetail}`);
const repeats = Number(args.repeats);
const out: Record<string, unknown>[] = [];
console.log(
  `native Adam A/B: ${report.native.detail}; load average ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}`,
);
for (const size of args.sizes.split(',') as ModelSize[]) {
  const cfg = sizedConfig(size);
  const rng = new Rng(1);
  const model = modelFromHf(
    cfg,
    initHfTensors(cfg, () => rng.normal()),
  );
  const reference = cloneModel(model, false);
  const vars = adamVariables(model);
  const native = new Adam(vars, { lr: 1e-5, implementation: 'native' });
  const js = new Adam(vars, { lr: 1e-5, implementation: 'js' });
  const grads = Object.fromEntries(Object.entries(vars).map(([name, v]) => [name, tf.randomNormal(v.shape, 0, 1e-3)]));
  const loadBefore = os.loadavg()[0]!;
  const fused0 = fusedUpdateCount();
  const update = await interleave(
    repeats * 2,
    () => native.step(grads),
    () => js.step(grads),
  );
  const samples = batch(cfg.vocab_size, rng);
  const stepOf = (opt: Adam) => () =>
    policyUpdate(model, opt, samples, { loss: { kind: 'ppoToken', klCoef: 1e-3 }, reference });
  const step = await interleave(size === 'medium' ? Math.max(2, repeats / 2) : repeats, stepOf(native), stepOf(js));
  if (fusedUpdateCount() === fused0) throw new Error('the native optimiser never ran');
  const row = { size, params: parameterCount(cfg), update, step, loadAverage: [loadBefore, os.loadavg()[0]] };
  out.push(row);
  const f = (t: { wall: number; cpu: number }) => `${t.wall.toFixed(1)} ms (${t.cpu.toFixed(1)} CPU)`;
  console.log(
    `${size} (${(row.params / 1e6).toFixed(2)}M): Adam.step native ${f(update.native)}, JS ${f(update.js)} → ×${(update.js.cpu / update.native.cpu).toFixed(1)} CPU; ` +
      `training step native ${f(step.native)}, JS ${f(step.js)} → ${(100 * (1 - step.native.cpu / step.js.cpu)).toFixed(1)}% less CPU; load ${row.loadAverage.map((x) => (x ?? 0).toFixed(1)).join(' → ')}`,
  );
  tf.dispose(Object.values(grads));
  native.dispose();
  js.dispose();
  model.dispose();
  reference.dispose();
}
if (args.json) {
  fs.writeFileSync(
    args.json,
    JSON.stringify({ date: new Date().toISOString(), backend: report, batch: B, seq: T, rows: out }, null, 2),
  );
}
process.exit(0);
