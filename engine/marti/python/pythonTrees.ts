/**
 * MARTI-MARS² trees of Python programs (issue 31, items 4–5): one AB-MCTS tree per problem (search/abmcts.ts, the same
 * selection, posteriors and T+ depth weighting as the toy language's trees), whose nodes are programs a chat policy
 * (engine/policy/chatPolicy.ts: a real model in-process, or any OpenAI-compatible endpoint) wrote, scored by the
 * problem's unit tests in the sandbox (pythonNodes.ts). A refinement reads its parent's program and the feedback
 * (pythonPrompts.ts); 'plain' search reads the released per-test verdicts, T+ ('rich' feedback and depth-guided GEN
 * credit) reads what the tests printed and raised.
 *
 * Every tree draws its search and its tokens from its own streams, split by the problem's id from the seed, so a
 * problem's tree does not depend on the problems grown beside it (issue 32, defect 4). Each round takes at most one
 * expansion per unfinished tree, asks each agent's policy once for all of its chats, and scores the programs together.
 *
 * The search observation is the tests' verdict, so the tree's figures are those of a search with the evaluation's
 * tests as its verifier: best-of-tree at N nodes is comparable with pass@N (any of N samples passes), not with pass@1.
 * HumanEval has no public/private split of its tests; a task file that separates them is not read yet.
 */
import type { Isolation } from '../../code/sandbox/isolation';
import type { SandboxLimits } from '../../code/sandbox/limits';
import type { CodeTask } from '../../code/tasks/taskFile';
import type { ChatMessage } from '../../model/chat/chatTemplate';
import type { ChatPolicy, ChatReply } from '../../policy/chatPolicy';
import type { Rng } from '../../random/prng';
import { addNode, newTree, nonRootNodes, selectExpansions, type SearchConfig, type SearchTree } from '../search/abmcts';
import { diversityNodesOf, distinctProgramRatio, pairwiseEditDistance } from '../diversity';
import { PYTHON_DIVERSITY } from './codeDiversity';
import {
  scorePrograms,
  type PythonFeedback,
  type PythonRewardMode,
  type PythonScore,
  type PythonTestOutcome,
} from './pythonNodes';
import { extractCode, refineChat, rootChat } from './pythonPrompts';

export interface PythonAgent {
  id: string;
  policy: ChatPolicy;
  rolePrompt?: string;
}

export interface PythonNodePayload {
  /** The chat the node was written from (one user message). */
  chat: ChatMessage[];
  reply: string;
  replyTokens: number;
  finish: 'stop' | 'length';
  status: PythonScore['status'];
  reason: string;
  /** The feedback a refinement of this node reads (the tree's form). */
  feedback: string;
  passed: number;
  total: number;
  /** Each test's outcome (pythonNodes.ts): what the app's tree view lists. */
  tests: PythonTestOutcome[];
  /** In-process: the reply's ids and log-probabilities after the chat's ids (a training step's sample). */
  sample?: ChatReply['sample'];
}

export type PythonTree = SearchTree<PythonNodePayload>;

export interface SandboxContext {
  iso: Isolation;
  limits: SandboxLimits;
  workers?: number;
}

export interface SamplingSettings {
  maxNewTokens: number;
  temperature: number;
  topP: number;
}

export interface PythonGrowOptions extends SamplingSettings {
  tasks: readonly CodeTask[];
  agents: readonly PythonAgent[];
  search: SearchConfig;
  feedback: PythonFeedback;
  rewardMode?: PythonRewardMode;
  /** Split by each problem's id into its search and token streams. */
  searchRng: Rng;
  tokenRng: Rng;
  sandbox: SandboxContext;
  /** After each round, with the nodes written so far and the budget. */
  onRound?: (nodes: number, total: number) => void;
}

export interface PythonGrowTiming {
  generationMs: number;
  testMs: number;
  rounds: number;
  replyTokens: number;
}

