/**
 * The transformer with the fused native ops (issue 16; engine/tensor/native/fused.ts) against the same transformer on the
 * stock tensor ops, both with the native matrix products, in one process (MARS_LAB_NATIVE_FUSED switched per call):
 * the whole model's logits and parameter gradients (untied and tied embeddings, the trained-rows head, a temperature,
 * the entropy), decoding with the KV cache, an 8-step seqgrpo run (metrics and final weights), and no tensors or wasm
 * heap leaked over many training steps.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { rightPaddedLayout } from '../../../engine/model/llama';
import { generate } from '../../../engine/model/sampler';
import { readSafetensorsFile } from '../../../engine/model/formats/safetensors';
import { fusedKernelCount } from '../../../engine/tensor/native/fused';
import { sharedIdentityRegistered } from '../../../engine/tensor/native/kernels';
import { Rng } from '../../../engine/random/prng';
import { Adam } from '../../../engine/rl/adam';
import { adamVariables, policyUpdate } from '../../../engine/rl/policyUpdate';
import type { Sample } from '../../../engine/rl/sample';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { runFilePaths } from '../../../engine/runs/folder/runFolder';
import { startRun } from '../../../engine/runs/runLoop';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';
import { metricLines, quickConfig } from '../../helpers/runFixtures';
import { tinyModel } from '../../helpers/tinyModel';
import { buildKernels, maxRelDiff, nativeMissing, take, useProducts } from './nativeHelpers';

const saved = process.env.MARS_LAB_NATIVE_FUSED;
let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-fused-'));
});
afterEach(() => {
  if (saved === undefined) delete process.env.MARS_LAB_NATIVE_FUSED;
  else process.env.MARS_LAB_NATIVE_FUSED = saved;
});
afterAll(() => {
  useProducts(null);
  fs.rmSync(home, { recursive: true, force: true });
});

/** Runs `f` with the fused ops on or off (the native products on either way) and checks which path ran. */
async function withFused<T>(on: boolean, f: () => Promise<T>): Promise<T> {
  process.env.MARS_LAB_NATIVE_FUSED = on ? '1' : '0';
  const calls = fusedKernelCount();
  const out = await f();
  if (on) expect(fusedKernelCount()).toBeGreaterThan(calls);
  else expect(fusedKernelCount()).toBe(calls);
  // The sharing Identity goes with the fused ops: the stock path keeps the wasm backend's copying one.
  expect(sharedIdentityRegistered()).toBe(on);
  return out;
}

