/**
 * The memory check reads a checkpoint's config.json up to the bound the loader holds it to (issue 34, low): a
 * config.json padded past 64 KiB used to skip the estimate, so a checkpoint describing a 68.7e9-parameter model went
 * unchecked; a FIFO there is no reason to wait (the estimate is made in the host, from a window's validation).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { estimateRunMemory, memoryProblem } from '../../../engine/training/memoryBudget';

const GiB = 1024 ** 3;
const HUGE_HF = {
  vocab_size: 512,
  hidden_size: 8192,
  intermediate_size: 32768,
  num_hidden_layers: 64,
  num_attention_heads: 128,
  num_key_value_heads: 128,
  max_position_embeddings: 1024,
};

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-memory-ckpt-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function configFrom(ckpt: string) {
  return parseRunConfig({
    algorithm: 'seqgrpo',
    model: { from: { kind: 'checkpoint', path: ckpt } },
    budget: { ignoreMemoryCheck: true },
  });
}

describe("the memory check of a checkpoint's config.json", () => {
  it('estimates a config.json padded past 64 KiB, and refuses the model it describes', () => {
    const ckpt = path.join(dir, 'padded');
    fs.mkdirSync(ckpt);
    fs.writeFileSync(path.join(ckpt, 'config.json'), JSON.stringify(HUGE_HF) + ' '.repeat(200 * 1024));
    const config = configFrom(ckpt);
    const est = estimateRunMemory(config);
    expect(est?.parameters).toBeGreaterThan(60e9);
    const problem = memoryProblem({ ...config, budget: { steps: config.budget.steps } }, 128 * GiB);
    expect(problem?.message).toMatch(/68\.7e9 parameters .*≈ 1\.\d TB/);
  });

  it('leaves a FIFO config.json to the loader without waiting on it', () => {
    const ckpt = path.join(dir, 'fifo');
    fs.mkdirSync(ckpt);
    expect(spawnSync('mkfifo', [path.join(ckpt, 'config.json')]).status).toBe(0);
    expect(estimateRunMemory(configFrom(ckpt))).toBeNull();
  });
});
