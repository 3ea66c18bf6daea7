/**
 * Issue 17, fix 3: T+ depth-guided GEN credit (docs/algorithms.md §3.10 b; the form is docs/algorithms/tplus.md) acts
 * under the Beta posterior. With 0/1 scores the weighted observation ω·s used to be clamped to [0, 1], so a deep passing
 * node could never raise its parent's GEN credit above an unweighted pass; only crowding (ω < 1) acted. Now the credit
 * acts on pseudo-counts: a += ω·s, b += 1 − s.
 */
import { describe, expect, it } from 'vitest';
import { Rng } from '../../../engine/random/prng';
import {
  addNode,
  forceExpansion,
  isComplete,
  makeSearchConfig,
  newTree,
  selectExpansion,
  type SearchTree,
} from '../../../engine/marti/search/abmcts';
import {
  clonePosterior,
  defaultPosteriorConfig,
  observe,
  posteriorMean,
  type Posterior,
} from '../../../engine/marti/search/posterior';

const BETA = defaultPosteriorConfig('beta');
const mean = (p: Posterior) => posteriorMean(p, BETA);
const tree = (depthWeighting: boolean, nodes = 32): SearchTree =>
  newTree('t', makeSearchConfig({ agents: ['A', 'B'], nodesPerTree: nodes, posterior: 'beta', depthWeighting }));

describe('T+ GEN credit under the Beta posterior (issue 17, fix 3)', () => {
  it("a deep passing node raises its parent's GEN credit above no depth weighting", () => {
    const [on, off] = [tree(true), tree(false)];
    for (const t of [on, off]) {
      addNode(t, forceExpansion(t, 0, 'A'), { program: 'a', score: 1 }); // depth 1
      addNode(t, forceExpansion(t, 1, 'A'), { program: 'b', score: 1 }); // depth 2, first there: ω = 2
    }
    expect(mean(on.nodes[1]!.gen)).toBeGreaterThan(mean(off.nodes[1]!.gen));
    expect(on.nodes[2]!.genObservation).toBe(2);
    expect(on.nodes[1]!.gen).toMatchObject({ a: 2.5, b: 0.5, n: 1 });
  });

  it('crowding still lowers: a passing node at a crowded depth (ω < 1) credits GEN less than an unweighted pass', () => {
    const [on, off] = [tree(true), tree(false)];
    for (const t of [on, off]) {
      for (let i = 0; i < 9; i++) addNode(t, forceExpansion(t, 0, 'A'), { program: `p${i}`, score: 1 });
    }
    // the 9th node at depth 1 has c = 8: ω = 1.5 / 3 = 0.5
    expect(on.nodes[9]!.genObservation).toBeCloseTo(0.5, 15);
    expect(mean(on.nodes[0]!.gen)).toBeLessThan(mean(off.nodes[0]!.gen));
  });

  it('a failing node counts as a failure, weighted or not (ω·0 = 0 success, one failure)', () => {
    const [on, off] = [tree(true), tree(false)];
    for (const t of [on, off]) {
      addNode(t, forceExpansion(t, 0, 'A'), { program: 'a', score: 1 });
      addNode(t, forceExpansion(t, 1, 'A'), { program: 'b', score: 0 });
    }
    expect(on.nodes[1]!.gen).toEqual(off.nodes[1]!.gen);
  });

  it("probe (the issue's): over searched trees with 0/1 scores, weighting raises some GEN credits and lowers others", () => {
    const rng = new Rng(17);
    let raised = 0;
    let lowered = 0;
    for (let k = 0; k < 20; k++) {
      const t = tree(true, 24);
      while (!isComplete(t)) {
        const e = selectExpansion(t, rng);
        const s = rng.next() < 0.5 ? 1 : 0;
        const plain = clonePosterior(t.nodes[e.parentId]!.gen);
        observe(plain, s);
        addNode(t, e, { program: `p${t.nodes.length}`, score: s });
        const got = mean(t.nodes[e.parentId]!.gen);
        if (got > mean(plain) + 1e-12) raised++;
        if (got < mean(plain) - 1e-12) lowered++;
      }
    }
    expect(raised).toBeGreaterThan(0); // was 0: the clamp removed every depth bonus
    expect(lowered).toBeGreaterThan(0);
  });
});
