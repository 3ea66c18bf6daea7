/**
 * Resume continues a run exactly: a run stopped (as by Ctrl-C) and resumed writes the same metrics, trajectories and
 * final weights as the same run left alone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { listCheckpoints, readRunMeta, runFilePaths } from '../../engine/runs/folder/runFolder';
import { resumeRun, startRun } from '../../engine/runs/runLoop';
import { useBackend } from '../helpers/backends';
import { metricLines, quickConfig } from '../helpers/runFixtures';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-resume-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('stop and resume', () => {
  it('a stopped-then-resumed run equals the uninterrupted run, line for line and weight for weight', async () => {
    const config = parseRunConfig(quickConfig({ steps: 12, checkpointEvery: 4, evalEvery: 6 }));
    const whole = await startRun(home, config);
    expect(whole.status).toBe('finished');

    const ctl = new AbortController();
    const part = await startRun(home, config, { signal: ctl.signal, onProgress: (p) => p.step === 5 && ctl.abort() });
    expect(part).toMatchObject({ status: 'stopped', step: 5 });
    expect(readRunMeta(part.dir).status).toBe('stopped');
    // Ctrl-C wrote a checkpoint at the step it stopped on, off the regular cadence.
    expect(listCheckpoints(part.dir).map((c) => c.step)).toEqual([4, 5]);

    const resumed = await resumeRun(part.dir);
    expect(resumed).toMatchObject({ status: 'finished', step: 12 });

    const [a, b] = [runFilePaths(whole.dir), runFilePaths(part.dir)];
    const lines = metricLines(b.metrics);
    expect(lines.map((l) => l.step)).toEqual([...Array(12).keys()].map((i) => i + 1));
    expect(lines).toEqual(metricLines(a.metrics));
    expect(lines.at(-1)!['eval.accuracy']).toBeTypeOf('number');
    expect(fs.readFileSync(b.trajectories, 'utf8')).toBe(fs.readFileSync(a.trajectories, 'utf8'));
    const weights = (dir: string) => fs.readFileSync(path.join(dir, 'checkpoints', '12', 'model.safetensors'));
    expect(weights(part.dir).equals(weights(whole.dir))).toBe(true);
    // the policy trained: the runs agree on something that moved
    expect(lines.at(-1)!.reward).not.toBe(lines[0]!.reward);
  });

  it("with a KL penalty the reference is the run's initial weights, rebuilt on resume: the resumed run equals the whole one", async () => {
    // rl.klCoef > 0 was accepted by the schema but crashed the seqgrpo trainer ("needs a reference model").
    const config = parseRunConfig({
      ...quickConfig({ steps: 6, checkpointEvery: 3, evalEvery: 0 }),
      rl: { lr: 3e-3, klCoef: 0.1 },
    });
    const whole = await startRun(home, config);
    expect(whole.status).toBe('finished');
    const part = await startRun(home, config, { stopAfterStep: 3 });
    expect((await resumeRun(part.dir)).status).toBe('finished');
    const lines = metricLines(runFilePaths(part.dir).metrics);
    expect(lines).toEqual(metricLines(runFilePaths(whole.dir).metrics));
    // the penalty is measured against a reference that starts equal to the policy and then differs from it
    expect(lines[0]!.kl).toBeCloseTo(0, 6);
    expect(lines.at(-1)!.kl).toBeGreaterThan(0);
  });

  it('lines written after the last checkpoint are dropped on resume and recomputed, never duplicated', async () => {
    const config = parseRunConfig(quickConfig({ steps: 8, checkpointEvery: 3, evalEvery: 0 }));
    const part = await startRun(home, config, { stopAfterStep: 3 });
    const files = runFilePaths(part.dir);
    // what a crash after step 3's checkpoint could leave: a whole line for step 4 and a torn one for step 5
    fs.appendFileSync(files.metrics, JSON.stringify({ step: 4, time: 0, reward: 9 }) + '\n{"step":5,"ti');
    await resumeRun(part.dir);
    const steps = metricLines(files.metrics).map((l) => l.step);
    expect(steps).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(metricLines(files.metrics)[3]!.reward).not.toBe(9);
  });

  it('a run whose trainer cannot be built ends failed with the reason, on start and on resume, not stuck as it was', async () => {
    const missing = path.join(home, 'no-such-checkpoint');
    const bad = parseRunConfig({
      ...quickConfig(),
      model: { size: 'micro', from: { kind: 'checkpoint', path: missing } },
    });
    let created = '';
    await expect(startRun(home, bad, { onCreated: (r) => (created = r.dir) })).rejects.toThrow(missing);
    expect(readRunMeta(created).status).toBe('failed');
    const failedEvent = fs
      .readFileSync(path.join(created, 'events.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .at(-1);
    expect(failedEvent).toMatchObject({ type: 'status', status: 'failed', step: 0 });
    expect(failedEvent.error).toContain(missing);

    const part = await startRun(home, parseRunConfig(quickConfig({ steps: 8, checkpointEvery: 2, evalEvery: 0 })), {
      stopAfterStep: 2,
    });
    expect(readRunMeta(part.dir).status).toBe('stopped');
    // A checkpoint that looks complete but whose weights are not safetensors any more.
    fs.writeFileSync(path.join(part.dir, 'checkpoints', '2', 'model.safetensors'), 'not safetensors');
    await expect(resumeRun(part.dir)).rejects.toThrow(/model\.safetensors/);
    expect(readRunMeta(part.dir)).toMatchObject({ status: 'failed' });
  });
});

describe('stop and resume a MARS run', () => {
  it('continues the same random streams: resumed metrics and episodes equal the uninterrupted run', async () => {
    const config = parseRunConfig({
      algorithm: 'mars',
      seed: 5,
      backend: 'wasm',
      model: { size: 'micro' },
      task: { questionsPerStep: 2, groupSize: 3, trainWorlds: 2, evalWorlds: 1 },
      mars: { maxTurns: 2, sys2TurnMax: 12, sys1ResponseMax: 8 },
      rl: { lr: 1e-2 },
      budget: { steps: 4 },
      eval: { every: 0, items: 7 },
      checkpoint: { every: 2 },
    });
    const whole = await startRun(home, config);
    const part = await startRun(home, config, { stopAfterStep: 2 });
    expect(part.status).toBe('stopped');
    await resumeRun(part.dir);
    const [a, b] = [runFilePaths(whole.dir), runFilePaths(part.dir)];
    expect(metricLines(b.metrics)).toEqual(metricLines(a.metrics));
    expect(fs.readFileSync(b.trajectories, 'utf8')).toBe(fs.readFileSync(a.trajectories, 'utf8'));
    const episodes = fs
      .readFileSync(a.trajectories, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(episodes).toHaveLength(4 * 2 * 3);
    expect(episodes[0]).toMatchObject({ kind: 'mars.episode', step: 1 });
    expect(episodes[0].turns.length).toBeGreaterThan(0);
  }, 120_000);

  it('with a KL penalty (both systems learning apart) the reference is rebuilt on resume: the resumed run equals the whole one', async () => {
    // rl.klCoef > 0 passed validation but crashed the MARS trainer at its first update ("needs a reference model").
    const config = parseRunConfig({
      algorithm: 'mars',
      seed: 6,
      backend: 'wasm',
      // the shipped base answers some questions, so groups have advantages and the policies move from the reference
      model: { size: 'tiny', from: { kind: 'checkpoint', path: path.resolve('resources/mars/base-tiny') } },
      task: { questionsPerStep: 4, groupSize: 4, trainWorlds: 2, evalWorlds: 1 },
      mars: { sys1Params: 'separate' },
      rl: { lr: 1e-2, klCoef: 0.1 },
      budget: { steps: 4 },
      eval: { every: 0, items: 7 },
      checkpoint: { every: 2 },
    });
    const whole = await startRun(home, config);
    expect(whole.status).toBe('finished');
    const part = await startRun(home, config, { stopAfterStep: 2 });
    expect((await resumeRun(part.dir)).status).toBe('finished');
    const lines = metricLines(runFilePaths(part.dir).metrics);
    expect(lines).toEqual(metricLines(runFilePaths(whole.dir).metrics));
    expect(lines.some((l) => typeof l.sys1Kl === 'number' && l.sys1Kl > 0)).toBe(true);
    expect(lines.some((l) => typeof l.kl === 'number' && l.kl > 0)).toBe(true);
  }, 120_000);
});

describe('loss options reach the update', () => {
  it('an entropy bonus (rl.entCoef) trains and is logged through the run loop', async () => {
    const config = parseRunConfig({
      ...quickConfig({ steps: 2, checkpointEvery: 2, evalEvery: 0 }),
      rl: { lr: 3e-3, entCoef: 0.01, klCoef: 0 },
    });
    const r = await startRun(home, config);
    expect(r.status).toBe('finished');
    expect(Number.isFinite(r.lastMetrics.loss)).toBe(true);
  });
});
