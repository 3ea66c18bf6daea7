import { describe, expect, it } from 'vitest';
import { Rng } from '../../../engine/random/prng';
import {
  abandonExpansion,
  addNode,
  agentShares,
  depthWeight,
  forceExpansion,
  isComplete,
  makeSearchConfig,
  newTree,
  nodeCount,
  pathToRoot,
  selectExpansion,
  selectExpansions,
  type DrawSite,
  type SearchConfigInput,
  type SearchTree,
} from '../../../engine/marti/search/abmcts';
import type { Posterior } from '../../../engine/marti/search/posterior';

/** Deterministic fake expander: the program records its lineage; the score depends only on agent, depth and id. */
function fakeExpand(tree: SearchTree<unknown>, parentId: number, agentId: string, nodeId: number, gaussian: boolean) {
  const parent = tree.nodes[parentId]!;
  const program = `${parent.program ?? 'root'}>${agentId}${nodeId}`;
  const h = (nodeId * 7 + parent.depth * 3 + agentId.charCodeAt(0)) % 5;
  const score = gaussian ? h / 4 - 0.3 : h >= 3 ? 1 : 0;
  return { program, score, privateScore: score };
}

function runSearch(seed: number, input: Partial<SearchConfigInput> = {}): SearchTree<unknown> {
  const cfg = makeSearchConfig({ agents: ['A', 'B', 'C'], nodesPerTree: 16, ...input });
  const tree = newTree('p0', cfg);
  const rng = new Rng(seed).split('thompson');
  while (!isComplete(tree)) {
    const e = selectExpansion(tree, rng);
    addNode(tree, e, fakeExpand(tree, e.parentId, e.agentId, e.nodeId, cfg.posterior.kind === 'gaussian'));
  }
  return tree;
}

const shape = (t: SearchTree<unknown>) =>
  t.nodes.map((n) => [n.id, n.parentId, n.agentId, n.depth, n.program, n.score]);

/** Posterior state of every node, for before/after comparisons. */
const stats = (t: SearchTree<unknown>) =>
  t.nodes.map((n) => JSON.stringify({ gen: n.gen, cont: n.cont, child: n.childPosteriors }));

describe('AB-MCTS-A tree growth and budget (docs/algorithms.md §3.4, §7.16)', () => {
  it('expands the root first, adds exactly one node per step, depth(child) = depth(parent) + 1, respects the budget', () => {
    const cfg = makeSearchConfig({ agents: ['A', 'B'], nodesPerTree: 6 });
    const tree = newTree('t', cfg);
    const rng = new Rng(1);
    const first = selectExpansion(tree, rng);
    expect(first).toMatchObject({ parentId: 0, kind: 'root', nodeId: 1, depth: 1 });
    expect(first.trace.path).toEqual([]);
    addNode(tree, first, { program: 'p1', score: 0 });
    for (let i = 2; i <= 6; i++) {
      const e = selectExpansion(tree, rng);
      expect(e.nodeId).toBe(i);
      expect(e.kind).toBe(e.parentId === 0 ? 'root' : 'refine');
      addNode(tree, e, { program: `p${i}`, score: i % 2 });
      expect(nodeCount(tree)).toBe(i);
    }
    expect(isComplete(tree)).toBe(true);
    expect(() => selectExpansion(tree, rng)).toThrow(/budget/);
    expect(() => forceExpansion(tree, 0, 'A')).toThrow(/budget/);
    expect(selectExpansions([tree], rng)).toEqual([]);
    for (const n of tree.nodes.slice(1)) expect(n.depth).toBe(tree.nodes[n.parentId!]!.depth + 1);
    expect(tree.nodes[0]!.children.length).toBeGreaterThan(0);
  });

  it('batches one expansion per unfinished tree per round and ends every tree at its budget', () => {
    const cfg = makeSearchConfig({ agents: ['A', 'B'], nodesPerTree: 5 });
    const trees = Array.from({ length: 7 }, (_, i) => newTree(`p${i}`, cfg));
    const rng = new Rng(9);
    let rounds = 0;
    for (;;) {
      const exps = selectExpansions(trees, rng);
      if (exps.length === 0) break;
      rounds++;
      expect(new Set(exps.map((e) => e.treeId)).size).toBe(exps.length); // at most one per tree
      // A batch can go through a copy (e.g. a worker message) and still complete.
      for (const e of JSON.parse(JSON.stringify(exps)) as typeof exps) {
        const t = trees.find((x) => x.treeId === e.treeId)!;
        addNode(t, e, { program: `${e.treeId}:${e.nodeId}`, score: e.nodeId % 2 });
      }
    }
    expect(rounds).toBe(5);
    for (const t of trees) expect(nodeCount(t)).toBe(5);
  });

  it('allows one pending expansion per tree; abandon clears it; a stale expansion is refused', () => {
    const tree = newTree('t', makeSearchConfig({ agents: ['A'], nodesPerTree: 4 }));
    const rng = new Rng(2);
    const e = selectExpansion(tree, rng);
    expect(() => selectExpansion(tree, rng)).toThrow(/pending/);
    expect(selectExpansions([tree], rng)).toEqual([]);
    abandonExpansion(tree, e);
    expect(() => addNode(tree, e, { program: 'x', score: 1 })).toThrow(/not the pending/);
    const e2 = selectExpansion(tree, rng);
    addNode(tree, e2, { program: 'x', score: 1 });
    expect(nodeCount(tree)).toBe(1);
    expect(() => addNode(tree, e2, { program: 'x', score: 1 })).toThrow(/not the pending/);
    const e3 = selectExpansion(tree, rng);
    expect(() => addNode(tree, e3, { program: 'x', score: 1.5 })).toThrow(/\[0, 1\]/);
    expect(tree.pending).not.toBeNull(); // a refused result leaves the expansion pending and the tree unchanged
    expect(nodeCount(tree)).toBe(1);
  });
});

