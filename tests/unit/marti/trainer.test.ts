/**
 * The MARTI trainer's team structure and routing (docs/algorithms.md §3.1, §3.7): a homogeneous team really has one
 * parameter set, a heterogeneous one really has one per agent, and a real step's samples land in the buffer of the
 * parameter set of the agent that wrote them.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import type { MartiConfig } from '../../../engine/marti/configSchema';
import { teamOf } from '../../../engine/marti/team';
import { createMartiTrainer } from '../../../engine/marti/trainer';
import type { Sample } from '../../../engine/rl/sample';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';

beforeAll(() => useBackend('wasm'));

function config(over: Record<string, unknown>): MartiConfig {
  return parseRunConfig({
    algorithm: 'marti',
    seed: 4,
    backend: 'wasm',
    model: { size: 'micro' },
    task: { trainTasks: 12, maxProgramTokens: 10 },
    marti: { problemsPerStep: 3, nodesPerTree: 4, trainBatch: 1000, ...over },
    rl: { klCoef: 0 },
    eval: { items: 2 },
  }) as MartiConfig;
}

interface TreeRec {
  treeId: string;
  nodes: {
    id: number;
    agent: string | null;
    paramId: string | null;
    trained: boolean | 'buffered';
    advantage: number | null;
  }[];
}

describe('MARTI parameter sets', () => {
  it('homogeneous: both agents write with, and train, the same single parameter set', async () => {
    const cfg = config({ configuration: 'homogeneous' });
    expect(teamOf(cfg).map((a) => a.paramId)).toEqual(['shared', 'shared']);
    const tr = await createMartiTrainer(cfg);
    try {
      expect(tr.parameterSets.map((s) => s.id)).toEqual(['shared']);
      const snap = await tr.snapshot();
      // nothing beyond the one model is saved: there is no second set
      expect(Object.keys(snap.files)).toEqual(['mars-lab-tokenizer.json']);
    } finally {
      tr.dispose();
    }
  });

  it('heterogeneous: two sets with disjoint variables; changing one leaves the other as it was', async () => {
    const tr = await createMartiTrainer(config({ configuration: 'heterogeneous' }));
    try {
      const sets = tr.parameterSets;
      expect(sets.map((s) => s.id)).toEqual(['alpha', 'beta']);
      const [a, b] = [sets[0]!.model, sets[1]!.model];
      expect(a).not.toBe(b);
      const varsA = new Set(a.variables());
      expect(b.variables().some((v) => varsA.has(v))).toBe(false);
      const name = [...a.params.keys()][0]!;
      const before = (await b.params.get(name)!.data()).slice();
      a.params.get(name)!.assign(tf.zerosLike(a.params.get(name)!));
      expect(Array.from(await b.params.get(name)!.data())).toEqual(Array.from(before));
      expect(Array.from(await a.params.get(name)!.data()).every((x) => x === 0)).toBe(true);
    } finally {
      tr.dispose();
    }
  });

  it('single: one set, and only the first agent writes', async () => {
    const tr = await createMartiTrainer(config({ configuration: 'single' }));
    try {
      expect(tr.parameterSets.map((s) => s.id)).toEqual(['policy']);
      const out = await tr.trainStep();
      const agents = new Set((out.trajectories as TreeRec[]).flatMap((t) => t.nodes.slice(1).map((n) => n.agent)));
      expect([...agents]).toEqual(['alpha']);
    } finally {
      tr.dispose();
    }
  });
});

describe('MARTI routing of a real step', () => {
  for (const configuration of ['heterogeneous', 'homogeneous'] as const) {
    it(`${configuration}: every node's sample is in the buffer of its writer's parameter set, with the tree's advantage`, async () => {
      const tr = await createMartiTrainer(config({ configuration, agentSelect: 'ucb' }));
      try {
        const out = await tr.trainStep();
        const trees = out.trajectories as TreeRec[];
        const state = (await tr.snapshot()).state as { paramSets: { id: string; buffer: Sample[] }[] };
        const nodes = trees.flatMap((t) => t.nodes.slice(1).map((n) => ({ ...n, treeId: t.treeId })));
        expect(nodes).toHaveLength(3 * 4);
        // UCB tries every agent first, so both agents wrote nodes in every tree
        expect(new Set(nodes.map((n) => n.agent))).toEqual(new Set(['alpha', 'beta']));
        for (const n of nodes) expect(n.paramId).toBe(configuration === 'heterogeneous' ? n.agent : 'shared');
        for (const set of state.paramSets) {
          const mine = nodes.filter((n) => n.paramId === set.id);
          expect(set.buffer.length).toBe(mine.length);
          expect(set.buffer.every((s) => s.paramId === set.id)).toBe(true);
          // same order as the trees and nodes: tree by tree, node by node
          expect(set.buffer.map((s) => [s.groupId, s.advantage])).toEqual(mine.map((n) => [n.treeId, n.advantage]));
          expect(mine.every((n) => n.trained === 'buffered')).toBe(true);
        }
        expect(state.paramSets.map((s) => s.id)).toEqual(
          configuration === 'heterogeneous' ? ['alpha', 'beta'] : ['shared'],
        );
      } finally {
        tr.dispose();
      }
    });
  }
});
