/**
 * Issue 17's MARTI study presets: every preset and variant resolves; marti-hetero-bases really starts its two agents
 * from different weights (marti-hetero starts them from one checkpoint: two copies), and 'swapped' exchanges them;
 * the update-count control halves the shared policy's optimiser steps; the search variants set what they say.
 */
import { describe, expect, it } from 'vitest';
import type { MartiConfig } from '../../../engine/marti/configSchema';
import { createMartiTrainer } from '../../../engine/marti/trainer';
import { loadPreset, resolvePresetConfig } from '../../../engine/runs/presets/presets';
import { initBackend } from '../../../engine/tensor/backend';

const NEW = ['marti-hetero-bases', 'marti-homo-updates', 'marti-search'] as const;
// a small task pool: building the trainer must not generate the presets' 2000 training tasks
const SMALL = ['task.trainTasks=4', 'eval.items=4'];

const resolve = (name: string, variant?: string) => resolvePresetConfig(name, SMALL, undefined, variant) as MartiConfig;

/** The first agent's and the second agent's initial weights, flattened (one tensor is enough to tell them apart). */
async function initialWeights(cfg: MartiConfig): Promise<Float32Array[]> {
  const trainer = await createMartiTrainer(cfg);
  try {
    return trainer.parameterSets.map((s) => s.model.params.get('layers.0.wq')!.dataSync() as Float32Array);
  } finally {
    trainer.dispose();
  }
}

const same = (a: Float32Array, b: Float32Array) => a.length === b.length && a.every((x, i) => x === b[i]);

describe('issue 17 MARTI study presets', () => {
  it('every new preset and each of its variants resolves to a marti config', () => {
    for (const name of NEW) {
      expect(resolve(name).algorithm).toBe('marti');
      for (const v of Object.keys(loadPreset(name).variants ?? {})) expect(resolve(name, v).algorithm).toBe('marti');
    }
  });

  it('marti-hetero-bases starts its two agents from different weights; marti-hetero from two copies', async () => {
    await initBackend({ force: 'cpu' });
    const bases = resolve('marti-hetero-bases');
    expect(bases.marti.configuration).toBe('heterogeneous');
    expect(bases.marti.agents.map((a) => (a.from?.kind === 'checkpoint' ? a.from.path : null))).toEqual([
      'resources/marti/base-tiny',
      'resources/marti/base-tiny-s1',
    ]);
    const [alpha, beta] = await initialWeights(bases);
    expect(alpha).toBeDefined();
    expect(same(alpha!, beta!)).toBe(false);
    const [h0, h1] = await initialWeights(resolve('marti-hetero'));
    expect(same(h0!, h1!)).toBe(true);
    // alpha starts where marti-hetero's agents start, beta elsewhere; 'swapped' exchanges them
    expect(same(alpha!, h0!)).toBe(true);
    const [sa, sb] = await initialWeights(resolve('marti-hetero-bases', 'swapped'));
    expect(same(sa!, beta!)).toBe(true);
    expect(same(sb!, alpha!)).toBe(true);
    // otherwise the same recipe as marti-hetero
    const h = resolve('marti-hetero');
    expect({ ...bases.marti, agents: [] }).toEqual({ ...h.marti, agents: [] });
    expect(bases.rl).toEqual(h.rl);
    expect(bases.task).toEqual(h.task);
  });

  it('marti-homo-updates takes minibatches twice as large as a heterogeneous agent, otherwise marti-homo', () => {
    const c = resolve('marti-homo-updates');
    const homo = resolve('marti-homo');
    expect(c.marti.trainBatch).toBe(2 * resolve('marti-hetero').marti.trainBatch);
    expect({ ...c.marti, trainBatch: 0 }).toEqual({ ...homo.marti, trainBatch: 0 });
    expect(c.rl).toEqual(homo.rl);
    const s1 = resolve('marti-homo-updates', 'base-s1');
    expect(s1.model.from).toEqual({ kind: 'checkpoint', path: 'resources/marti/base-tiny-s1' });
  });

  it('marti-search compares T+ and plain search at the same budget, and its variants set the budget, posterior and agent choice', () => {
    const c = resolve('marti-search');
    expect(c.marti.tplus.enabled).toBe(true);
    expect(c.marti.evalNodes).toBe(c.marti.tplus.nodes);
    for (const n of [4, 8, 16, 32]) {
      const v = resolve('marti-search', `nodes-${n}`);
      expect([v.marti.evalNodes, v.marti.tplus.nodes, v.marti.nodesPerTree]).toEqual([n, n, 8]);
    }
    expect(resolve('marti-search', 'gaussian').marti.posterior).toBe('gaussian');
    expect(c.marti.posterior).toBe('beta');
    expect(resolve('marti-search', 'ucb').marti.agentSelect).toBe('ucb');
    expect(c.marti.agentSelect).toBe('thompson');
  });
});
