/**
 * One MARTI tree as a trajectories.jsonl record (records/marti.ts MartiTreeRecord): every node with what the tree
 * explorer and inspector show (program, tests, posteriors, the expansion's trace, advantage, whether it trained).
 * Written by training steps (with advantages), live views and evaluation trees.
 */
import type { MartiTreeRecord } from '../records/marti';
import { RECORD_VERSION } from '../records/version';
import type { AgentSpec, MartiTree } from './rollout';
import { agentShares } from './search/abmcts';
import { treeMetrics } from './search/metrics';
import { summarizePosterior } from './search/posterior';
import type { MartiTask } from './tasks/generator';

function summaries(tree: MartiTree, nodeId: number) {
  const n = tree.nodes[nodeId]!;
  const cfg = tree.config.posterior;
  return { gen: summarizePosterior(n.gen, cfg), cont: summarizePosterior(n.cont, cfg) };
}

/** One tree as a trajectories.jsonl record: every node with what the inspector shows. */
export function treeRecord(
  tree: MartiTree,
  task: MartiTask,
  team: readonly AgentSpec[],
  extra: {
    advantages?: Map<number, { advantage: number; shapedReward: number }>;
    trained?: (nodeId: number) => boolean | 'buffered';
    mode?: string;
  } = {},
): MartiTreeRecord {
  const paramOf = new Map(team.map((a) => [a.id, a.paramId]));
  const m = treeMetrics(tree);
  return {
    kind: 'marti.tree',
    version: RECORD_VERSION,
    mode: extra.mode ?? 'train',
    treeId: tree.treeId,
    taskId: task.id,
    statement: task.statement,
    target: task.target,
    publicTests: task.publicTests,
    agents: tree.config.agents,
    metrics: m,
    agentShares: agentShares(tree),
    nodes: tree.nodes.map((n) => {
      const p = n.payload;
      const a = extra.advantages?.get(n.id);
      return {
        id: n.id,
        parentId: n.parentId,
        depth: n.depth,
        agent: n.agentId,
        paramId: n.agentId === null ? null : (paramOf.get(n.agentId) ?? null),
        prompt: p?.prompt ?? null,
        completion: p?.completion ?? null,
        program: n.program,
        feedback: p?.feedback ?? null,
        parseError: p?.parseError ?? null,
        finish: p?.finish ?? null,
        public: p ? { passed: p.publicPassed, total: p.publicTotal, score: n.publicScore } : null,
        private: p ? { passed: p.privatePassed, total: p.privateTotal, score: n.privateScore } : null,
        score: n.score,
        genObservation: n.genObservation,
        // posterior summaries and draws seen when this node's expansion was selected (§3.4)
        expansion: n.expansion,
        posteriors: summaries(tree, n.id),
        advantage: a?.advantage ?? null,
        shapedReward: a?.shapedReward ?? null,
        trained: n.id === 0 ? false : extra.trained ? extra.trained(n.id) : false,
        tokens: p ? p.outputTokens.length : 0,
      };
    }),
  };
}
