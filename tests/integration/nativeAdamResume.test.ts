/**
 * Runs trained with the fused native optimiser (issue 16) checkpoint and resume like runs of the JS one: stopped and
 * resumed, a native run equals its uninterrupted self exactly (same process, same path both times); it equals the
 * JS optimiser's run within float tolerance; the checkpoints are the same files in format, so a run checkpointed by
 * one path resumes on the other (MARS_LAB_NATIVE_ADAM=0 picks the JS path), each way.
 *
 * Tolerance: the two paths do the same float32 update ops in the same order; they differ only in the gradient norm
 * (double sum natively, float32 tensor ops in JS), which changes a clipped step's scale by ~1e-7 relative. Over 8
 * steps that grows to at most 1e-4 relative in the metrics and weights (the same bound as the native products'
 * run-level test, tests/unit/native/nativeTraining.test.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { readSafetensorsFile } from '../../engine/model/formats/safetensors';
import { fusedUpdateCount } from '../../engine/rl/nativeAdam';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { runFilePaths } from '../../engine/runs/folder/runFolder';
import { resumeRun, startRun } from '../../engine/runs/runLoop';
import { useBackend } from '../helpers/backends';
import { metricLines, quickConfig } from '../helpers/runFixtures';
import { buildKernels, maxRelDiff, nativeMissing, useProducts } from '../unit/native/nativeHelpers';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-native-adam-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));
afterEach(() => {
  delete process.env.MARS_LAB_NATIVE_ADAM;
});

// Clipping at 0.5 so that the runs take clipped steps, where the paths differ most.
const config = parseRunConfig({
  ...quickConfig({ steps: 8, checkpointEvery: 4, evalEvery: 4 }),
  rl: { lr: 3e-3, gradClip: 0.5 },
});

/** Sets the optimiser path for what follows and checks afterwards that it was the one taken. */
async function onPath<T>(path: 'native' | 'js', f: () => Promise<T>): Promise<T> {
  if (path === 'js') process.env.MARS_LAB_NATIVE_ADAM = '0';
  else delete process.env.MARS_LAB_NATIVE_ADAM;
  const before = fusedUpdateCount();
  const out = await f();
  if (path === 'js') expect(fusedUpdateCount()).toBe(before);
  else expect(fusedUpdateCount()).toBeGreaterThan(before);
  return out;
}

interface Finished {
  dir: string;
  lines: Record<string, number>[];
  weights: Buffer;
  trajectories: string;
}

function finished(dir: string): Finished {
  const f = runFilePaths(dir);
  return {
    dir,
    lines: metricLines(f.metrics),
    weights: fs.readFileSync(path.join(dir, 'checkpoints', '8', 'model.safetensors')),
    trajectories: fs.readFileSync(f.trajectories, 'utf8'),
  };
}

async function whole(p: 'native' | 'js'): Promise<Finished> {
  const r = await onPath(p, () => startRun(home, config));
  expect(r.status).toBe('finished');
  return finished(r.dir);
}

/** Trains to step 4 on `first`, resumes to 8 on `second`. */
async function split(first: 'native' | 'js', second: 'native' | 'js'): Promise<Finished> {
  const part = await onPath(first, () => startRun(home, config, { stopAfterStep: 4 }));
  expect(part.status).toBe('stopped');
  expect((await onPath(second, () => resumeRun(part.dir))).status).toBe('finished');
  return finished(part.dir);
}

function expectClose(a: Finished, b: Finished, tol: number): void {
  expect(a.lines.map((l) => Object.keys(l))).toEqual(b.lines.map((l) => Object.keys(l)));
  a.lines.forEach((line, i) => {
    for (const [k, v] of Object.entries(line)) {
      expect(Math.abs(v - b.lines[i]![k]!) / (1 + Math.abs(v)), `step ${i + 1} ${k}`).toBeLessThan(tol);
    }
  });
}

async function expectCloseWeights(a: Finished, b: Finished, tol: number): Promise<void> {
  const [wa, wb] = [
    await readSafetensorsFile(path.join(a.dir, 'checkpoints', '8', 'model.safetensors')),
    await readSafetensorsFile(path.join(b.dir, 'checkpoints', '8', 'model.safetensors')),
  ];
  expect(Object.keys(wa.tensors)).toEqual(Object.keys(wb.tensors));
  for (const [n, t] of Object.entries(wa.tensors)) expect(maxRelDiff(t.data, wb.tensors[n]!.data), n).toBeLessThan(tol);
}

/** The safetensors header (names, dtypes, shapes, offsets, metadata) of a checkpoint's optimizer file. */
function optimizerHeader(dir: string, step: number): unknown {
  const bytes = fs.readFileSync(path.join(dir, 'checkpoints', String(step), 'optimizer.safetensors'));
  const n = Number(bytes.readBigUInt64LE(0));
  return JSON.parse(bytes.subarray(8, 8 + n).toString('utf8'));
}

describe('a run with the fused native optimiser: checkpoint and resume', () => {
  it('stopped and resumed equals the uninterrupted run exactly; equals the JS optimiser within 1e-4; checkpoints in the same format', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(buildKernels()[0]!);
    const native = await whole('native');
    const resumed = await split('native', 'native');
    expect(resumed.lines).toEqual(native.lines);
    expect(resumed.trajectories).toBe(native.trajectories);
    expect(resumed.weights.equals(native.weights)).toBe(true);
    expect(native.lines.at(-1)!.reward).not.toBe(native.lines[0]!.reward); // it trained

    const js = await whole('js');
    expectClose(native, js, 1e-4);
    await expectCloseWeights(native, js, 1e-4);
    expect(native.weights.equals(js.weights)).toBe(false); // the paths really differ (clipped steps), within the bound
    for (const step of [4, 8]) expect(optimizerHeader(native.dir, step)).toEqual(optimizerHeader(js.dir, step));
  }, 180_000);

  it('a native checkpoint resumes on the JS path and a JS checkpoint on the native path', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    useProducts(buildKernels()[0]!);
    const js = await whole('js');
    const native = await whole('native');
    const nativeThenJs = await split('native', 'js');
    const jsThenNative = await split('js', 'native');
    expectClose(nativeThenJs, js, 1e-4);
    await expectCloseWeights(nativeThenJs, js, 1e-4);
    expectClose(jsThenNative, native, 1e-4);
    await expectCloseWeights(jsThenNative, native, 1e-4);
    // The first half of each is the first path's run exactly.
    expect(nativeThenJs.lines.slice(0, 4)).toEqual(native.lines.slice(0, 4));
    expect(jsThenNative.lines.slice(0, 4)).toEqual(js.lines.slice(0, 4));
  }, 180_000);
});