describe('seeded search reproduces the same tree (§7.23)', () => {
  for (const input of [{}, { posterior: 'gaussian' as const }, { agentSelect: 'ucb' as const }]) {
    it(`same seed ⇒ identical tree, different seed ⇒ different tree (${JSON.stringify(input)})`, () => {
      const a = runSearch(42, input);
      const b = runSearch(42, input);
      expect(JSON.stringify(a)).toBe(JSON.stringify(b));
      expect(shape(a)).toEqual(shape(b));
      const others = [7, 8, 9].map((s) => JSON.stringify(shape(runSearch(s, input))));
      expect(others.some((o) => o !== JSON.stringify(shape(a)))).toBe(true);
      // The tree is not trivially flat: the search did refine something.
      expect(Math.max(...a.nodes.map((n) => n.depth))).toBeGreaterThan(1);
    });
  }

  it('different seeds give different trees (Beta, Thompson agents)', () => {
    expect(shape(runSearch(1))).not.toEqual(shape(runSearch(2)));
  });
});

describe('backpropagation (§3.6, §7.17)', () => {
  it('touches exactly the path from the new node to the root, with the right observations', () => {
    const tree = runSearch(5);
    // Pick a deep node to refine.
    const deep = tree.nodes.reduce((m, n) => (n.depth > m.depth ? n : m));
    expect(deep.depth).toBeGreaterThanOrEqual(2);
    const cfg = makeSearchConfig({ agents: ['A', 'B', 'C'], nodesPerTree: 17 });
    tree.config = cfg; // one more node of budget
    const before = stats(tree);
    const rewardsBefore = JSON.parse(JSON.stringify(tree.rewardsByAgent)) as Record<string, number[]>;
    const agentPostBefore = JSON.parse(JSON.stringify(tree.agentPosteriors)) as Record<string, Posterior>;
    const path = pathToRoot(tree, deep.id); // deep, ..., root
    const beforeNodes = JSON.parse(JSON.stringify(tree.nodes)) as SearchTree<unknown>['nodes'];

    const e = forceExpansion(tree, deep.id, 'B');
    const c = addNode(tree, e, { program: 'new', score: 0.75 });
    expect(c.parentId).toBe(deep.id);
    expect(c.depth).toBe(deep.depth + 1);

    const after = stats(tree);
    for (let id = 0; id < before.length; id++) {
      if (!path.includes(id)) expect(after[id], `node ${id} is off the path`).toBe(before[id]);
    }
    // The new node starts from the prior.
    expect(c.gen).toEqual({ kind: 'beta', a: 0.5, b: 0.5, n: 0 });
    expect(c.cont).toEqual({ kind: 'beta', a: 0.5, b: 0.5, n: 0 });
    // Parent: gen observes s, a new child slot starts with s, cont unchanged.
    const p = tree.nodes[deep.id]!;
    const pb = beforeNodes[deep.id]!;
    expect(p.gen).toEqual({
      kind: 'beta',
      a: (pb.gen as { a: number }).a + 0.75,
      b: (pb.gen as { b: number }).b + 0.25,
      n: pb.gen.n + 1,
    });
    expect(p.cont).toEqual(pb.cont);
    expect(p.childPosteriors.at(-1)).toEqual({ kind: 'beta', a: 1.25, b: 0.75, n: 1 });
    expect(p.childPosteriors.slice(0, -1)).toEqual(pb.childPosteriors);
    // Each ancestor q above the parent: cont and child_q[slot(u)] observe s, gen and the other slots unchanged.
    for (let i = 1; i < path.length; i++) {
      const u = path[i - 1]!;
      const q = path[i]!;
      const now = tree.nodes[q]!;
      const was = beforeNodes[q]!;
      const slot = now.children.indexOf(u);
      expect(now.gen).toEqual(was.gen);
      expect(now.cont.n).toBe(was.cont.n + 1);
      expect((now.cont as { a: number }).a).toBeCloseTo((was.cont as { a: number }).a + 0.75, 12);
      now.childPosteriors.forEach((post, k) => {
        if (k === slot) {
          expect(post.n).toBe(was.childPosteriors[k]!.n + 1);
          expect((post as { b: number }).b).toBeCloseTo((was.childPosteriors[k] as { b: number }).b + 0.25, 12);
        } else expect(post).toEqual(was.childPosteriors[k]);
      });
    }
    // Only the writing agent's tree-wide statistics change.
    expect(tree.rewardsByAgent.B).toEqual([...rewardsBefore.B!, 0.75]);
    expect(tree.rewardsByAgent.A).toEqual(rewardsBefore.A);
    expect(tree.rewardsByAgent.C).toEqual(rewardsBefore.C);
    expect(tree.agentPosteriors.A).toEqual(agentPostBefore.A);
    expect(tree.agentPosteriors.B!.n).toBe(agentPostBefore.B!.n + 1);
  });

  it('total GEN + CONT observations equal the sum of node depths; child_p[slot(c)] starts with c’s score', () => {
    for (const input of [{}, { posterior: 'gaussian' as const }]) {
      const tree = runSearch(13, input);
      const gen = tree.nodes.reduce((s, n) => s + n.gen.n, 0);
      const cont = tree.nodes.reduce((s, n) => s + n.cont.n, 0);
      const depths = tree.nodes.reduce((s, n) => s + n.depth, 0);
      expect(gen + cont).toBe(depths);
      expect(gen).toBe(nodeCount(tree));
      // Each child posterior holds one observation for every node in that child's subtree (itself included).
      const subtree = (id: number): number => 1 + tree.nodes[id]!.children.reduce((s, c) => s + subtree(c), 0);
      for (const n of tree.nodes) n.children.forEach((c, k) => expect(n.childPosteriors[k]!.n).toBe(subtree(c)));
    }
  });
});

