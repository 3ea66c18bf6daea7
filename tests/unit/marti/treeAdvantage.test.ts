import { describe, expect, it } from 'vitest';
import {
  addNode,
  forceExpansion,
  makeSearchConfig,
  newTree,
  type SearchTree,
} from '../../../engine/marti/search/abmcts';
import { routeTreeSamples, treeAdvantages } from '../../../engine/marti/treeAdvantage';

/** Builds a tree from [parentId, agentId, score] rows, in id order (row i becomes node i + 1). */
function handTree(id: string, rows: [number, string, number][], agents = ['A', 'B']): SearchTree<unknown> {
  const tree = newTree(id, makeSearchConfig({ agents, nodesPerTree: rows.length }));
  for (const [parent, agent, score] of rows) {
    addNode(tree, forceExpansion(tree, parent, agent), {
      program: `${agent}${tree.nodes.length}`,
      score,
      privateScore: score,
    });
  }
  return tree;
}

// root → 1 (A, 1), 2 (B, 0); 1 → 3 (B, 1); 3 → 4 (A, 0); 2 → 5 (A, 0)
const rows: [number, string, number][] = [
  [0, 'A', 1],
  [0, 'B', 0],
  [1, 'B', 1],
  [3, 'A', 0],
  [2, 'A', 0],
];
// r = [1, 0, 1, 0, 0]: μ = 0.4, Σ(r−μ)² = 2·0.36 + 3·0.16 = 1.2, σ = sqrt(1.2/4) = sqrt(0.3)
const sigma = Math.sqrt(0.3);
const hi = 0.6 / (sigma + 1e-9);
const lo = -0.4 / (sigma + 1e-9);

describe('tree-group advantages (docs/algorithms.md §3.7)', () => {
  it('z-scores all nodes of the tree as one group, whatever agent wrote them (eps 1e-9, unbiased std)', () => {
    const ta = treeAdvantages(handTree('t', rows));
    expect(ta.nodes.map((n) => n.nodeId)).toEqual([1, 2, 3, 4, 5]);
    expect(ta.nodes.map((n) => n.agentId)).toEqual(['A', 'B', 'B', 'A', 'A']);
    [hi, lo, hi, lo, lo].forEach((x, i) => expect(ta.nodes[i]!.advantage).toBeCloseTo(x, 12));
    expect(ta.nodes.reduce((s, n) => s + n.advantage, 0)).toBeCloseTo(0, 12);
    expect(ta.degenerate).toBe(false);
    expect(ta.dropped).toBe(false);
  });

  it('all-equal scores give exactly zero advantages (and dynamicFiltering drops the tree); a singleton gives 0', () => {
    const same = handTree('same', [
      [0, 'A', 1],
      [1, 'B', 1],
      [0, 'B', 1],
    ]);
    const ta = treeAdvantages(same);
    expect(ta.nodes.every((n) => n.advantage === 0)).toBe(true);
    expect(ta.degenerate).toBe(true);
    expect(ta.dropped).toBe(false);
    expect(treeAdvantages(same, { dynamicFiltering: true }).dropped).toBe(true);
    expect(routeTreeSamples([same], (a) => a, { dynamicFiltering: true }).size).toBe(0);
    const zeros = handTree('zeros', [
      [0, 'A', 0],
      [0, 'B', 0],
    ]);
    expect(treeAdvantages(zeros).nodes.map((n) => n.advantage)).toEqual([0, 0]);
    const one = handTree('one', [[0, 'A', 1]]);
    expect(treeAdvantages(one).nodes.map((n) => n.advantage)).toEqual([0]);
  });

  it('tree shaping: b = (1−λ)·r_parent + λ·mean(siblings), one term alone when only one exists, none at a lone root child', () => {
    // root → 1 (1), 2 (0); 1 → 3 (1), 6 (0); 3 → 4 (0); 2 → 5 (0). γ = λ = 0.5.
    const t = handTree('s', [...rows, [1, 'B', 0]]);
    const ta = treeAdvantages(t, { treeShaping: true });
    const shaped = ta.nodes.map((n) => n.shapedReward);
    // 1: parent is the root, sibling {2}=0 → b = 0 → 1 + 0.5·1 = 1.5
    // 2: sibling {1}=1 → b = 1 → 0 − 0.5 = −0.5
    // 3: parent 1 (=1), sibling {6}=0 → b = 0.5 → 1 + 0.25 = 1.25
    // 4: parent 3 (=1), no sibling → b = 1 → −0.5
    // 5: parent 2 (=0), no sibling → b = 0 → 0
    // 6: parent 1 (=1), sibling {3}=1 → b = 1 → −0.5
    [1.5, -0.5, 1.25, -0.5, 0, -0.5].forEach((x, i) => expect(shaped[i]).toBeCloseTo(x, 12));
    expect(ta.nodes.map((n) => n.reward)).toEqual([1, 0, 1, 0, 0, 0]);
    const lone = handTree('lone', [[0, 'A', 1]]);
    expect(treeAdvantages(lone, { treeShaping: true }).nodes[0]!.shapedReward).toBe(1);
  });

  it('overlong penalty: exceed = min(len − (Lmax − Lbuf), Lbuf), r −= exceed/Lbuf·factor', () => {
    const t = handTree('o', [
      [0, 'A', 1],
      [0, 'B', 1],
      [0, 'A', 1],
    ]);
    const lens: Record<number, number> = { 1: 5, 2: 8, 3: 20 };
    const ta = treeAdvantages(t, {
      overlongPenalty: { maxLen: 10, buffer: 4, factor: 1, lengthOf: (n) => lens[n.id]! },
    });
    // 1: exceed = −1 → 1; 2: exceed = 2 → 1 − 0.5; 3: exceed = min(14, 4) = 4 → 1 − 1
    expect(ta.nodes.map((n) => n.shapedReward)).toEqual([1, 0.5, 0]);
    expect(ta.degenerate).toBe(false);
  });
});

