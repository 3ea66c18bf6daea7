/**
 * `npm run bench`: figures for the engine core on the active backend (never test assertions).
 *
 * For each model size: one GRPO training step (forward, backward, Adam; ppoToken + k3 KL against a reference copy)
 * on a batch of B sequences of T tokens, and batched sampling of T−1 new tokens with and without the KV cache.
 * Medians (and min, max) over repeats after warm-up; peak resident memory and TF.js's own byte count.
 *
 *   npm run bench -- [--sizes tiny,small] [--repeats 5] [--backend wasm] [--json out.json]
 */
import fs from 'node:fs';
import os from 'node:os';
import { parseArgs } from 'node:util';
import { sizedConfig, parameterCount, MODEL_SIZES, type ModelSize } from '../../engine/model/config';
import { cloneModel, initHfTensors, modelFromHf } from '../../engine/model/hfWeights';
import { generate } from '../../engine/model/sampler';
import { Rng } from '../../engine/random/prng';
import { Adam } from '../../engine/rl/adam';
import { adamVariables, policyUpdate } from '../../engine/rl/policyUpdate';
import type { Sample } from '../../engine/rl/sample';
import { BACKENDS, initBackend, tf, type BackendName } from '../../engine/tensor/backend';

const { values: args } = parseArgs({
  options: {
    sizes: { type: 'string', default: 'tiny,small' },
    repeats: { type: 'string', default: '5' },
    backend: { type: 'string' },
    batch: { type: 'string', default: '16' },
    seq: { type: 'string', default: '64' },
    json: { type: 'string' },
  },
});

const B = Number(args.batch);
const T = Number(args.seq);
const REPEATS = Number(args.repeats);

interface Stat {
  median: number;
  min: number;
  max: number;
  n: number;
}

function stat(xs: number[]): Stat {
  const s = xs.slice().sort((a, b) => a - b);
  const mid = s.length >> 1;
  return { median: s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2, min: s[0]!, max: s.at(-1)!, n: s.length };
}

let peakRss = 0;
const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);

async function timeRepeats(fn: () => Promise<void>, repeats: number, warmup: number): Promise<Stat> {
  for (let i = 0; i < warmup; i++) await fn();
  const ms: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const t0 = performance.now();
    await fn();
    ms.push(performance.now() - t0);
  }
  return stat(ms);
}

/** Forward + backward FLOPs of one training step: 6·params·tokens plus attention (12·layers·T²·d per sequence… halved by causality). */
function trainFlops(size: ModelSize): number {
  const c = sizedConfig(size);
  const tokens = B * T;
  const dense = 6 * parameterCount(c) * tokens;
  const attn = 6 * c.num_hidden_layers * B * T * T * c.hidden_size; // QKᵀ and PV, forward + backward, no causal saving
  return dense + attn;
}

