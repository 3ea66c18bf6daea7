/**
 * Evaluation metrics of one tree (docs/algorithms.md §3.9, after TsinghuaC3I/MARTI
 * `marti/agent_workflows/third_party/mcts_utils/utils.py`) and the T+ final pick (§3.10 c).
 *
 * These work on any nodes with an id (expansion order: a larger id is more recent), a publicScore and a
 * privateScore, so `SearchNode`s can be passed directly. The root (id 0 of a `SearchTree`) is excluded by
 * `treeMetrics`/`chooseFinal`; the node-list functions expect non-root nodes.
 */
import { nonRootNodes, type SearchNode, type SearchTree } from './abmcts';

export interface EvalNode {
  id: number;
  publicScore: number;
  /** null = unknown; metrics that need it throw. */
  privateScore: number | null;
}

function privateOf(n: EvalNode): number {
  if (n.privateScore === null) {
    throw new Error(`Node ${n.id} has no privateScore; metrics need the private-test result.`);
  }
  return n.privateScore;
}

/** The node with the largest `key`; ties go to the most recently created (largest id). undefined if empty. */
export function pickNewestBest<T extends { id: number }>(nodes: readonly T[], key: (n: T) => number): T | undefined {
  let best: T | undefined;
  for (const n of nodes) {
    if (!best || key(n) > key(best) || (key(n) === key(best) && n.id > best.id)) best = n;
  }
  return best;
}

/** §3.9 pass1: the privateScore of the node with the highest publicScore (ties → newest). 0 for no nodes. */
export function pass1(nodes: readonly EvalNode[]): number {
  const best = pickNewestBest(nodes, (n) => n.publicScore);
  return best ? privateOf(best) : 0;
}

/** §3.9 passN: the maximum privateScore in the tree. 0 for no nodes. */
export function passN(nodes: readonly EvalNode[]): number {
  let m = 0;
  for (const n of nodes) m = Math.max(m, privateOf(n));
  return m;
}

/** §3.9 avgPass1: mean privateScore over nodes with publicScore = 1; 0 if there are none [D]. */
export function avgPass1(nodes: readonly EvalNode[]): number {
  const passing = nodes.filter((n) => n.publicScore === 1);
  if (passing.length === 0) return 0;
  return passing.reduce((s, n) => s + privateOf(n), 0) / passing.length;
}

export interface TreeMetrics {
  nodes: number;
  /** pass1 of the whole tree: `pass1MCTS` (BoN) for an N-node tree, plain accuracy for one node. */
  pass1: number;
  passN: number;
  avgPass1: number;
  /** passN − pass1 (a diversity signal, §3.11). */
  gap: number;
}

export function treeMetrics(tree: SearchTree<unknown>): TreeMetrics {
  const nodes = nonRootNodes(tree);
  const p1 = pass1(nodes);
  const pn = passN(nodes);
  return { nodes: nodes.length, pass1: p1, passN: pn, avgPass1: avgPass1(nodes), gap: pn - p1 };
}

/** §3.10 (c): node score λ·publicScore + (1−λ)·R_φ (λ = 0.5 by default). */
export function verifierMixedScore(publicScore: number, verifier: number, lambda = 0.5): number {
  if (!(lambda >= 0 && lambda <= 1)) throw new Error(`verifier λ must be in [0, 1], got ${lambda}.`);
  return lambda * publicScore + (1 - lambda) * verifier;
}

export interface ChooseFinalOptions {
  /**
   * 'score' (default): the node's search score, which is publicScore, or the λ-mix when a verifier is used (§3.10 c);
   * 'publicScore': public tests only (exactly §3.9's pass1 pick).
   */
  by?: 'score' | 'publicScore';
}

/**
 * The T+ final answer (§3.10): the node with the highest score, ties going to the most recently created. Returns
 * undefined for a tree with no nodes. Its privateScore is what T+ reports.
 */
export function chooseFinal<P>(tree: SearchTree<P>, opts: ChooseFinalOptions = {}): SearchNode<P> | undefined {
  const by = opts.by ?? 'score';
  return pickNewestBest(nonRootNodes(tree), (n) => (by === 'score' ? n.score : n.publicScore));
}
