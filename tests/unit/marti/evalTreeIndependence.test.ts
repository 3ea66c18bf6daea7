/**
 * Issue 32, defect 4: a problem's evaluation tree depends on that problem only. The evaluation used to draw one search
 * stream and one token stream for the whole batch, so a problem's tree changed with the problems evaluated beside it
 * (measured: Gaussian − Beta −0.011 in one run, +0.062 in another on the same problems). Each tree now draws from
 * streams split by its own id. Checked here by evaluating the shipped base on 6 problems and on 12 (the same first 6),
 * with sampled search and several agents: the first six trees are identical, node for node.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../../../engine/model/formats/checkpoint';
import type { MartiConfig } from '../../../engine/marti/configSchema';
import { evaluateMartiDetailed } from '../../../engine/marti/evaluate';
import type { MartiTree } from '../../../engine/marti/rollout';
import { resolvePresetConfig } from '../../../engine/runs/presets/presets';
import { useBackend } from '../../helpers/backends';

beforeAll(() => useBackend('wasm'));

const config = (items: number, drawSeed = 0) =>
  resolvePresetConfig('marti-homo', [
    `eval.items=${items}`,
    `eval.drawSeed=${drawSeed}`,
    'eval.temperature=1',
    'marti.evalNodes=6',
    'marti.evalSearchTemperature=1',
    'marti.tplus.enabled=true',
    'marti.tplus.nodes=4',
  ]) as MartiConfig;

/** What a tree is, without timings: each node's parent, agent, program and scores, in order. */
const shape = (t: MartiTree) =>
  t.nodes.map((n) => ({
    parent: n.parentId,
    agent: n.agentId,
    program: n.program,
    score: n.publicScore,
    tokens: n.payload?.outputTokens ?? null,
  }));

describe('MARTI evaluation: a tree is seeded by its problem', () => {
  it('the first 6 problems grow the same trees whether 6 or 12 problems are evaluated', async () => {
    const { model } = await loadCheckpoint('resources/marti/base-tiny');
    try {
      const models = new Map([['shared', model]]);
      const six = await evaluateMartiDetailed(config(6), models);
      const twelve = await evaluateMartiDetailed(config(12), models);
      expect(twelve.result.items.slice(0, 6).map((i) => i.id)).toEqual(six.result.items.map((i) => i.id));
      for (const mode of ['pass1', 'search', 'tplus'] as const) {
        expect(six.trees[mode]).toHaveLength(6);
        expect(twelve.trees[mode].slice(0, 6).map(shape)).toEqual(six.trees[mode].map(shape));
      }
      // sampled search really branches: not every tree is a chain of one agent's identical programs
      const programs = new Set(six.trees.search.flatMap((t) => t.nodes.map((n) => n.program)));
      expect(programs.size).toBeGreaterThan(6);
    } finally {
      model.dispose();
    }
  }, 300_000);

  it('eval.drawSeed changes the draws, not the problems: other trees on the same items, its own cache identity', async () => {
    const { model } = await loadCheckpoint('resources/marti/base-tiny');
    try {
      const models = new Map([['shared', model]]);
      const a = await evaluateMartiDetailed(config(6), models);
      const b = await evaluateMartiDetailed(config(6, 7), models);
      expect(b.result.items.map((i) => i.id)).toEqual(a.result.items.map((i) => i.id));
      expect(b.trees.search.map(shape)).not.toEqual(a.trees.search.map(shape));
      expect(b.result.identity).not.toEqual(a.result.identity);
    } finally {
      model.dispose();
    }
  }, 300_000);
});