async function benchSize(size: ModelSize) {
  const cfg = sizedConfig(size);
  const rng = new Rng(1);
  const model = modelFromHf(cfg, initHfTensors(cfg, () => rng.normal()));
  const reference = cloneModel(model, false);
  const opt = new Adam(adamVariables(model), { lr: 1e-5 });
  const samples: Sample[] = Array.from({ length: B }, (_, i) => {
    const tokens = Array.from({ length: T }, () => rng.int(cfg.vocab_size));
    return {
      role: 'node', groupId: 'g', paramId: 'p', tokens,
      lossMask: tokens.map((_, t) => (t > 0 ? 1 : 0)),
      behaviourLogProbs: tokens.map(() => 0),
      reward: i % 2, advantage: i % 2 ? 1 : -1,
    };
  });
  const repeats = size === 'tiny' ? REPEATS : Math.max(3, Math.ceil(REPEATS / 2));
  const tensorsBefore = tf.memory().numTensors;
  const train = await timeRepeats(async () => {
    await policyUpdate(model, opt, samples, { loss: { kind: 'ppoToken', klCoef: 1e-3 }, reference });
  }, repeats, 2);
  const leaked = tf.memory().numTensors - tensorsBefore;
  const prompts = Array.from({ length: B }, () => [1]);
  const newTokens = T - 1;
  const sampleKv = await timeRepeats(async () => {
    await generate(model, prompts, { maxNewTokens: newTokens, rng });
  }, repeats, 1);
  // Recomputing the prefix is slow by design; fewer repeats keep the suite short.
  const sampleNaive = await timeRepeats(async () => {
    await generate(model, prompts, { maxNewTokens: newTokens, rng, useCache: false });
  }, size === 'tiny' ? 3 : 1, size === 'tiny' ? 1 : 0);
  const tfBytes = tf.memory().numBytes;
  model.dispose();
  reference.dispose();
  opt.dispose();
  return {
    size,
    params: parameterCount(cfg),
    batch: B,
    seq: T,
    trainMsPerStep: train,
    trainTokensPerSec: (B * T) / (train.median / 1000),
    trainGflops: trainFlops(size) / (train.median / 1000) / 1e9,
    tensorsLeakedPerStepLoop: leaked,
    sampleKvMs: sampleKv,
    sampleKvTokensPerSec: (B * newTokens) / (sampleKv.median / 1000),
    sampleNaiveMs: sampleNaive,
    sampleNaiveTokensPerSec: (B * newTokens) / (sampleNaive.median / 1000),
    kvSpeedup: sampleNaive.median / sampleKv.median,
    tfBytes,
  };
}

const report = await initBackend({ force: args.backend as BackendName | undefined });
if (args.backend && !BACKENDS.includes(args.backend as BackendName)) throw new Error(`--backend must be one of ${BACKENDS.join(', ')}`);
const sizes = args.sizes!.split(',') as ModelSize[];
for (const s of sizes) if (!(s in MODEL_SIZES)) throw new Error(`--sizes: unknown size '${s}' (known: ${Object.keys(MODEL_SIZES).join(', ')})`);

console.log(`mars-lab engine bench: backend ${report.chosen} (threads ${report.threads}${report.simd ? ', SIMD' : ''}), ${os.cpus()[0]?.model ?? 'cpu'} ×${os.cpus().length}, Node ${process.versions.node}`);
console.log(`batch ${B} × ${T} tokens; training = GRPO step (ppoToken + k3 KL, Adam); sampling = ${B} rows × ${T - 1} new tokens\n`);
const rows = [];
for (const s of sizes) {
  const r = await benchSize(s);
  rows.push(r);
  const f = (x: number, d = 0) => x.toLocaleString('en-US', { maximumFractionDigits: d, minimumFractionDigits: d });
  console.log(
    `${s.padEnd(6)} ${(r.params / 1e6).toFixed(2)}M params | train ${f(r.trainMsPerStep.median)} ms/step (min ${f(r.trainMsPerStep.min)}, max ${f(r.trainMsPerStep.max)}, n ${r.trainMsPerStep.n}) ` +
      `${f(r.trainTokensPerSec)} tok/s ${f(r.trainGflops, 2)} GFLOP/s | sample KV ${f(r.sampleKvTokensPerSec)} tok/s (${f(r.sampleKvMs.median)} ms) ` +
      `naive ${f(r.sampleNaiveTokensPerSec)} tok/s (${f(r.sampleNaiveMs.median)} ms) → KV ×${r.kvSpeedup.toFixed(1)} | tf bytes ${f(r.tfBytes / 2 ** 20, 1)} MiB, leaked tensors ${r.tensorsLeakedPerStepLoop}`,
  );
}
clearInterval(sampler);
console.log(`\npeak resident memory: ${(peakRss / 2 ** 20).toFixed(0)} MiB`);
if (args.json) {
  fs.writeFileSync(args.json, JSON.stringify({ date: new Date().toISOString(), backend: report, machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, memGiB: os.totalmem() / 2 ** 30 }, batch: B, seq: T, peakRssBytes: peakRss, results: rows }, null, 2));
  console.log(`wrote ${args.json}`);
}
process.exit(0);
