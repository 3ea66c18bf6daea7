/**
 * The evaluation cache keys a MARS checkpoint by everything that changes its answers (issue 32, defect 3): the System 1
 * mode (not only on/off) and every parameter file (sys1.safetensors too). Before, a base evaluated as 'frozen' in a
 * fresh home threw "sys1.safetensors is missing", a checkpoint evaluated under one System 1 mode was served another
 * mode's cached result, and a replaced System 1 was served the old one.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig, type RunConfig } from '../../engine/runs/config/configSchema';
import { evaluateCheckpoint } from '../../engine/runs/evaluation/evaluation';
import { startRun } from '../../engine/runs/runLoop';
import { SYS1_WEIGHTS } from '../../engine/mars/sys1Checkpoint';
import { useBackend } from '../helpers/backends';

const BASE = path.resolve('resources/mars/base-tiny');

function marsConfig(sys1Params: 'shared' | 'frozen' | 'separate'): RunConfig {
  return parseRunConfig({
    algorithm: 'mars',
    seed: 3,
    backend: 'wasm',
    model: { size: 'tiny', from: { kind: 'checkpoint', path: BASE } },
    task: { questionsPerStep: 4, groupSize: 4, trainWorlds: 2, evalWorlds: 1 },
    mars: { sys1Params },
    rl: { lr: 3e-2 },
    budget: { steps: 2 },
    eval: { every: 0, items: 12 },
    checkpoint: { every: 2 },
  });
}

let home: string;
let frozenCk: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-mars-eval-cache-'));
  const run = await startRun(home, marsConfig('frozen'));
  expect(run.status).toBe('finished');
  frozenCk = path.join(run.dir, 'checkpoints', '2');
  expect(fs.existsSync(path.join(frozenCk, SYS1_WEIGHTS))).toBe(true);
}, 300_000);
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('the MARS evaluation cache', () => {
  it('a base evaluated as frozen in a fresh home is computed, with the policy as System 1: it equals the base evaluated as shared', async () => {
    const evalHome = fs.mkdtempSync(path.join(home, 'fresh-'));
    const frozen = await evaluateCheckpoint(evalHome, BASE, marsConfig('frozen'));
    expect(frozen.cached).toBe(false);
    const shared = await evaluateCheckpoint(evalHome, BASE, marsConfig('shared'));
    expect(shared.cached).toBe(false); // its own entry, not the frozen one's
    expect(shared.identity).not.toEqual(frozen.identity);
    // at step 0 a frozen run's System 1 is the policy's weights: the same answers
    expect(shared.items).toEqual(frozen.items);
  }, 300_000);

  it('a frozen checkpoint evaluated under a shared config is not served the frozen result', async () => {
    const evalHome = fs.mkdtempSync(path.join(home, 'modes-'));
    const asFrozen = await evaluateCheckpoint(evalHome, frozenCk, marsConfig('frozen'));
    expect(asFrozen.cached).toBe(false);
    const asShared = await evaluateCheckpoint(evalHome, frozenCk, marsConfig('shared'));
    expect(asShared.cached).toBe(false);
    expect((await evaluateCheckpoint(evalHome, frozenCk, marsConfig('frozen'))).cached).toBe(true);
  }, 300_000);

  it('replacing sys1.safetensors alone makes another cache entry', async () => {
    const evalHome = fs.mkdtempSync(path.join(home, 'files-'));
    const copy = path.join(home, 'copy');
    fs.cpSync(frozenCk, copy, { recursive: true });
    expect((await evaluateCheckpoint(evalHome, copy, marsConfig('frozen'))).cached).toBe(false);
    // other System 1 weights (the last weight's lowest byte changed), the same config.json and model.safetensors
    const sys1 = fs.readFileSync(path.join(copy, SYS1_WEIGHTS));
    sys1.writeUInt8(sys1.readUInt8(sys1.length - 1) ^ 1, sys1.length - 1);
    fs.writeFileSync(path.join(copy, SYS1_WEIGHTS), sys1);
    expect((await evaluateCheckpoint(evalHome, copy, marsConfig('frozen'))).cached).toBe(false);
  }, 300_000);
});
