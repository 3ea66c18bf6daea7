/**
 * From trajectories to updates (docs/algorithms.md §2.5–2.8): balancing happens after advantages, an all-equal question
 * gives zero gradient, and each parameter mode routes samples to the right parameter set (§7.7, §7.9, §7.10).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import type { MarsConfig } from '../../../engine/mars/configSchema';
import { questionBatch } from '../../../engine/mars/marsBatch';
import type { Sys1Call, Trajectory } from '../../../engine/mars/rollout';
import { routeSamples } from '../../../engine/mars/trainer';
import { Rng } from '../../../engine/random/prng';
import { Adam } from '../../../engine/rl/adam';
import { adamVariables, policyUpdate } from '../../../engine/rl/policyUpdate';
import { tinyModel } from '../../helpers/tinyModel';
import { useBackend } from '../../helpers/backends';

const settings = (over: Record<string, unknown> = {}) =>
  (parseRunConfig({ algorithm: 'mars', mars: over }) as MarsConfig).mars;

function call(tag: number): Sys1Call {
  return {
    pages: [{ id: `p${tag}`, take: 3 }],
    used: 4,
    prompt: [1, 5, 6, 7],
    output: [8 + (tag % 5), 2],
    logProbs: [-1, -0.5],
  };
}

/** A hand-made group: rewards and the number of System 1 calls of each trajectory. */
function group(rewards: number[], calls: number[]): Trajectory[] {
  let tag = 0;
  return rewards.map((r, k) => ({
    question: { id: 'q', family: 'direct', text: 'x', answers: ['y'], env: { search: () => [] } },
    tokens: [1, 4, 9, 10, 11],
    lossMask: [0, 0, 1, 1, 1],
    behaviourLogProbs: [0, 0, -1, -1, -1],
    promptLength: 2,
    turns: [
      {
        tokens: [9, 10, 11],
        logProbs: [-1, -1, -1],
        query: 'q',
        purpose: null,
        answer: null,
        searched: true,
        results: [],
        sys1: Array.from({ length: calls[k]! }, () => call(tag++)),
        capacity: 8,
        info: [],
      },
    ],
    answer: null,
    end: 'answer',
    reward: r,
    f1: r,
  }));
}

beforeAll(() => useBackend('cpu'));

describe('MARS batch', () => {
  it('balances after advantages: kept System 1 samples carry their full-pool advantages (§2.7, §7.7)', () => {
    // r = [1, 0], n = [3, 1]: the worked example, G = 2 → two of the four System 1 samples are kept
    const b = questionBatch(group([1, 0], [3, 1]), settings(), 0, new Rng(3));
    expect(b.a2[0]).toBeCloseTo(Math.SQRT1_2, 12);
    expect(b.a1).toEqual([[0.5, 0.5, 0.5], [-1.5]].map((r) => r.map((x) => expect.closeTo(x, 12))));
    expect(b.sys1).toHaveLength(2);
    expect(b.sys1Before).toBe(4);
    for (const s of b.sys1) expect([0.5, -1.5].some((a) => Math.abs(a - s.advantage) < 1e-12)).toBe(true);
    expect(b.kept.flat().reduce((a, c) => a + c, 0)).toBe(2);
    // the precompute ablation normalises the kept samples instead: their advantages come from the kept pool only
    const ab = questionBatch(group([1, 0], [3, 1]), settings({ precompute: false }), 0, new Rng(3));
    const keptRewards = ab.sys1.map((s) => s.reward);
    if (new Set(keptRewards).size === 1) expect(ab.sys1.every((s) => s.advantage === 0)).toBe(true);
    else {
      expect(ab.sys1.map((s) => Math.abs(s.advantage))).toEqual(
        [Math.SQRT1_2, Math.SQRT1_2].map((x) => expect.closeTo(x, 12)),
      );
    }
  });

  it('balancing off keeps all M; fewer than G System 1 samples are topped up to G with every original kept', () => {
    const off = questionBatch(group([1, 0, 0], [2, 2, 1]), settings({ balance: 'off' }), 1e-6, new Rng(1));
    expect(off.sys1).toHaveLength(5);
    const few = questionBatch(group([1, 0, 1, 0], [1, 0, 0, 1]), settings(), 1e-6, new Rng(1));
    expect(few.sys1).toHaveLength(4);
    expect(few.kept.flat().every((n) => n >= 1)).toBe(true);
  });

  it('an all-equal question gives zero advantages everywhere and zero gradient (§2.9, §7.10)', async () => {
    const b = questionBatch(group([1, 1, 1], [2, 1, 3]), settings(), 1e-6, new Rng(2));
    expect([...b.a2, ...b.a1.flat(), ...b.sys1.map((s) => s.advantage)].every((a) => a === 0)).toBe(true);
    const model = tinyModel(1);
    const opt = new Adam(adamVariables(model), { lr: 1e-2 });
    const st = await policyUpdate(model, opt, [...b.sys2, ...b.sys1], { loss: { kind: 'ppoToken' } });
    expect(st.gradNorm).toBe(0);
    model.dispose();
    opt.dispose();
  });

  it('routes samples by parameter mode: separate keeps the systems apart; frozen and off never train System 1 (§7.9)', () => {
    const b = questionBatch(group([1, 0], [2, 1]), settings(), 1e-6, new Rng(5));
    const roles = (xs: { role: string }[]) => [...new Set(xs.map((x) => x.role))].sort();
    expect(roles(routeSamples('shared', b.sys2, b.sys1).policy)).toEqual(['sys1', 'sys2']);
    const sep = routeSamples('separate', b.sys2, b.sys1);
    expect(roles(sep.policy)).toEqual(['sys2']);
    expect(roles(sep.sys1Model)).toEqual(['sys1']);
    for (const mode of ['frozen', 'sharedUntrained', 'off'] as const) {
      const r = routeSamples(mode, b.sys2, b.sys1);
      expect(roles(r.policy)).toEqual(['sys2']);
      expect(r.sys1Model).toEqual([]);
    }
  });
});
