/**
 * `npm run bench:sampling`: sampling speed of the real SmolLM2-135M with the KV cache (issue 30, "Speed"), mars-lab
 * against llama.cpp (node-llama-cpp's prebuilt CPU build, tests/bench/peer/llama_sampling_peer.mjs) on the same GGUF,
 * the same prompt ids, the same thread count, in the same invocation. A figure, never a test.
 *
 *   npm run bench:sampling -- [--batches 1,16] [--new 64] [--threads 1] [--repeats 3] [--backend wasm]
 *
 * Each batch is the first B of the chat prompts of tests/fixtures/chat/prompts.ts through the model's template (the
 * prompts repeat past 16), greedy, at most `--new` tokens a row, a row ending at the model's end of turn on both sides
 * (node-llama-cpp's sequences stop there); tokens/s = the tokens a side made / the median wall time of the whole
 * generation, prompt processing included, over repeats after one warm-up. llama.cpp runs the file as it is (Q4_1 weights, 8-bit activations in its products); mars-lab
 * holds it dequantised to float32, so this compares the engines as a user meets them, not kernel for kernel.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { loadRealModel } from '../../engine/model/realModel';
import { generate } from '../../engine/model/sampler';
import { Rng } from '../../engine/random/prng';
import { initBackend, type BackendName } from '../../engine/tensor/backend';
import { CHAT_PROMPTS } from '../fixtures/chat/prompts';
import { realModelPath } from '../fixtures/gguf/ggufKit';
import { msStat, stat, timeRepeats } from './stats';

const { values: args } = parseArgs({
  options: {
    batches: { type: 'string', default: '1,16' },
    new: { type: 'string', default: '64' },
    threads: { type: 'string', default: '1' },
    repeats: { type: 'string', default: '3' },
    backend: { type: 'string' },
  },
});
const batches = args.batches.split(',').map(Number);
const newTokens = Number(args.new);
const threads = Number(args.threads);
const repeats = Number(args.repeats);
process.env.MARS_LAB_BLAS_THREADS = String(threads);

const peerDir = path.resolve('.peer-llama');
if (!fs.existsSync(path.join(peerDir, 'mars-lab-peer.json'))) {
  throw new Error(`${peerDir} is absent: node scripts/llamaPeer.mjs installs llama.cpp for the comparison`);
}
const report = await initBackend({ force: args.backend as BackendName | undefined });
const file = realModelPath();
const real = await loadRealModel(file);
const prompt = (i: number) =>
  real.encoder!.prompt([{ role: 'user', content: CHAT_PROMPTS[i % CHAT_PROMPTS.length]! }]).ids;

/** llama.cpp's wall times (ms) for these prompts and the tokens it made a repeat. */
function llamaCpp(prompts: number[][]): { ms: number[]; tokens: number } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-sampling-bench-'));
  try {
    const input = path.join(dir, 'in.json');
    fs.writeFileSync(input, JSON.stringify({ model: file, prompts, newTokens, threads, repeats }));
    const r = spawnSync(process.execPath, [path.resolve('tests/bench/peer/llama_sampling_peer.mjs'), peerDir, input], {
      encoding: 'utf8',
      maxBuffer: 1 << 24,
    });
    if (r.status !== 0) {
      throw new Error(`the llama.cpp peer failed: ${r.stderr.trim().split('\n').slice(-3).join(' ')}`);
    }
    return JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { ms: number[]; tokens: number };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const cpu = os.cpus()[0]?.model ?? 'unknown CPU';
console.log(`SmolLM2-135M-Instruct (${path.basename(file)}), ${newTokens} new tokens a row, greedy, chat prompts`);
console.log(`${cpu}, ${threads} thread(s); mars-lab ${report.chosen}, matrix products: ${report.native.detail}`);
console.log('| rows | mars-lab tokens/s (ms) | llama.cpp tokens/s (ms) | ratio |');
console.log('| --- | --- | --- | --- |');
for (const b of batches) {
  const prompts = Array.from({ length: b }, (_, i) => prompt(i));
  let ourTokens = 0;
  const ours = await timeRepeats(
    async () => {
      const gens = await generate(real.model, prompts, {
        maxNewTokens: newTokens,
        temperature: 0,
        stopTokens: real.stopTokens,
        rng: new Rng(0),
      });
      ourTokens = gens.reduce((n, g) => n + g.tokens.length, 0);
    },
    repeats,
    1,
  );
  const peer = llamaCpp(prompts);
  const theirs = stat(peer.ms);
  const ourRate = ourTokens / (ours.median / 1000);
  const theirRate = peer.tokens / (theirs.median / 1000);
  console.log(
    `| ${b} | ${ourRate.toFixed(1)} (${ourTokens} tokens, ${msStat(ours)}) | ${theirRate.toFixed(1)} (${peer.tokens} tokens, ${msStat(theirs)}) | ${(ourRate / theirRate).toFixed(2)} |`,
  );
}
console.log('ratio: mars-lab tokens/s over llama.cpp tokens/s (the issue asks ≥ 0.5 at the same threads)');
real.model.dispose();
