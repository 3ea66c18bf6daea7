/**
 * Tree-group advantages and routing for MARTI-MARS² (docs/algorithms.md §3.7, §3.12).
 *
 * One GRPO group per tree: all N non-root nodes, whatever agent wrote them, z-scored together with eps 1e-9
 * (TsinghuaC3I/MARTI `group_norm`), through the shared `groupZScore` of §1.2 (so the all-equal and singleton rules
 * give exactly 0). Advantages are computed before routing (§1.1): each node's sample then goes to the buffer of
 * `paramId(agentId)`, so a node's advantage is the same whether the team is homogeneous or heterogeneous.
 *
 * Reward options, applied in this order before the z-score: `overlongPenalty`, then `treeShaping` (whose parent and
 * sibling terms use the rewards after the overlong penalty but before shaping). `dynamicFiltering` marks trees
 * whose rewards are all equal as dropped.
 */
import { groupZScore, type ZScoreOptions } from '../rl/advantages';
import { nonRootNodes, type SearchNode, type SearchTree } from './search/abmcts';

/** DAPO-style: exceed = min(len − (Lmax − Lbuf), Lbuf); if exceed > 0, r −= exceed/Lbuf·factor. */
export interface OverlongPenalty {
  maxLen: number;
  buffer: number;
  factor: number;
  /** Generated length (tokens) of a node. */
  lengthOf: (node: SearchNode<unknown>) => number;
}

/** r'_k = r_k + γ_s·(r_k − b_k), b_k = (1−λ_s)·r_parent + λ_s·mean(siblings ≠ k). */
export interface TreeShaping {
  gamma: number;
  lambda: number;
}

export const DEFAULT_TREE_SHAPING: Readonly<TreeShaping> = Object.freeze({ gamma: 0.5, lambda: 0.5 });

export interface TreeAdvantageOptions {
  /** z-score eps; MARTI uses 1e-9 (default). */
  eps?: number;
  stdMode?: ZScoreOptions['stdMode'];
  singleton?: ZScoreOptions['singleton'];
  /** The RL reward of a node before the options; default its publicScore (§3.3). */
  rewardOf?: (node: SearchNode<unknown>) => number;
  overlongPenalty?: OverlongPenalty | null;
  treeShaping?: TreeShaping | boolean | null;
  dynamicFiltering?: boolean;
}

export interface NodeAdvantage {
  treeId: string;
  nodeId: number;
  agentId: string;
  /** The reward before the options. */
  reward: number;
  /** The reward after the options: what was z-scored. */
  shapedReward: number;
  advantage: number;
}

export interface TreeAdvantages {
  treeId: string;
  /** Non-root nodes in id order. */
  nodes: NodeAdvantage[];
  /** All shaped rewards equal (or fewer than 2 nodes): every advantage is exactly 0. */
  degenerate: boolean;
  /** dynamicFiltering dropped this tree; its nodes should not be routed. */
  dropped: boolean;
}

function overlong(r: number, len: number, p: OverlongPenalty): number {
  if (!(p.buffer > 0) || !(p.maxLen >= p.buffer)) {
    throw new Error(`overlongPenalty needs 0 < buffer ≤ maxLen, got buffer=${p.buffer}, maxLen=${p.maxLen}.`);
  }
  const exceed = Math.min(len - (p.maxLen - p.buffer), p.buffer);
  return exceed > 0 ? r - (exceed / p.buffer) * p.factor : r;
}

/** §3.7 advantages of one tree. */
export function treeAdvantages(tree: SearchTree<unknown>, opts: TreeAdvantageOptions = {}): TreeAdvantages {
  const nodes = nonRootNodes(tree);
  const rewardOf = opts.rewardOf ?? ((n: SearchNode<unknown>) => n.publicScore);
  const raw = nodes.map((n) => rewardOf(n));
  const pen = opts.overlongPenalty
    ? nodes.map((n, i) => overlong(raw[i]!, opts.overlongPenalty!.lengthOf(n), opts.overlongPenalty!))
    : raw.slice();
  let shaped = pen;
  const shaping = opts.treeShaping === true ? DEFAULT_TREE_SHAPING : opts.treeShaping || null;
  if (shaping) {
    const byId = new Map<number, number>();
    nodes.forEach((n, i) => byId.set(n.id, pen[i]!));
    shaped = nodes.map((n, i) => {
      const parent = tree.nodes[n.parentId!]!;
      const sibs = parent.children.filter((c) => c !== n.id).map((c) => byId.get(c)!);
      const parentTerm = parent.id !== 0 ? byId.get(parent.id)! : undefined; // only when the parent is not the root
      const sibTerm = sibs.length > 0 ? sibs.reduce((s, x) => s + x, 0) / sibs.length : undefined;
      let b: number;
      if (parentTerm !== undefined && sibTerm !== undefined) {
        b = (1 - shaping.lambda) * parentTerm + shaping.lambda * sibTerm;
      } else if (parentTerm !== undefined) b = parentTerm;
      else if (sibTerm !== undefined) b = sibTerm;
      else return pen[i]!; // no baseline term at all: unshaped
      return pen[i]! + shaping.gamma * (pen[i]! - b);
    });
  }
  const adv = groupZScore(shaped, { eps: opts.eps ?? 1e-9, stdMode: opts.stdMode, singleton: opts.singleton });
  const degenerate = adv.every((a) => a === 0);
  let lo = Infinity;
  let hi = -Infinity;
  for (const r of shaped) {
    lo = Math.min(lo, r);
    hi = Math.max(hi, r);
  }
  const allEqual = shaped.length === 0 || hi - lo <= 1e-12;
  return {
    treeId: tree.treeId,
    nodes: nodes.map((n, i) => ({
      treeId: tree.treeId,
      nodeId: n.id,
      agentId: n.agentId!,
      reward: raw[i]!,
      shapedReward: shaped[i]!,
      advantage: adv[i]!,
    })),
    degenerate,
    dropped: !!opts.dynamicFiltering && allEqual,
  };
}

export interface RoutedSample extends NodeAdvantage {
  paramId: string;
}

/**
 * §3.7 routing: computes each tree's advantages first, then sends every node to the buffer of `paramIdOf(agentId)`.
 * The default `paramIdOf` is the identity (heterogeneous: one parameter set per agent); pass `() => 'shared'` for
 * `grpo`/`homogeneous`. Trees dropped by dynamicFiltering contribute nothing. Buffers appear in first-seen order;
 * within a buffer, samples keep tree order then node order.
 */
export function routeTreeSamples(
  trees: readonly SearchTree<unknown>[],
  paramIdOf: (agentId: string) => string = (a) => a,
  opts: TreeAdvantageOptions = {},
): Map<string, RoutedSample[]> {
  const out = new Map<string, RoutedSample[]>();
  for (const t of trees) {
    const ta = treeAdvantages(t, opts);
    if (ta.dropped) continue;
    for (const n of ta.nodes) {
      const paramId = paramIdOf(n.agentId);
      let buf = out.get(paramId);
      if (!buf) out.set(paramId, (buf = []));
      buf.push({ ...n, paramId });
    }
  }
  return out;
}