describe('selection rules with a mocked sampler (§3.4, §7.18)', () => {
  /** A tree: root → 1 (A), 2 (B); 1 → 3 (A). */
  function small(agents = ['A', 'B'], agentSelect: 'thompson' | 'ucb' = 'thompson') {
    const tree = newTree('s', makeSearchConfig({ agents, nodesPerTree: 10, agentSelect }));
    const add = (parent: number, agent: string, score: number) =>
      addNode(tree, forceExpansion(tree, parent, agent), { program: `n${tree.nodes.length}`, score });
    add(0, agents[0]!, 1);
    add(0, agents[1 % agents.length]!, 0);
    add(1, agents[0]!, 1);
    return tree;
  }
  const mock = (f: (w: DrawSite) => number) => ({ draw: (_p: Posterior, w: DrawSite) => f(w) });

  it('GEN wins ties (g = c) and is chosen when g > c', () => {
    const tree = small();
    const e = selectExpansion(
      tree,
      new Rng(0),
      mock((w) => (w.site === 'gen' || w.site === 'cont' ? 0.5 : 0)),
    );
    expect(e.parentId).toBe(0);
    expect(e.trace.path).toHaveLength(1);
    expect(e.trace.path[0]).toMatchObject({ nodeId: 0, decision: 'GEN', genDraw: 0.5, contDraw: 0.5 });
  });

  it('CONT moves to the child with the largest draw; ties go to the lowest slot; a leaf forces GEN', () => {
    const tree = small();
    // At the root: CONT; children draws tie → slot 0 (node 1). At node 1: CONT → its only child, node 3 (a leaf).
    const e = selectExpansion(
      tree,
      new Rng(0),
      mock((w) => (w.site === 'gen' ? 0.1 : w.site === 'cont' ? 0.9 : w.site === 'child' ? 0.4 : 0)),
    );
    expect(e.parentId).toBe(3);
    expect(e.kind).toBe('refine');
    expect(e.depth).toBe(3);
    expect(e.trace.forcedGen).toBe(true);
    expect(e.trace.path.map((s) => [s.nodeId, s.decision, s.chosenChild])).toEqual([
      [0, 'CONT', 1],
      [1, 'CONT', 3],
    ]);
    abandonExpansion(tree, e);
    // The larger child draw wins: node 2.
    const e2 = selectExpansion(
      tree,
      new Rng(0),
      mock((w) =>
        w.site === 'gen' ? 0.1 : w.site === 'cont' ? 0.9 : w.site === 'child' ? (w.childId === 2 ? 0.8 : 0.3) : 0,
      ),
    );
    expect(e2.parentId).toBe(2);
    expect(e2.trace.forcedGen).toBe(true);
    abandonExpansion(tree, e2);
    // GEN at node 1 after CONT at the root.
    const e3 = selectExpansion(
      tree,
      new Rng(0),
      mock((w) =>
        w.site === 'gen' ? (w.nodeId === 1 ? 0.9 : 0.1) : w.site === 'cont' ? 0.5 : w.site === 'child' ? 0.4 : 0,
      ),
    );
    expect(e3.parentId).toBe(1);
    expect(e3.trace.forcedGen).toBe(false);
  });

  it('the agent is the argmax of the draws, ties to the lowest index; K = 1 draws nothing', () => {
    const tree = small();
    const e = selectExpansion(
      tree,
      new Rng(0),
      mock((w) => (w.site === 'agent' ? (w.agentId === 'B' ? 0.7 : 0.2) : w.site === 'gen' ? 1 : 0)),
    );
    expect(e.agentId).toBe('B');
    expect(e.trace.agent.candidates.map((c) => c.value)).toEqual([0.2, 0.7]);
    abandonExpansion(tree, e);
    const tie = selectExpansion(
      tree,
      new Rng(0),
      mock((w) => (w.site === 'agent' ? 0.5 : w.site === 'gen' ? 1 : 0)),
    );
    expect(tie.agentId).toBe('A');
    abandonExpansion(tree, tie);

    const one = small(['solo']);
    const sites: string[] = [];
    const e1 = selectExpansion(
      one,
      new Rng(0),
      mock((w) => (sites.push(w.site), w.site === 'gen' ? 1 : 0)),
    );
    expect(e1.agentId).toBe('solo');
    expect(e1.trace.agent.method).toBe('only');
    expect(sites).not.toContain('agent');
  });

  it('UCB picks an untried agent first, then mean + √2·sqrt(ln N / n)', () => {
    const tree = small(['A', 'B', 'C'], 'ucb'); // A: [1, 1], B: [0], C untried
    const e = selectExpansion(
      tree,
      new Rng(0),
      mock((w) => (w.site === 'gen' ? 1 : 0)),
    );
    expect(e.agentId).toBe('C');
    expect(e.trace.agent.candidates.map((c) => c.value)).toEqual([
      1 + Math.SQRT2 * Math.sqrt(Math.log(3) / 2),
      0 + Math.SQRT2 * Math.sqrt(Math.log(3) / 1),
      null,
    ]);
    addNode(tree, e, { program: 'c', score: 0 });
    // Now A: 1 + √2·sqrt(ln4/2) ≈ 2.18; B: √2·sqrt(ln4) ≈ 1.67; C: same as B → A.
    expect(
      selectExpansion(
        tree,
        new Rng(0),
        mock((w) => (w.site === 'gen' ? 1 : 0)),
      ).agentId,
    ).toBe('A');
  });
});

