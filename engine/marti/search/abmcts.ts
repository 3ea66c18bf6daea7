/**
 * AB-MCTS-A over one shared tree per problem (docs/algorithms.md §3.4 selection, §3.6 backpropagation, §3.10 (b) depth
 * weighting), after SakanaAI/treequest `src/treequest/algos/ab_mcts_a/` with the multi-armed-bandit agent choice
 * that MARTI uses.
 *
 * Nodes are whole programs. The tree is plain data (JSON-serialisable) and holds, per node, the program text, score,
 * agent, depth, parent, children, its posteriors, the caller's opaque `payload`, and a trace of the posteriors and
 * draws seen when its expansion was selected.
 *
 * The API is split in two so the trainer can batch many trees into one generation call:
 *
 *   const exps = selectExpansions(trees, rng);           // one pending expansion per unfinished tree
 *   const outs = await generate(exps.map(promptFor));    // one batched model call
 *   exps.forEach((e, i) => addNode(treeById(e.treeId), e, { program, score, ... }));   // backpropagates
 *
 * Concurrency within a tree: §3.4 says nodes within a tree are expanded sequentially (each selection sees every
 * earlier result) and trees run in parallel. So a tree holds at most one pending expansion: `selectExpansion` on a
 * tree with one pending throws, and the batch comes from many trees per round, not many nodes per tree.
 */
import type { Rng } from '../../random/prng';
import {
  defaultPosteriorConfig,
  drawPosterior,
  newPosterior,
  observe,
  posteriorMean,
  summarizePosterior,
  type Posterior,
  type PosteriorConfig,
  type PosteriorKind,
  type PosteriorSummary,
} from './posterior';

import { depthWeight, observeGenCredit, parseDepthWeighting, type DepthWeighting } from './depthWeighting';

export { DEFAULT_DEPTH_WEIGHTING, depthWeight, type DepthWeighting } from './depthWeighting';

export type AgentSelect = 'thompson' | 'ucb';

export interface SearchConfig {
  /** Agent ids (treequest's "actions"); their order breaks ties in the agent argmax (lowest index wins). */
  agents: readonly string[];
  /** Node budget N: non-root nodes per tree. */
  nodesPerTree: number;
  posterior: PosteriorConfig;
  agentSelect: AgentSelect;
  /** T+ depth-guided GEN credit (§3.10 b); null = off (training default). */
  depthWeighting: DepthWeighting | null;
}

export interface SearchConfigInput {
  agents: readonly string[];
  nodesPerTree: number;
  posterior?: PosteriorKind | PosteriorConfig;
  agentSelect?: AgentSelect;
  /** true = §4 defaults (α = 0.5, β = 0.25). */
  depthWeighting?: DepthWeighting | boolean | null;
}

/** Fills §4's defaults (posterior 'beta', agentSelect 'thompson', no depth weighting) and validates. */
export function makeSearchConfig(input: SearchConfigInput): SearchConfig {
  const agents = [...input.agents];
  if (agents.length === 0) throw new Error('AB-MCTS-A needs at least one agent.');
  if (new Set(agents).size !== agents.length) {
    throw new Error(`Agent ids must be distinct, got [${agents.join(', ')}].`);
  }
  if (!Number.isInteger(input.nodesPerTree) || input.nodesPerTree < 1) {
    throw new Error(`nodesPerTree must be an integer ≥ 1, got ${input.nodesPerTree}.`);
  }
  const posterior =
    input.posterior === undefined || typeof input.posterior === 'string'
      ? defaultPosteriorConfig(input.posterior ?? 'beta')
      : input.posterior;
  newPosterior(posterior); // validates the prior
  const agentSelect = input.agentSelect ?? 'thompson';
  if (agentSelect !== 'thompson' && agentSelect !== 'ucb') {
    throw new Error(`agentSelect must be 'thompson' or 'ucb', got '${agentSelect as string}'.`);
  }
  const depthWeighting = parseDepthWeighting(input.depthWeighting);
  return { agents, nodesPerTree: input.nodesPerTree, posterior, agentSelect, depthWeighting };
}

