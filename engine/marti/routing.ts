/**
 * Where a MARTI training step's samples go (docs/algorithms.md §3.7): advantages per tree first (one GRPO group per
 * tree), then each node's sample to the buffer of the parameter set of the agent that wrote it; and the step's tree
 * records, each node marked trained, buffered or neither. The trainer (trainer.ts) updates the sets that are due.
 */
import type { MartiTreeRecord } from '../records/marti';
import type { Sample } from '../rl/sample';
import type { MartiConfig } from './configSchema';
import type { AgentSpec, MartiTree } from './rollout';
import type { MartiTask } from './tasks/generator';
import { treeAdvantages, type TreeAdvantageOptions } from './treeAdvantage';
import { treeRecord } from './treeRecord';

type NodeAdvantages = Map<number, { advantage: number; shapedReward: number }>;

/** §3.7 options of the per-tree advantages. */
export function advantageOptions(cfg: MartiConfig): TreeAdvantageOptions {
  const m = cfg.marti;
  return {
    eps: cfg.rl.zscoreEps,
    stdMode: cfg.rl.stdMode,
    singleton: cfg.rl.singleton,
    treeShaping: m.treeShaping,
    dynamicFiltering: m.dynamicFiltering,
    overlongPenalty: m.overlongPenalty
      ? {
          maxLen: cfg.task.maxProgramTokens,
          buffer: m.overlongPenalty.buffer,
          factor: m.overlongPenalty.factor,
          lengthOf: (n) => (n.payload as { outputTokens: number[] }).outputTokens.length,
        }
      : null,
  };
}

/** What routing did: each tree's node advantages and routed nodes, and the step's counts. */
export interface Routing {
  advByTree: NodeAdvantages[];
  routedNodes: Set<number>[];
  dropped: number;
  zeroAdv: number;
  routed: number;
}

/** §3.7: advantages per tree first, then each node's sample to the buffer of its writer's parameter set. */
export function routeSamples(
  trees: readonly MartiTree[],
  team: readonly AgentSpec[],
  sets: readonly { id: string; buffer: Sample[] }[],
  advOpts: TreeAdvantageOptions,
): Routing {
  const paramOf = new Map(team.map((a) => [a.id, a.paramId]));
  const setById = new Map(sets.map((s) => [s.id, s]));
  const r: Routing = { advByTree: [], routedNodes: [], dropped: 0, zeroAdv: 0, routed: 0 };
  trees.forEach((tree) => {
    const ta = treeAdvantages(tree, advOpts);
    r.advByTree.push(
      new Map(ta.nodes.map((n) => [n.nodeId, { advantage: n.advantage, shapedReward: n.shapedReward }])),
    );
    const mine = new Set<number>();
    r.routedNodes.push(mine);
    if (ta.dropped) {
      r.dropped++;
      return;
    }
    for (const na of ta.nodes) {
      const node = tree.nodes[na.nodeId]!;
      const p = node.payload!;
      const set = setById.get(paramOf.get(na.agentId)!)!;
      set.buffer.push({
        role: 'node',
        groupId: tree.treeId,
        paramId: set.id,
        tokens: [...p.promptTokens, ...p.outputTokens],
        lossMask: [...p.promptTokens.map(() => 0), ...p.outputTokens.map(() => 1)],
        behaviourLogProbs: [...p.promptTokens.map(() => 0), ...p.logProbs],
        reward: na.shapedReward,
        advantage: na.advantage,
      });
      mine.add(na.nodeId);
      r.routed++;
      if (na.advantage === 0) r.zeroAdv++;
    }
  });
  return r;
}

/** The step's trees as records, each node marked trained, buffered (routed to a set not yet updated) or neither. */
export function stepRecords(
  trees: readonly MartiTree[],
  picked: readonly MartiTask[],
  team: readonly AgentSpec[],
  routing: Routing,
  updatedNow: ReadonlySet<string>,
): MartiTreeRecord[] {
  const paramOf = new Map(team.map((a) => [a.id, a.paramId]));
  return trees.map((t, i) =>
    treeRecord(t, picked[i]!, team, {
      advantages: routing.advByTree[i],
      trained: (id) =>
        routing.routedNodes[i]!.has(id)
          ? updatedNow.has(paramOf.get(t.nodes[id]!.agentId!)!)
            ? true
            : 'buffered'
          : false,
    }),
  );
}
