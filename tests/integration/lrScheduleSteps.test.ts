/**
 * Issue 17, fix 2: a learning-rate schedule spans the run's training steps (budget.steps), however many optimizer
 * steps each training step takes. It used to advance per optimizer step, so with rl.miniBatches = 2 a cosine over
 * budget.steps reached minLr halfway through the run. Resume still equals the uninterrupted run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { resumeRun, startRun } from '../../engine/runs/runLoop';
import { runFilePaths } from '../../engine/runs/folder/runFolder';
import { lrAt } from '../../engine/rl/schedule';
import { useBackend } from '../helpers/backends';
import { metricLines, quickConfig } from '../helpers/runFixtures';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-lrsched-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('lr schedules count training steps (issue 17, fix 2)', () => {
  const steps = 6;
  const lr = 3e-3;
  const minLr = 3e-4;
  const config = parseRunConfig({
    ...quickConfig({ steps, checkpointEvery: 3, evalEvery: 0 }),
    rl: { lr, miniBatches: 2, epochs: 2, schedule: { kind: 'cosine', warmupSteps: 0, minLr } },
  });

  it('a cosine over budget.steps with 4 optimizer steps per training step reaches minLr at the last step, not before', async () => {
    const whole = await startRun(home, config);
    expect(whole.status).toBe('finished');
    const lines = metricLines(runFilePaths(whole.dir).metrics);
    expect(lines.map((l) => l.step)).toEqual([1, 2, 3, 4, 5, 6]);
    const lrs = lines.map((l) => l.lr!);
    expect(lrs[0]).toBeCloseTo(lr, 12);
    expect(lrs.at(-1)).toBeCloseTo(minLr, 12);
    for (let i = 0; i < steps - 1; i++) {
      expect(lrs[i]!).toBeGreaterThan(lrs[i + 1]!);
      expect(lrs[i]!).toBeGreaterThan(minLr * 1.01);
    }
    // The half cosine over the 6 steps: step s (0-based) at minLr + (lr − minLr)·(1 + cos(π·s/5))/2.
    const cos = { kind: 'cosine', lr, minLr, warmupSteps: 0, totalSteps: steps - 1 } as const;
    lrs.forEach((x, s) => expect(x).toBeCloseTo(lrAt(cos, s), 12));
  }, 120_000);

  it('a stopped-then-resumed run follows the same rates and equals the uninterrupted run', async () => {
    const whole = await startRun(home, config);
    const part = await startRun(home, config, { stopAfterStep: 3 });
    expect(part.status).toBe('stopped');
    expect((await resumeRun(part.dir)).status).toBe('finished');
    const [a, b] = [runFilePaths(whole.dir), runFilePaths(part.dir)];
    expect(metricLines(b.metrics)).toEqual(metricLines(a.metrics));
    const weights = (dir: string) => fs.readFileSync(path.join(dir, 'checkpoints', String(steps), 'model.safetensors'));
    expect(weights(part.dir).equals(weights(whole.dir))).toBe(true);
  }, 120_000);
});