/** One GEN/CONT decision on the way down (what the posteriors looked like and what was drawn). */
export interface SelectionStep {
  nodeId: number;
  gen: PosteriorSummary;
  cont: PosteriorSummary;
  genDraw: number;
  contDraw: number;
  decision: 'GEN' | 'CONT';
  /** Only for CONT: each child's posterior and draw, in slot order. */
  children?: { nodeId: number; posterior: PosteriorSummary; draw: number }[];
  /** Only for CONT: the child moved to. */
  chosenChild?: number;
}

export interface AgentChoiceTrace {
  /** 'only' when K = 1 (no draw is made); 'forced' for `forceExpansion` (replay, tests). */
  method: 'only' | 'forced' | AgentSelect;
  /** Per agent in config order: its tree-wide statistics and the value compared (a Thompson draw or a UCB index;
   * null stands for +∞, an untried agent under UCB, so the trace stays JSON). */
  candidates: { agentId: string; n: number; posterior: PosteriorSummary; value: number | null }[];
  chosen: string;
}

export interface ExpansionTrace {
  /** Empty when the root had no children (the first step expands the root without any draw). */
  path: SelectionStep[];
  /** True when the walk ended at a leaf, where GEN is forced. */
  forcedGen: boolean;
  agent: AgentChoiceTrace;
}

/** A selected, not yet generated, expansion: what the trainer turns into a prompt. */
export interface Expansion {
  treeId: string;
  /** The node to expand (0 = root). */
  parentId: number;
  agentId: string;
  /** 'root': write a fresh program (generator role); 'refine': refine the parent given its feedback. */
  kind: 'root' | 'refine';
  /** The id the new node will get (expansion order). */
  nodeId: number;
  /** The new node's depth (root children have depth 1). */
  depth: number;
  trace: ExpansionTrace;
}

export interface SearchNode<P = unknown> {
  id: number;
  parentId: number | null;
  depth: number;
  /** null for the root. */
  agentId: string | null;
  program: string | null;
  /** The search observation s (publicScore, or §3.10 c's λ-mix under T+). 0 for the root, which is never scored. */
  score: number;
  publicScore: number;
  /** Used only for metrics; null when unknown (and for the root). */
  privateScore: number | null;
  /**
   * The credit `gen_p` got for this node: s, or r̄ = ω·s under T+ (under Beta, ω·s added to a and 1 − s to b; see
   * docs/algorithms/tplus.md). null for the root.
   */
  genObservation: number | null;
  /** Children ids in slot order. */
  children: number[];
  /** GEN and CONT posteriors of this node as a parent (created from the prior). */
  gen: Posterior;
  cont: Posterior;
  /** child_v[slot], parallel to `children`. */
  childPosteriors: Posterior[];
  /** The selection trace of the expansion that created this node (null for the root). */
  expansion: ExpansionTrace | null;
  payload: P | undefined;
}

export interface SearchTree<P = unknown> {
  treeId: string;
  config: SearchConfig;
  /** nodes[id]; nodes[0] is the empty root. */
  nodes: SearchNode<P>[];
  /** §3.4 tree-wide per-agent scores (what the agent bandit sees). */
  rewardsByAgent: Record<string, number[]>;
  /** prior ⊕ rewardsByAgent[a], maintained incrementally. */
  agentPosteriors: Record<string, Posterior>;
  /** depthCounts[d] = number of non-root nodes at depth d (for ω's c_d). */
  depthCounts: number[];
  pending: Expansion | null;
}

export interface NodeResult<P = unknown> {
  program: string | null;
  /** The search observation s. Under Beta it must lie in [0, 1]. */
  score: number;
  /** Default: `score`. */
  publicScore?: number;
  privateScore?: number | null;
  payload?: P;
}

/** Where a Thompson draw is made; tests can replace the sampler through `SelectOptions.draw`. */
export type DrawSite =
  | { site: 'gen' | 'cont'; nodeId: number }
  | { site: 'child'; nodeId: number; slot: number; childId: number }
  | { site: 'agent'; agentId: string };

export interface SelectOptions {
  /** Replaces the posterior draw (mocked sampler for tests of §7.18). Default: a seeded draw from `rng`. */
  draw?: (posterior: Posterior, where: DrawSite) => number;
}

function makeNode<P>(cfg: SearchConfig, id: number, parentId: number | null, depth: number): SearchNode<P> {
  return {
    id,
    parentId,
    depth,
    agentId: null,
    program: null,
    score: 0,
    publicScore: 0,
    privateScore: null,
    genObservation: null,
    children: [],
    gen: newPosterior(cfg.posterior),
    cont: newPosterior(cfg.posterior),
    childPosteriors: [],
    expansion: null,
    payload: undefined,
  };
}