describe.each(buildKernels())('the model with and without the fused ops (products on the %s kernel)', (kernel) => {
  const setUp = (ctx: { skip: (why: string) => void }) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(kernel);
  };

  it.for([
    ['untied embeddings', false],
    ['tied embeddings', true],
  ] as const)("%s: logits, log-probs, entropy and every parameter's gradient", async ([, tied], ctx) => {
    setUp(ctx);
    const model = tinyModel(3, { tie_word_embeddings: tied });
    const rows = [
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
      [10, 11, 12, 13],
      [14, 15, 16, 17, 18, 19],
    ];
    const batch = padBatch(rows);
    const { positions, keyMask } = rightPaddedLayout(batch.lengths, batch.width);
    // Trained tokens only in some columns: the head runs on those rows (headRows), the rest is scattered back as 0.
    const only = Array.from(batch.ids, (_, i) => (i % batch.width >= 2 && i % 3 !== 0 ? 1 : 0));
    const run = async () => {
      const logits = tf.tidy(() => model.forward({ ids: batch.ids, batch: rows.length, positions, keyMask }).logits);
      const parts: { logp?: Float32Array; entropy?: Float32Array } = {};
      const { value, grads } = tf.variableGrads(() => {
        const r = tokenLogProbs(model, batch, { temperature: 0.8, entropy: true, only });
        parts.logp = r.logp.dataSync().slice() as Float32Array;
        parts.entropy = r.entropy!.dataSync().slice() as Float32Array;
        return tf.add<tf.Scalar>(tf.sum(r.logp), tf.mul(tf.sum(r.entropy!), 0.1));
      }, model.variables());
      value.dispose();
      const g: Float32Array[] = [];
      for (const v of model.variables()) g.push(await take(grads[v.name]!));
      return { logits: await take(logits), ...parts, g };
    };
    const before = tf.memory().numTensors;
    const stock = await withFused(false, run);
    const fused = await withFused(true, run);
    expect(maxRelDiff(fused.logits, stock.logits)).toBeLessThan(1e-5);
    expect(maxRelDiff(fused.logp!, stock.logp!)).toBeLessThan(1e-5);
    expect(maxRelDiff(fused.entropy!, stock.entropy!)).toBeLessThan(1e-5);
    fused.g.forEach((g, i) => expect(maxRelDiff(g, stock.g[i]!), model.variables()[i]!.name).toBeLessThan(1e-4));
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });

  it('decoding with the KV cache: the same greedy tokens and log-probs', async (ctx) => {
    setUp(ctx);
    const model = tinyModel(5);
    const prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9]];
    const run = () => generate(model, prompts, { maxNewTokens: 12, temperature: 0, rng: new Rng(1) });
    const before = tf.memory().numTensors;
    const stock = await withFused(false, run);
    const fused = await withFused(true, run);
    expect(fused.map((g) => g.tokens)).toEqual(stock.map((g) => g.tokens));
    fused.forEach((g, i) => expect(maxRelDiff(g.logProbs, stock[i]!.logProbs)).toBeLessThan(1e-5));
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });

  it('an 8-step seqgrpo run: the same metrics and final weights', async (ctx) => {
    setUp(ctx);
    const config = parseRunConfig(quickConfig({ steps: 8, checkpointEvery: 8, evalEvery: 0 }));
    const train = async () => {
      const run = await startRun(home, config);
      expect(run.status).toBe('finished');
      const weights = await readSafetensorsFile(path.join(run.dir, 'checkpoints', '8', 'model.safetensors'));
      return { lines: metricLines(runFilePaths(run.dir).metrics), weights: weights.tensors };
    };
    const before = tf.memory().numTensors;
    const stock = await withFused(false, train);
    const fused = await withFused(true, train);
    expect(fused.lines.length).toBe(8);
    expect(fused.lines.map((l) => Object.keys(l))).toEqual(stock.lines.map((l) => Object.keys(l)));
    fused.lines.forEach((line, i) => {
      for (const [key, v] of Object.entries(line)) {
        expect(Math.abs(v - stock.lines[i]![key]!) / (1 + Math.abs(v)), `step ${i + 1} ${key}`).toBeLessThan(1e-4);
      }
    });
    for (const [name, t] of Object.entries(fused.weights)) {
      expect(maxRelDiff(t.data, stock.weights[name]!.data), name).toBeLessThan(1e-4);
    }
    expect(tf.memory().numTensors).toBe(before);
  });
});

describe('leaks', () => {
  it('no tensors and no wasm heap growth over 150 fused training steps', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(buildKernels()[0]!);
    delete process.env.MARS_LAB_NATIVE_FUSED;
    const model = tinyModel(7, { vocab_size: 64 });
    const reference = tinyModel(8, { vocab_size: 64 });
    const opt = new Adam(adamVariables(model), { lr: 1e-3 });
    const rng = new Rng(3);
    const samples: Sample[] = Array.from({ length: 8 }, (_, i) => {
      const tokens = Array.from({ length: 12 + i }, () => rng.int(64));
      return {
        role: 'node',
        groupId: 'g',
        paramId: 'p',
        tokens,
        lossMask: tokens.map((_, t) => (t > 2 ? 1 : 0)),
        behaviourLogProbs: tokens.map(() => -4),
        reward: i % 2,
        advantage: i % 2 ? 1 : -1,
      };
    });
    const heapBytes = () => (tf.backend() as unknown as { wasm: { HEAPU8: Uint8Array } }).wasm.HEAPU8.buffer.byteLength;
    const step = () =>
      policyUpdate(model, opt, samples, {
        loss: { kind: 'ppoToken', klCoef: 1e-2, entCoef: 1e-3 },
        reference,
      });
    const calls = fusedKernelCount();
    for (let i = 0; i < 10; i++) await step();
    expect(fusedKernelCount()).toBeGreaterThan(calls);
    const tensors = tf.memory().numTensors;
    const bytes = tf.memory().numBytes;
    const heap = heapBytes();
    for (let i = 0; i < 140; i++) await step();
    expect(tf.memory().numTensors).toBe(tensors);
    expect(tf.memory().numBytes).toBe(bytes);
    expect(heapBytes()).toBe(heap);
    opt.dispose();
    model.dispose();
    reference.dispose();
  });
});