describe('Thompson selection prefers the better arm (statistical, seeded)', () => {
  it('the agent whose programs pass is chosen more often', () => {
    const cfg = makeSearchConfig({ agents: ['bad', 'good'], nodesPerTree: 8 });
    const rng = new Rng(2024);
    let good = 0;
    let total = 0;
    for (let t = 0; t < 150; t++) {
      const tree = newTree(`t${t}`, cfg);
      while (!isComplete(tree)) {
        const e = selectExpansion(tree, rng);
        addNode(tree, e, { program: e.agentId, score: e.agentId === 'good' ? 1 : 0 });
      }
      good += tree.rewardsByAgent.good!.length;
      total += nodeCount(tree);
      expect(agentShares(tree).good! + agentShares(tree).bad!).toBeCloseTo(1, 12);
    }
    expect(good / total).toBeGreaterThan(0.7);
  });

  it('CONT goes to the passing child more often than to the failing one', () => {
    const tree = newTree('c', makeSearchConfig({ agents: ['A'], nodesPerTree: 10 }));
    addNode(tree, forceExpansion(tree, 0, 'A'), { program: 'fail', score: 0 }); // node 1
    addNode(tree, forceExpansion(tree, 0, 'A'), { program: 'pass', score: 1 }); // node 2
    const rng = new Rng(77);
    const chosen = { 1: 0, 2: 0 } as Record<number, number>;
    let gen = 0;
    for (let i = 0; i < 3000; i++) {
      const e = selectExpansion(tree, rng);
      if (e.parentId === 0) gen++;
      else chosen[e.parentId]!++;
      abandonExpansion(tree, e);
    }
    // Beta(1.5, 0.5) vs Beta(0.5, 1.5): the passing child wins about 90% of CONT draws.
    expect(chosen[2]! / (chosen[1]! + chosen[2]!)).toBeGreaterThan(0.8);
    expect(gen).toBeGreaterThan(0);
    expect(chosen[1]! + chosen[2]!).toBeGreaterThan(0);
  });
});