export function newTree<P = unknown>(treeId: string, config: SearchConfig): SearchTree<P> {
  const rewardsByAgent: Record<string, number[]> = {};
  const agentPosteriors: Record<string, Posterior> = {};
  for (const a of config.agents) {
    rewardsByAgent[a] = [];
    agentPosteriors[a] = newPosterior(config.posterior);
  }
  return {
    treeId,
    config,
    nodes: [makeNode<P>(config, 0, null, 0)],
    rewardsByAgent,
    agentPosteriors,
    depthCounts: [0],
    pending: null,
  };
}

/** Number of non-root nodes. */
export function nodeCount(tree: SearchTree<unknown>): number {
  return tree.nodes.length - 1;
}

/** The budget is spent: no more expansions. */
export function isComplete(tree: SearchTree<unknown>): boolean {
  return nodeCount(tree) >= tree.config.nodesPerTree;
}

export function nonRootNodes<P>(tree: SearchTree<P>): SearchNode<P>[] {
  return tree.nodes.slice(1);
}

/** Index of the largest value; ties go to the lowest index (treequest compares with a strict '>'). */
function argmax(values: readonly number[]): number {
  let best = 0;
  for (let i = 1; i < values.length; i++) if (values[i]! > values[best]!) best = i;
  return best;
}

function chooseAgent(tree: SearchTree<unknown>, draw: (p: Posterior, where: DrawSite) => number): AgentChoiceTrace {
  const cfg = tree.config;
  const summary = (a: string) => summarizePosterior(tree.agentPosteriors[a]!, cfg.posterior);
  const nOf = (a: string) => tree.rewardsByAgent[a]!.length;
  if (cfg.agents.length === 1) {
    const a = cfg.agents[0]!;
    return { method: 'only', candidates: [{ agentId: a, n: nOf(a), posterior: summary(a), value: null }], chosen: a };
  }
  let values: number[];
  if (cfg.agentSelect === 'thompson') {
    values = cfg.agents.map((a) => draw(tree.agentPosteriors[a]!, { site: 'agent', agentId: a }));
  } else {
    // treequest's multiarm_bandit_ucb: mean + √2·sqrt(ln N_total / n_a); +∞ for an untried agent.
    const total = cfg.agents.reduce((s, a) => s + nOf(a), 0);
    values = cfg.agents.map((a) => {
      const r = tree.rewardsByAgent[a]!;
      if (r.length === 0) return Infinity;
      const mean = r.reduce((s, x) => s + x, 0) / r.length;
      return mean + Math.SQRT2 * Math.sqrt(Math.log(total) / r.length);
    });
  }
  const k = argmax(values);
  return {
    method: cfg.agentSelect,
    candidates: cfg.agents.map((a, i) => ({
      agentId: a,
      n: nOf(a),
      posterior: summary(a),
      value: Number.isFinite(values[i]!) ? values[i]! : null,
    })),
    chosen: cfg.agents[k]!,
  };
}

/**
 * §3.4 selectExpansion: walk down from the root drawing GEN vs CONT at each node (ties → GEN) and, on CONT, the
 * child with the largest draw (ties → lowest slot); at a leaf GEN is forced. The agent is then chosen by the tree-wide
 * bandit. Draw order (for reproducibility): gen, cont, then the children in slot order, then the agents in order.
 *
 * Marks the expansion pending on the tree; `addNode` completes it.
 */
