/**
 * The native matrix products (issue 16) give the same training as the stock wasm kernels, in one process with the
 * registration switched on and off: gradients of a matMul-using function at ranks 2–4 with every transpose pair, the
 * whole model's logits and parameter gradients, and an 8-step seqgrpo run (metrics and final
 * weights) — each within float tolerance, with the native kernel shown to have run, and no tensors leaked.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { rightPaddedLayout } from '../../../engine/model/llama';
import { readSafetensorsFile } from '../../../engine/model/formats/safetensors';
import { nativeProductCount } from '../../../engine/tensor/native/kernels';
import { Rng } from '../../../engine/random/prng';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { readRunMeta, runFilePaths } from '../../../engine/runs/folder/runFolder';
import { startRun } from '../../../engine/runs/runLoop';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';
import { metricLines, quickConfig } from '../../helpers/runFixtures';
import { tinyModel } from '../../helpers/tinyModel';
import { buildKernels, built, maxRelDiff, nativeMissing, take, useProducts } from './nativeHelpers';

type Products = 'openblas' | 'own' | null;

/** Runs `f` with the products on `kernel` (null: stock wasm) and checks whether the native kernel ran. */
async function withProducts<T>(kernel: Products, f: () => Promise<T>): Promise<T> {
  useProducts(kernel);
  const calls = nativeProductCount();
  const out = await f();
  if (kernel === null) expect(nativeProductCount()).toBe(calls);
  else expect(nativeProductCount()).toBeGreaterThan(calls);
  return out;
}

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-native-'));
});
afterAll(() => {
  useProducts(null);
  fs.rmSync(home, { recursive: true, force: true });
});

describe.each(buildKernels())('native %s kernel against the stock wasm kernels', (kernel) => {
  it('gradients of a matMul-using function (ranks 2–4, every transpose pair)', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    // Equal batches: tfjs 4.22's MatMul gradient does not reduce broadcast batch dimensions (it throws on any backend).
    const shapes: [number[], number[]][] = [
      [[], []],
      [[3], [3]],
      [
        [2, 3],
        [2, 3],
      ],
    ];
    const [m, k, n] = [7, 11, 5];
    const grads = async () => {
      const rng = new Rng(5); // the same inputs on both sides
      const rand = (shape: number[]) =>
        tf.tensor(
          Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => rng.normal()),
          shape,
        );
      const out: Float32Array[] = [];
      for (const [ba, bb] of shapes) {
        for (const ta of [false, true]) {
          for (const tb of [false, true]) {
            const a = rand([...ba, ...(ta ? [k, m] : [m, k])]);
            const b = rand([...bb, ...(tb ? [n, k] : [k, n])]);
            const g = tf.grads((x: tf.Tensor, y: tf.Tensor) => tf.sum(tf.sin(tf.matMul(x, y, ta, tb))))([a, b]);
            out.push(await take(g[0]!), await take(g[1]!));
            a.dispose();
            b.dispose();
          }
        }
      }
      return out;
    };
    const before = tf.memory().numTensors;
    const stock = await withProducts(null, grads);
    const native = await withProducts(kernel, grads);
    expect(native.length).toBe(stock.length);
    native.forEach((g, i) => expect(maxRelDiff(g, stock[i]!), `gradient ${i}`).toBeLessThan(1e-5));
    expect(tf.memory().numTensors).toBe(before);
  });

  it("the whole model's logits and parameter gradients", async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    const model = tinyModel(3);
    const rows = [
      [1, 2, 3, 4, 5, 6, 7, 8, 9],
      [10, 11, 12, 13],
      [14, 15, 16, 17, 18, 19],
    ];
    const batch = padBatch(rows);
    const { positions, keyMask } = rightPaddedLayout(batch.lengths, batch.width);
    const run = async () => {
      const logits = tf.tidy(() => model.forward({ ids: batch.ids, batch: rows.length, positions, keyMask }).logits);
      const { value, grads } = tf.variableGrads(
        () => tf.sum<tf.Scalar>(tokenLogProbs(model, batch).logp),
        model.variables(),
      );
      value.dispose();
      const g: Float32Array[] = [];
      for (const v of model.variables()) g.push(await take(grads[v.name]!));
      return { logits: await take(logits), g };
    };
    const before = tf.memory().numTensors;
    const stock = await withProducts(null, run);
    const native = await withProducts(kernel, run);
    expect(maxRelDiff(native.logits, stock.logits)).toBeLessThan(1e-5);
    native.g.forEach((g, i) => expect(maxRelDiff(g, stock.g[i]!), model.variables()[i]!.name).toBeLessThan(1e-4));
    expect(tf.memory().numTensors).toBe(before);
    model.dispose();
  });

  it('an 8-step seqgrpo run: the same metrics and final weights', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    const config = parseRunConfig(quickConfig({ steps: 8, checkpointEvery: 8, evalEvery: 0 }));
    const train = async () => {
      const run = await startRun(home, config);
      expect(run.status).toBe('finished');
      const weights = await readSafetensorsFile(path.join(run.dir, 'checkpoints', '8', 'model.safetensors'));
      return {
        lines: metricLines(runFilePaths(run.dir).metrics),
        weights: weights.tensors,
        meta: readRunMeta(run.dir),
      };
    };
    const before = tf.memory().numTensors;
    const stock = await withProducts(null, train);
    const native = await withProducts(kernel, train);
    expect(native.lines.length).toBe(8);
    expect(native.lines.map((l) => Object.keys(l))).toEqual(stock.lines.map((l) => Object.keys(l)));
    native.lines.forEach((line, i) => {
      for (const [key, v] of Object.entries(line)) {
        expect(Math.abs(v - stock.lines[i]![key]!) / (1 + Math.abs(v)), `step ${i + 1} ${key}`).toBeLessThan(1e-4);
      }
    });
    expect(Object.keys(native.weights)).toEqual(Object.keys(stock.weights));
    for (const [name, t] of Object.entries(native.weights)) {
      expect(maxRelDiff(t.data, stock.weights[name]!.data), name).toBeLessThan(1e-4);
    }
    expect(tf.memory().numTensors).toBe(before);
    // run.json records the matrix-product path of the process (set when the backend was initialised), so a figure
    // can be traced to it.
    expect(native.meta.backend).toMatchObject({
      chosen: 'wasm',
      native: { kernel: built.loaded!.info.built, active: true, detail: expect.any(String) },
    });
  });
});
