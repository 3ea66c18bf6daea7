import { describe, expect, it } from 'vitest';
import { Rng } from '../../../engine/random/prng';
import {
  addNode,
  forceExpansion,
  isComplete,
  makeSearchConfig,
  newTree,
  selectExpansion,
} from '../../../engine/marti/search/abmcts';
import {
  avgPass1,
  chooseFinal,
  pass1,
  passN,
  treeMetrics,
  verifierMixedScore,
} from '../../../engine/marti/search/metrics';

const n = (id: number, publicScore: number, privateScore: number) => ({ id, publicScore, privateScore });

describe('§3.9 metrics', () => {
  it('pass1 takes the highest publicScore, ties going to the newest node, and reports its privateScore', () => {
    expect(pass1([n(1, 1, 1), n(2, 1, 0)])).toBe(0); // newest of the tie
    expect(pass1([n(2, 1, 0), n(1, 1, 1)])).toBe(0); // order of the list does not matter, ids do
    expect(pass1([n(1, 1, 1), n(2, 0, 0)])).toBe(1);
    expect(pass1([n(1, 0, 1)])).toBe(1); // one node: plain accuracy
    expect(pass1([])).toBe(0);
  });

  it('passN is the best privateScore (≥ pass1); avgPass1 averages privateScore over public passes, 0 if none', () => {
    const nodes = [n(1, 1, 0), n(2, 0, 1), n(3, 1, 1), n(4, 1, 0)];
    expect(passN(nodes)).toBe(1);
    expect(avgPass1(nodes)).toBeCloseTo(1 / 3, 15);
    expect(avgPass1([n(1, 0, 1)])).toBe(0);
    expect(() => passN([{ id: 1, publicScore: 1, privateScore: null }])).toThrow(/privateScore/);
    const rng = new Rng(4);
    for (let t = 0; t < 200; t++) {
      const xs = Array.from({ length: 1 + rng.int(6) }, (_, i) => n(i + 1, rng.int(2), rng.int(2)));
      expect(passN(xs)).toBeGreaterThanOrEqual(pass1(xs));
    }
  });

  it('treeMetrics excludes the root and reports the pass@N − pass@1 gap', () => {
    const tree = newTree('m', makeSearchConfig({ agents: ['A'], nodesPerTree: 3 }));
    addNode(tree, forceExpansion(tree, 0, 'A'), { program: 'a', score: 0, privateScore: 1 });
    addNode(tree, forceExpansion(tree, 1, 'A'), { program: 'b', score: 1, privateScore: 0 });
    addNode(tree, forceExpansion(tree, 0, 'A'), { program: 'c', score: 0, privateScore: 0 });
    expect(treeMetrics(tree)).toEqual({ nodes: 3, pass1: 0, passN: 1, avgPass1: 0, gap: 1 });
  });
});

describe('T+ final answer (§3.10)', () => {
  it('chooseFinal picks the highest score, newest on ties; by publicScore matches pass1’s pick', () => {
    const tree = newTree('f', makeSearchConfig({ agents: ['A', 'B'], nodesPerTree: 4 }));
    addNode(tree, forceExpansion(tree, 0, 'A'), { program: 'a', score: 1, privateScore: 1 });
    addNode(tree, forceExpansion(tree, 0, 'B'), { program: 'b', score: 0, privateScore: 0 });
    addNode(tree, forceExpansion(tree, 2, 'A'), { program: 'c', score: 1, privateScore: 0 });
    expect(chooseFinal(tree)!.id).toBe(3);
    // With a verifier the search score is the λ-mix; the public tests alone would still pick node 3.
    addNode(tree, forceExpansion(tree, 1, 'B'), {
      program: 'd',
      score: verifierMixedScore(1, 0.9),
      publicScore: 1,
      privateScore: 1,
    });
    expect(verifierMixedScore(1, 0.9)).toBeCloseTo(0.95, 15);
    expect(chooseFinal(tree)!.id).toBe(3); // nodes 1 and 3 score 1 > 0.95; 3 is newer
    expect(chooseFinal(tree, { by: 'publicScore' })!.id).toBe(4);
    expect(chooseFinal(newTree('e', tree.config))).toBeUndefined();
  });

  it('a larger budget is only config: a T+ search runs to its budget with depth weighting on', () => {
    const cfg = makeSearchConfig({ agents: ['A', 'B'], nodesPerTree: 16, depthWeighting: true });
    expect(cfg.depthWeighting).toEqual({ alpha: 0.5, beta: 0.25 });
    const tree = newTree('tp', cfg);
    const rng = new Rng(8);
    while (!isComplete(tree)) {
      const e = selectExpansion(tree, rng);
      addNode(tree, e, { program: `${e.nodeId}`, score: e.depth >= 2 ? 1 : 0, privateScore: e.depth >= 3 ? 1 : 0 });
    }
    expect(tree.nodes).toHaveLength(17);
    for (const node of tree.nodes.slice(1)) {
      expect(node.genObservation).toBeGreaterThanOrEqual(0);
      // ω·s, not clamped to 1 under Beta since issue 17 (docs/algorithms/tplus.md): zero exactly for a failing node
      expect(node.genObservation === 0).toBe(node.score === 0);
    }
    expect(chooseFinal(tree)!.score).toBe(1);
  });
});