export function selectExpansion(tree: SearchTree<unknown>, rng: Rng, opts: SelectOptions = {}): Expansion {
  if (tree.pending) {
    throw new Error(
      `Tree '${tree.treeId}' already has a pending expansion (node ${tree.pending.nodeId}); call addNode (or abandonExpansion) first. Nodes within a tree are expanded one at a time (docs/algorithms.md §3.4).`,
    );
  }
  if (isComplete(tree)) {
    throw new Error(`Tree '${tree.treeId}' has spent its budget of ${tree.config.nodesPerTree} nodes.`);
  }
  const cfg = tree.config;
  const draw = opts.draw ?? ((p: Posterior) => drawPosterior(p, cfg.posterior, rng));
  const path: SelectionStep[] = [];
  let v = tree.nodes[0]!;
  let forcedGen = false;
  if (v.children.length > 0) {
    for (;;) {
      if (v.children.length === 0) {
        forcedGen = true;
        break;
      }
      const genDraw = draw(v.gen, { site: 'gen', nodeId: v.id });
      const contDraw = draw(v.cont, { site: 'cont', nodeId: v.id });
      const step: SelectionStep = {
        nodeId: v.id,
        gen: summarizePosterior(v.gen, cfg.posterior),
        cont: summarizePosterior(v.cont, cfg.posterior),
        genDraw,
        contDraw,
        decision: 'GEN',
      };
      path.push(step);
      if (genDraw >= contDraw || v.childPosteriors.length === 0) break;
      step.decision = 'CONT';
      const parent = v;
      const draws = parent.childPosteriors.map((p, slot) =>
        draw(p, { site: 'child', nodeId: parent.id, slot, childId: parent.children[slot]! }),
      );
      step.children = parent.children.map((id, slot) => ({
        nodeId: id,
        posterior: summarizePosterior(parent.childPosteriors[slot]!, cfg.posterior),
        draw: draws[slot]!,
      }));
      const next = parent.children[argmax(draws)]!;
      step.chosenChild = next;
      v = tree.nodes[next]!;
    }
  }
  const agent = chooseAgent(tree, draw);
  const expansion: Expansion = {
    treeId: tree.treeId,
    parentId: v.id,
    agentId: agent.chosen,
    kind: v.id === 0 ? 'root' : 'refine',
    nodeId: tree.nodes.length,
    depth: v.depth + 1,
    trace: { path, forcedGen, agent },
  };
  tree.pending = expansion;
  return expansion;
}

/**
 * One expansion for every tree that has budget left and nothing pending, in the order given (all draws come from
 * `rng` in that order). The results go to one batched generation call, then each to `addNode`.
 */
export function selectExpansions(
  trees: readonly SearchTree<unknown>[],
  rng: Rng | ((tree: SearchTree<unknown>, index: number) => Rng),
  opts: SelectOptions = {},
): Expansion[] {
  const out: Expansion[] = [];
  trees.forEach((t, i) => {
    if (!t.pending && !isComplete(t)) out.push(selectExpansion(t, typeof rng === 'function' ? rng(t, i) : rng, opts));
  });
  return out;
}

/** Matched by tree and node id, so an expansion that went through a copy (e.g. a worker message) still completes. */
function isPending(tree: SearchTree<unknown>, e: Expansion): boolean {
  return tree.pending !== null && e.treeId === tree.treeId && e.nodeId === tree.pending.nodeId;
}

/**
 * Marks an expansion of `parentId` by `agentId` pending without any selection or draw: for replaying a recorded tree
 * (e.g. from trajectories.jsonl) and for building hand-made trees in tests. `addNode` then backpropagates as usual.
 */
export function forceExpansion(tree: SearchTree<unknown>, parentId: number, agentId: string): Expansion {
  if (tree.pending) throw new Error(`forceExpansion: tree '${tree.treeId}' already has a pending expansion.`);
  if (isComplete(tree)) {
    throw new Error(`forceExpansion: tree '${tree.treeId}' has spent its budget of ${tree.config.nodesPerTree} nodes.`);
  }
  const v = tree.nodes[parentId];
  if (!v) throw new Error(`forceExpansion: tree '${tree.treeId}' has no node ${parentId}.`);
  if (!tree.config.agents.includes(agentId)) throw new Error(`forceExpansion: unknown agent '${agentId}'.`);
  const expansion: Expansion = {
    treeId: tree.treeId,
    parentId,
    agentId,
    kind: parentId === 0 ? 'root' : 'refine',
    nodeId: tree.nodes.length,
    depth: v.depth + 1,
    trace: {
      path: [],
      forcedGen: false,
      agent: {
        method: 'forced',
        candidates: tree.config.agents.map((a) => ({
          agentId: a,
          n: tree.rewardsByAgent[a]!.length,
          posterior: summarizePosterior(tree.agentPosteriors[a]!, tree.config.posterior),
          value: null,
        })),
        chosen: agentId,
      },
    },
  };
  tree.pending = expansion;
  return expansion;
}