export async function growPythonTrees(
  o: PythonGrowOptions,
): Promise<{ trees: PythonTree[]; timing: PythonGrowTiming }> {
  const trees = o.tasks.map((t) => newTree<PythonNodePayload>(t.id, o.search));
  const taskOf = new Map(o.tasks.map((t) => [t.id, t]));
  const treeOf = new Map(trees.map((t) => [t.treeId, t]));
  const agentOf = new Map(o.agents.map((a) => [a.id, a]));
  const streams = new Map(
    trees.map((t) => [t.treeId, { search: o.searchRng.split(t.treeId), tokens: o.tokenRng.split(t.treeId) }]),
  );
  const timing: PythonGrowTiming = { generationMs: 0, testMs: 0, rounds: 0, replyTokens: 0 };
  const budget = trees.length * o.search.nodesPerTree;
  let written = 0;
  for (;;) {
    const exps = selectExpansions(trees, (t) => streams.get(t.treeId)!.search);
    if (exps.length === 0) break;
    timing.rounds++;
    const chats = exps.map((e) => {
      const task = taskOf.get(e.treeId)!;
      const role = agentOf.get(e.agentId)!.rolePrompt;
      if (e.parentId === 0) return rootChat(task, role);
      const parent = treeOf.get(e.treeId)!.nodes[e.parentId]!;
      return refineChat(task, parent.program, parent.payload!.feedback, role);
    });
    const replies = new Array<ChatReply>(exps.length);
    const g0 = performance.now();
    for (const agent of o.agents) {
      const idx = exps.flatMap((e, i) => (e.agentId === agent.id ? [i] : []));
      if (!idx.length) continue;
      const out = await agent.policy.reply(
        idx.map((i) => chats[i]!),
        { ...samplingOf(o), rngs: idx.map((i) => streams.get(exps[i]!.treeId)!.tokens) },
      );
      idx.forEach((i, k) => (replies[i] = out[k]!));
    }
    const s0 = performance.now();
    timing.generationMs += s0 - g0;
    const codes = replies.map((r, i) => extractCode(r.text, taskOf.get(exps[i]!.treeId)!.entryPoint));
    const scores = await scorePrograms(
      exps.map((e, i) => ({ task: taskOf.get(e.treeId)!, code: codes[i]! })),
      o.sandbox.iso,
      o.sandbox.limits,
      o.rewardMode,
      o.sandbox.workers,
    );
    timing.testMs += performance.now() - s0;
    exps.forEach((e, i) => {
      const s = scores[i]!;
      const r = replies[i]!;
      timing.replyTokens += r.tokens;
      addNode(treeOf.get(e.treeId)!, e, {
        program: codes[i]!,
        score: s.score,
        publicScore: s.score,
        privateScore: s.passed === s.total ? 1 : 0,
        payload: {
          chat: chats[i]!,
          reply: r.text,
          replyTokens: r.tokens,
          finish: r.finish,
          status: s.status,
          reason: s.reason,
          feedback: s.feedback[o.feedback],
          passed: s.passed,
          total: s.total,
          tests: s.tests,
          ...(r.sample ? { sample: r.sample } : {}),
        },
      });
    });
    written += exps.length;
    o.onRound?.(written, budget);
  }
  return { trees, timing };
}

function samplingOf(s: SamplingSettings) {
  return { maxNewTokens: s.maxNewTokens, temperature: s.temperature, topP: s.topP };
}

/** One reply a problem (greedy at temperature 0), scored: pass@1 as the model's single answer. */
export async function answerOnce(
  tasks: readonly CodeTask[],
  policy: ChatPolicy,
  sampling: SamplingSettings,
  tokenRng: Rng,
  sandbox: SandboxContext,
): Promise<{ task: CodeTask; reply: string; code: string | null; score: PythonScore }[]> {
  const replies = await policy.reply(
    tasks.map((t) => rootChat(t)),
    { ...samplingOf(sampling), rngs: tasks.map((t) => tokenRng.split(t.id)) },
  );
  const codes = replies.map((r, i) => extractCode(r.text, tasks[i]!.entryPoint));
  const scores = await scorePrograms(
    tasks.map((task, i) => ({ task, code: codes[i]! })),
    sandbox.iso,
    sandbox.limits,
    'allPass',
    sandbox.workers,
  );
  return tasks.map((task, i) => ({ task, reply: replies[i]!.text, code: codes[i]!, score: scores[i]! }));
}

export interface PythonTreeSummary {
  problems: number;
  /** The first node of each tree passes: a sampled answer's pass@1. */
  firstNodePass: number;
  /** Some node among the first n (expansion order) passes, for each budget n. */
  bestOfTree: Record<number, number>;
  /** Nodes written from the problem alone / from a parent's feedback, and the share of each that passed. */
  rootNodes: number;
  rootPass: number;
  refineNodes: number;
  refinePass: number;
  /** How nodes ended in the sandbox (passed, failed, timeout, no-code, …). */
  statuses: Record<string, number>;
  /**
   * Diversity of the programs within a tree (codeDiversity.ts): mean pairwise normalised token edit distance, pooled
   * over every pair of every tree, and the mean share of distinct programs (names renamed) a tree; null without pairs.
   */
  diversity: { editDistance: number | null; distinctRatio: number | null };
}

const passes = (n: { privateScore: number | null }) => n.privateScore === 1;

export function summariseTrees(trees: readonly PythonTree[], budgets: readonly number[]): PythonTreeSummary {
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  const nodes = trees.map((t) => nonRootNodes(t));
  const all = nodes.flat();
  const roots = all.filter((n) => n.parentId === 0);
  const refines = all.filter((n) => n.parentId !== 0);
  const programs = trees.flatMap((t) => diversityNodesOf(t));
  const statuses: Record<string, number> = {};
  for (const n of all) statuses[n.payload!.status] = (statuses[n.payload!.status] ?? 0) + 1;
  return {
    problems: trees.length,
    firstNodePass: mean(nodes.map((ns) => (ns[0] && passes(ns[0]) ? 1 : 0))),
    bestOfTree: Object.fromEntries(
      budgets.map((b) => [b, mean(nodes.map((ns) => (ns.some((n) => n.id <= b && passes(n)) ? 1 : 0)))]),
    ),
    rootNodes: roots.length,
    rootPass: mean(roots.map((n) => (passes(n) ? 1 : 0))),
    refineNodes: refines.length,
    refinePass: mean(refines.map((n) => (passes(n) ? 1 : 0))),
    statuses,
    diversity: {
      editDistance: pairwiseEditDistance(programs, PYTHON_DIVERSITY).all,
      distinctRatio: distinctProgramRatio(programs, PYTHON_DIVERSITY).all,
    },
  };
}
