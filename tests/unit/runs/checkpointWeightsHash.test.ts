/**
 * The evaluation cache's key of a checkpoint covers a chatgrpo run's LoRA adapter: under LoRA every checkpoint of a
 * run has the same config.json and model.safetensors (the frozen base), so before, its checkpoints were one cache
 * entry and a later checkpoint was served the first one's evaluation (the class of issue 32, defect 3).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkpointWeightsHash } from '../../../engine/runs/evaluation/evaluation';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-weights-hash-'));
  fs.writeFileSync(path.join(dir, 'config.json'), '{"model_type":"llama"}');
  fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.from([1, 2, 3]));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('checkpointWeightsHash', () => {
  it('changes with the adapter weights and the adapter config, not with the optimiser state', () => {
    const bare = checkpointWeightsHash(dir);
    fs.writeFileSync(path.join(dir, 'adapter_model.safetensors'), Buffer.from([4]));
    const one = checkpointWeightsHash(dir);
    fs.writeFileSync(path.join(dir, 'adapter_model.safetensors'), Buffer.from([5]));
    const two = checkpointWeightsHash(dir);
    fs.writeFileSync(path.join(dir, 'adapter_config.json'), '{"r":4}');
    const three = checkpointWeightsHash(dir);
    expect(new Set([bare, one, two, three]).size).toBe(4);
    fs.writeFileSync(path.join(dir, 'optimizer.safetensors'), Buffer.from([6]));
    expect(checkpointWeightsHash(dir)).toBe(three);
  });
});