/** Drops the pending expansion without adding a node (e.g. the generation call failed and will be retried). */
export function abandonExpansion(tree: SearchTree<unknown>, expansion: Expansion): void {
  if (!isPending(tree, expansion)) {
    throw new Error(`abandonExpansion: node ${expansion.nodeId} is not pending on tree '${tree.treeId}'.`);
  }
  tree.pending = null;
}

/**
 * Completes a pending expansion: appends the node, then backpropagates (§3.6):
 *
 *   rewardsByAgent[a].push(s);  child_p[slot(c)].observe(s);  gen_p.observe(s_gen)
 *   u = p;  while u ≠ root: q = parent(u); child_q[slot(u)].observe(s); cont_q.observe(s); u = q
 *
 * with s_gen = s, or under T+ the credit ω(d_c, c_{d_c})·s where c_{d_c} counts the nodes already at that depth; under
 * Beta it acts on pseudo-counts (a += ω·s, b += 1 − s: docs/algorithms/tplus.md, depthWeighting.ts). Only the
 * posteriors of the new node's ancestors (and the agent's tree-wide statistics) change.
 */
export function addNode<P>(tree: SearchTree<P>, expansion: Expansion, result: NodeResult<P>): SearchNode<P> {
  if (!isPending(tree, expansion)) {
    throw new Error(
      `addNode: expansion for node ${expansion.nodeId} of tree '${expansion.treeId}' is not the pending one on tree '${tree.treeId}'.`,
    );
  }
  const cfg = tree.config;
  const s = result.score;
  if (!Number.isFinite(s)) throw new Error(`addNode: score must be finite, got ${s}.`);
  if (cfg.posterior.kind === 'beta' && (s < 0 || s > 1)) {
    throw new Error(`addNode: under posterior 'beta' the score must be in [0, 1], got ${s}.`);
  }
  const pending = tree.pending!; // the tree's own record, so a copied or edited expansion cannot redirect the update
  const parent = tree.nodes[pending.parentId]!;
  const depth = parent.depth + 1;
  const omega = cfg.depthWeighting ? depthWeight(depth, tree.depthCounts[depth] ?? 0, cfg.depthWeighting) : 1;

  const node = makeNode<P>(cfg, tree.nodes.length, parent.id, depth);
  node.agentId = pending.agentId;
  node.program = result.program;
  node.score = s;
  node.publicScore = result.publicScore ?? s;
  node.privateScore = result.privateScore ?? null;
  node.expansion = pending.trace;
  node.payload = result.payload;
  tree.nodes.push(node);
  parent.children.push(node.id);
  parent.childPosteriors.push(newPosterior(cfg.posterior));
  tree.depthCounts[depth] = (tree.depthCounts[depth] ?? 0) + 1;
  tree.pending = null;

  // §3.6 backpropagation.
  tree.rewardsByAgent[pending.agentId]!.push(s);
  observe(tree.agentPosteriors[pending.agentId]!, s);
  observe(parent.childPosteriors[parent.children.length - 1]!, s);
  node.genObservation = observeGenCredit(parent.gen, s, omega);
  let u = parent;
  while (u.parentId !== null) {
    const q = tree.nodes[u.parentId]!;
    const slot = q.children.indexOf(u.id);
    observe(q.childPosteriors[slot]!, s);
    observe(q.cont, s);
    u = q;
  }
  return node;
}

/** The posterior mean of each child of `nodeId` (slot order), for inspection. */
export function childMeans(tree: SearchTree<unknown>, nodeId: number): number[] {
  const v = tree.nodes[nodeId]!;
  return v.childPosteriors.map((p) => posteriorMean(p, tree.config.posterior));
}

/** Ids of the nodes from `nodeId` up to and including the root. */
export function pathToRoot(tree: SearchTree<unknown>, nodeId: number): number[] {
  const out: number[] = [];
  let u: SearchNode<unknown> | undefined = tree.nodes[nodeId];
  while (u) {
    out.push(u.id);
    u = u.parentId === null ? undefined : tree.nodes[u.parentId];
  }
  return out;
}

/** The fraction of expansions each agent made in this tree (§3.12: log each agent's selection share). */
export function agentShares(tree: SearchTree<unknown>): Record<string, number> {
  const n = nodeCount(tree);
  const out: Record<string, number> = {};
  for (const a of tree.config.agents) out[a] = n === 0 ? 0 : tree.rewardsByAgent[a]!.length / n;
  return out;
}
