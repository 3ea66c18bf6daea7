/**
 * A sampled MARTI evaluation (eval.temperature > 0) also reports pass1Greedy, and that figure is exactly the pass1 a
 * greedy evaluation of the same checkpoint reports: same tasks, same agent choices, temperature 0. Uses the shipped base
 * on 1–2-operation tasks, where greedy pass@1 is far from 0, so equal figures are not two zeros.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../../../engine/model/formats/checkpoint';
import type { MartiConfig } from '../../../engine/marti/configSchema';
import { evaluateMarti } from '../../../engine/marti/evaluate';
import { resolvePresetConfig } from '../../../engine/runs/presets/presets';
import { useBackend } from '../../helpers/backends';

beforeAll(() => useBackend('wasm'));

const sets = (temperature: number) => [
  'task.minOps=1',
  'task.maxOps=2',
  'eval.items=24',
  `eval.temperature=${temperature}`,
  'marti.evalNodes=1',
  'marti.tplus.enabled=false',
];

describe('MARTI evaluation: sampled and greedy pass@1', () => {
  it('pass1Greedy of a sampled evaluation equals pass1 of a greedy one', async () => {
    const { model } = await loadCheckpoint('resources/marti/base-tiny');
    try {
      const models = new Map([['shared', model]]);
      const greedy = await evaluateMarti(resolvePresetConfig('marti-homo', sets(0)) as MartiConfig, models);
      const sampled = await evaluateMarti(resolvePresetConfig('marti-homo', sets(1)) as MartiConfig, models);
      expect(greedy.metrics.pass1).toBeGreaterThan(0);
      expect(greedy.metrics.pass1Greedy).toBe(greedy.metrics.pass1);
      expect(sampled.metrics.pass1Greedy).toBe(greedy.metrics.pass1);
      // the sampled figure is its own measurement (different programs), not a copy of the greedy one
      expect(sampled.items.map((i) => i.output)).not.toEqual(greedy.items.map((i) => i.output));
    } finally {
      model.dispose();
    }
  }, 120_000);
});