describe('routing (§3.7, §7.19)', () => {
  const trees = [
    handTree('t0', rows),
    handTree('t1', [
      [0, 'B', 1],
      [0, 'A', 0],
    ]),
  ];

  it('heterogeneous: each parameter set gets only its own agent’s nodes, with the tree-group advantages', () => {
    const buffers = routeTreeSamples(trees);
    expect([...buffers.keys()]).toEqual(['A', 'B']);
    const a = buffers.get('A')!;
    const b = buffers.get('B')!;
    expect(a.every((s) => s.agentId === 'A' && s.paramId === 'A')).toBe(true);
    expect(b.every((s) => s.agentId === 'B' && s.paramId === 'B')).toBe(true);
    expect(a.map((s) => [s.treeId, s.nodeId])).toEqual([
      ['t0', 1],
      ['t0', 4],
      ['t0', 5],
      ['t1', 2],
    ]);
    expect(b.map((s) => [s.treeId, s.nodeId])).toEqual([
      ['t0', 2],
      ['t0', 3],
      ['t1', 1],
    ]);
    [hi, lo, lo].forEach((x, i) => expect(a[i]!.advantage).toBeCloseTo(x, 12));
    [lo, hi].forEach((x, i) => expect(b[i]!.advantage).toBeCloseTo(x, 12));
    // t1: r = [1, 0]: μ = 0.5, σ = sqrt(0.5/1) → ±0.5/(sqrt(0.5) + 1e-9) ≈ ±0.7071
    expect(a[3]!.advantage).toBeCloseTo(-0.5 / (Math.SQRT1_2 + 1e-9), 12);
    expect(b[2]!.advantage).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-9), 12);
  });

  it('homogeneous: one buffer, and every node has the same advantage as under heterogeneous routing', () => {
    const shared = routeTreeSamples(trees, () => 'shared');
    expect([...shared.keys()]).toEqual(['shared']);
    const all = shared.get('shared')!;
    expect(all).toHaveLength(7);
    const hetero = [...routeTreeSamples(trees).values()].flat();
    for (const s of all) {
      const h = hetero.find((x) => x.treeId === s.treeId && x.nodeId === s.nodeId)!;
      expect(h.advantage).toBe(s.advantage);
    }
  });
});
