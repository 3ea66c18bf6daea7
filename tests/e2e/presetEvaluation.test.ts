/**
 * Evaluate and Compare at the presets' evaluation sizes, through the host, the real launcher and real run-worker
 * processes (as the app does). Their results carry every item's whole episode or search tree: hundreds of KB to MB,
 * which as one stdout line were cut at the pipe's 64 KiB when the worker exited, so the app said "the process ended
 * without answering" for every MARS and MARTI evaluation of real size. Now they travel as a file.
 *
 * The checkpoints are the shipped base models (resources/mars/base-tiny, resources/marti/base-tiny) in crafted run
 * folders whose trainer_state.json carries the preset's config, as a run's checkpoint does.
 * - MARS: mars-tiny exactly (164 held-out questions, greedy): measured 11 s and a 565 KB result (2-core VM, wasm).
 * - MARTI: marti-homo's 256 held-out problems, with 2-node evaluation trees instead of 8. At the preset's own size the
 *   evaluation took 68 s of CPU (219 s wall on the shared 2-core VM) for a 3.4 MB result; with 2 nodes, 30 s of CPU
 *   for 0.9 MB: the same items, the same kind of records, still seven times the size a line was cut at.
 * Comparing two checkpoints with the same weights reuses the cached evaluations, so a comparison (both evaluations in
 * one result: twice the size) costs a worker start.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiSchemas } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher, workerResultsDir } from '../../engine/api/workers/runLauncher';
import { HEADLINE_METRICS } from '../../engine/runs/summary/headlineMetric';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import type { RunConfig } from '../../engine/runs/config/configSchema';

let home: string;
let host: Host;

/** A run folder with checkpoints at steps 1 and 2, both the shipped base model of `base`, under `config`. */
function runWithBaseCheckpoints(config: RunConfig, preset: string, base: string): string {
  const { id, dir } = createRunFolder(home, {
    algorithm: config.algorithm,
    preset,
    config,
    engineVersion: '0',
    seed: config.seed,
    tags: [],
    notes: '',
  });
  for (const step of [1, 2]) {
    const ckpt = path.join(dir, 'checkpoints', String(step));
    fs.mkdirSync(ckpt, { recursive: true });
    for (const f of ['config.json', 'model.safetensors', 'tokenizer.json']) {
      fs.copyFileSync(path.join(base, f), path.join(ckpt, f));
    }
    fs.writeFileSync(path.join(ckpt, 'trainer_state.json'), JSON.stringify({ step, config }));
  }
  return id;
}

async function evaluate(runId: string, step: number) {
  return apiSchemas.evaluateCheckpoint.response.parse(
    await callApi(host.handlers, 'evaluateCheckpoint', { runId, step }),
  );
}

async function compare(runId: string) {
  return apiSchemas.compareCheckpoints.response.parse(
    await callApi(host.handlers, 'compareCheckpoints', { a: { runId, step: 1 }, b: { runId, step: 2 } }),
  );
}

const leftovers = (): string[] => (fs.existsSync(workerResultsDir(home)) ? fs.readdirSync(workerResultsDir(home)) : []);

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-preset-eval-'));
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
});

afterAll(async () => {
  await host?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe('Evaluate and Compare at preset size, through worker processes', () => {
  it("MARS: a mars-tiny checkpoint's evaluation and comparison arrive whole (all 164 held-out questions with their episodes)", async () => {
    const config = resolvePresetConfig('mars-tiny', ['backend=wasm']);
    expect(config.eval.items).toBe(164);
    const runId = runWithBaseCheckpoints(config, 'mars-tiny', 'resources/mars/base-tiny');

    const result = await evaluate(runId, 1);
    const bytes = JSON.stringify(result).length;
    console.log(`MARS evaluation result: ${result.items.length} items, ${(bytes / 1024).toFixed(0)} KiB`);
    expect(bytes).toBeGreaterThan(256 * 1024); // the premise: far more than a pipe's buffer
    expect(result.items).toHaveLength(164);
    expect(new Set(result.items.map((it) => it.id)).size).toBe(164);
    for (const item of result.items) expect(item).toHaveProperty('record.questionId', item.id); // each with its whole episode
    expect(result.identity).toMatchObject({ algorithm: 'mars', items: 164 });
    expect(result.metrics).toHaveProperty(HEADLINE_METRICS.mars.key.replace(/^eval\./, ''));
    expect(result.cached).toBe(false);
    expect(leftovers()).toEqual([]); // the host read the result file and removed it

    const c = await compare(runId);
    expect(c.a.items).toHaveLength(164);
    expect(c.b.items).toHaveLength(164);
    expect(c.b.cached).toBe(true); // same weights, same items: evaluated once
    expect(c.flippedToRight).toEqual([]);
    expect(c.flippedToWrong).toEqual([]);
    expect(c.b.items.map((it) => it.id)).toEqual(result.items.map((it) => it.id));
    expect(leftovers()).toEqual([]);
  }, 300_000);

  it("MARTI: a marti-homo checkpoint's evaluation and comparison arrive whole (all 256 held-out problems with their trees)", async () => {
    const config = resolvePresetConfig('marti-homo', ['backend=wasm', 'marti.evalNodes=2']);
    expect(config.eval.items).toBe(256);
    const runId = runWithBaseCheckpoints(config, 'marti-homo', 'resources/marti/base-tiny');

    const result = await evaluate(runId, 1);
    const bytes = JSON.stringify(result).length;
    console.log(`MARTI evaluation result: ${result.items.length} items, ${(bytes / 1024).toFixed(0)} KiB`);
    expect(bytes).toBeGreaterThan(512 * 1024);
    expect(result.items).toHaveLength(256);
    expect(new Set(result.items.map((it) => it.id)).size).toBe(256);
    for (const item of result.items) expect((item as { record?: { nodes?: unknown[] } }).record?.nodes).toHaveLength(3); // its tree: root and 2 nodes
    expect(result.identity).toMatchObject({ algorithm: 'marti', items: 256 });
    expect(result.metrics).toHaveProperty(HEADLINE_METRICS.marti.key.replace(/^eval\./, ''));
    expect(leftovers()).toEqual([]);

    const c = await compare(runId);
    expect(c.a.items).toHaveLength(256);
    expect(c.b.items).toHaveLength(256);
    expect(c.a.cached && c.b.cached).toBe(true);
    expect(c.metrics.find((m) => m.name === 'pass1')).toMatchObject({ diff: 0 });
    expect(leftovers()).toEqual([]);
  }, 600_000);
});