describe('T+ depth-guided GEN credit (§3.10 b, §7.22)', () => {
  it('ω increases in d and decreases in c', () => {
    const w = { alpha: 0.5, beta: 0.25 };
    expect(depthWeight(1, 0, w)).toBeCloseTo(1.5, 15);
    expect(depthWeight(2, 0, w)).toBeGreaterThan(depthWeight(1, 0, w));
    expect(depthWeight(2, 3, w)).toBeLessThan(depthWeight(2, 0, w));
    expect(depthWeight(3, 2, w)).toBeCloseTo(2.5 / 1.5, 15);
  });

  it('reweights only the GEN credit, counting the nodes already at that depth; under Beta on pseudo-counts (docs/algorithms/tplus.md)', () => {
    for (const kind of ['beta', 'gaussian'] as const) {
      const tree = newTree(
        'tp',
        makeSearchConfig({ agents: ['A'], nodesPerTree: 5, posterior: kind, depthWeighting: true }),
      );
      const n1 = addNode(tree, forceExpansion(tree, 0, 'A'), { program: 'a', score: 0.5 }); // d=1, c=0: ω = 1.5
      expect(n1.genObservation).toBeCloseTo(0.75, 15);
      const n2 = addNode(tree, forceExpansion(tree, 0, 'A'), { program: 'b', score: 0.5 }); // d=1, c=1: ω = 1.5/1.25 = 1.2
      expect(n2.genObservation).toBeCloseTo(0.6, 15);
      const n3 = addNode(tree, forceExpansion(tree, 1, 'A'), { program: 'c', score: 1 }); // d=2, c=0: ω = 2
      expect(n3.genObservation).toBe(2); // no longer clamped to 1 under Beta (issue 17): the depth bonus acts
      // The child posterior, the ancestors and the agent statistics see the raw score.
      expect(tree.rewardsByAgent.A).toEqual([0.5, 0.5, 1]);
      expect(tree.nodes[1]!.childPosteriors[0]!.n).toBe(1);
      if (kind === 'beta') {
        // a += ω·s, b += 1 − s
        expect(tree.nodes[0]!.gen).toEqual({ kind: 'beta', a: 0.5 + 0.75 + 0.6, b: 0.5 + 0.5 + 0.5, n: 2 });
        expect(tree.nodes[1]!.gen).toEqual({ kind: 'beta', a: 2.5, b: 0.5, n: 1 });
        expect(tree.nodes[0]!.cont).toEqual({ kind: 'beta', a: 1.5, b: 0.5, n: 1 });
      } else {
        expect(tree.nodes[1]!.gen).toEqual({ kind: 'gaussian', n: 1, sum: 2, sumSq: 4 });
        expect(tree.nodes[0]!.cont).toEqual({ kind: 'gaussian', n: 1, sum: 1, sumSq: 1 });
      }
    }
  });
});
