/**
 * Issue 17, fix 2 at the optimizer: under scheduleUnit 'trainingStep' every update of one training step uses that
 * step's learning rate, however many updates the step takes; an update without its training step is refused rather
 * than silently counted per update.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { tf } from '../../../engine/tensor/backend';
import { Adam } from '../../../engine/rl/adam';
import { lrAt, type LrSchedule } from '../../../engine/rl/schedule';
import { useBackend } from '../../helpers/backends';

beforeAll(() => useBackend('wasm'));

async function update(opt: Adam, trainingStep?: number) {
  const g = tf.tensor1d([0.3, -0.2]);
  const r = await opt.step({ w: g }, trainingStep);
  g.dispose();
  return r;
}

describe("Adam's schedule position", () => {
  const schedule: LrSchedule = { kind: 'cosine', lr: 1e-2, minLr: 1e-3, warmupSteps: 1, totalSteps: 3 };

  it("'trainingStep': four updates per training step all use the step's rate; the last step is at minLr", async () => {
    const w = tf.variable(tf.tensor1d([1, 2]));
    const opt = new Adam({ w }, { lr: schedule, scheduleUnit: 'trainingStep' });
    for (let s = 0; s < 4; s++) {
      expect(opt.nextLr(s)).toBeCloseTo(lrAt(schedule, s), 15);
      for (let k = 0; k < 4; k++) expect((await update(opt, s)).lr).toBeCloseTo(lrAt(schedule, s), 15);
    }
    expect(lrAt(schedule, 3)).toBeCloseTo(1e-3, 15);
    expect(lrAt(schedule, 2)).toBeGreaterThan(1e-3);
    expect(opt.stepCount).toBe(16); // bias correction still counts updates
    await expect(update(opt)).rejects.toThrow(/training step/);
    opt.dispose();
    w.dispose();
  });

  it("'update' (the default, pretraining's) still advances per update and ignores a training step", async () => {
    const w = tf.variable(tf.tensor1d([1, 2]));
    const opt = new Adam({ w }, { lr: schedule });
    const lrs = [];
    for (let k = 0; k < 4; k++) lrs.push((await update(opt, 0)).lr);
    expect(lrs).toEqual([0, 1, 2, 3].map((t) => lrAt(schedule, t)));
    opt.dispose();
    w.dispose();
  });
});
