/**
 * The fast presets keep their promise at every declared seed (issue 19: seqgrpo-copy ended at held-out accuracy 0.59,
 * not the promised 1, at the default seed, and at 0.03 at seed 1). Each preset is run unchanged but for its seed, on
 * the wasm backend as on the machines this project targets; the slow presets' promises are checked by
 * `npm run check:presets`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkPresetPromise } from '../../engine/runs/presets/presetCheck';
import { listPresets } from '../../engine/runs/presets/presets';
import { useBackend } from '../helpers/backends';

/** Presets quick enough to run at every seed in the suite. */
const FAST_SECONDS = 30;
const fast = listPresets().filter((p) => p.success && (p.expectedRuntime.cpuSeconds ?? Infinity) <= FAST_SECONDS);

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-promise-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('preset promises', () => {
  it('the first presets declare a checkable promise, over several seeds', () => {
    const names = fast.map((p) => p.name);
    expect(names).toEqual(expect.arrayContaining(['seqgrpo-copy', 'seqgrpo-increment']));
    for (const p of fast) expect(p.success!.seeds.length).toBeGreaterThanOrEqual(3);
  });

  for (const preset of fast) {
    it(`${preset.name}: ${preset.success!.metric} ≥ ${preset.success!.atLeast} at seeds ${preset.success!.seeds.join(', ')}`, async () => {
      const check = await checkPresetPromise(home, preset);
      expect(check.outcomes.map((o) => ({ seed: o.seed, value: o.value }))).toEqual(
        preset.success!.seeds.map((seed) => ({ seed, value: expect.any(Number) })),
      );
      for (const o of check.outcomes) expect(o.value, `seed ${o.seed}`).toBeGreaterThanOrEqual(preset.success!.atLeast);
    }, 600_000);
  }
});
