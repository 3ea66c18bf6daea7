/**
 * Growing MARTI-MARS² trees (docs/algorithms.md §3.4–3.6, §3.8 inner loop): one tree per problem, every tree expanded in
 * parallel. Each round selects at most one pending expansion per unfinished tree, makes ONE batched generate() call
 * per parameter set for all of them (the hot path), scores the programs with the interpreter and adds the nodes
 * (which backpropagates). Used for training steps and for every evaluation (pass@1, best-of-tree, T+).
 */
import { generateWith, type PolicyModel } from '../policy/endpointPolicy';
import type { Rng } from '../random/prng';
import type { MartiFormat } from './format';
import { readCompletion, refinePrompt, rootPrompt } from './prompts';
import {
  addNode,
  forceExpansion,
  isComplete,
  newTree,
  selectExpansions,
  type Expansion,
  type SearchConfig,
  type SearchTree,
} from './search/abmcts';
import type { MartiTask } from './tasks/generator';
import { feedbackText, type FeedbackMode, type RewardMode } from './tasks/scoring';

export interface AgentSpec {
  id: string;
  /** The parameter set that writes (and trains on) this agent's nodes. */
  paramId: string;
  rolePrompt: string;
}

/** What a node carries beyond the search's own fields: everything the trainer and the inspector need. */
export interface NodePayload {
  prompt: string;
  promptTokens: number[];
  outputTokens: number[];
  logProbs: number[];
  completion: string;
  feedback: string;
  finish: string;
  parseError: string | null;
  publicPassed: number;
  publicTotal: number;
  privatePassed: number;
  privateTotal: number;
}

export type MartiTree = SearchTree<NodePayload>;

export interface GrowOptions {
  tasks: readonly MartiTask[];
  treeIds: readonly string[];
  agents: readonly AgentSpec[];
  /** Each parameter set's policy: the run's own model, or an endpoint (engine/policy/) in evaluations. */
  models: ReadonlyMap<string, PolicyModel>;
  search: SearchConfig;
  /** Vanilla GRPO (§6.7 `grpo`): every node is a fresh root child written by the first agent; no search. */
  independent?: boolean;
  feedback: FeedbackMode;
  rewardMode: RewardMode;
  maxNewTokens: number;
  temperature: number;
  topP: number;
  searchRng: Rng;
  tokenRng: Rng;
  /**
   * Each tree draws from its own streams, split from searchRng and tokenRng by its tree id, so a problem's tree does
   * not depend on the problems grown beside it (evaluation; issue 32 defect 4). Off: the trees share the two streams,
   * consumed in tree order (training, whose recorded runs are reproduced step for step).
   */
  streamsPerTree?: boolean;
  /**
   * Called after every round with the trees as they stand (each has gained at most one node). It may read them but
   * not change them; the growth does not wait for anything it starts.
   */
  onRound?: (trees: readonly MartiTree[]) => void;
}

export interface GrowTiming {
  selectionMs: number;
  generationMs: number;
  testMs: number;
  rounds: number;
  generateCalls: number;
}

export interface GrowResult {
  trees: MartiTree[];
  timing: GrowTiming;
}

function promptFor(tree: MartiTree, task: MartiTask, e: Expansion, agent: AgentSpec): string {
  const opts = { rolePrompt: agent.rolePrompt };
  if (e.parentId === 0) return rootPrompt(task, opts);
  const parent = tree.nodes[e.parentId]!;
  return refinePrompt(task, parent.program, parent.payload!.feedback, opts);
}

export async function growTrees(fmt: MartiFormat, o: GrowOptions): Promise<GrowResult> {
  const trees: MartiTree[] = o.tasks.map((_, i) => newTree<NodePayload>(o.treeIds[i]!, o.search));
  const taskOf = new Map(trees.map((t, i) => [t.treeId, o.tasks[i]!]));
  const treeOf = new Map(trees.map((t) => [t.treeId, t]));
  const agentOf = new Map(o.agents.map((a) => [a.id, a]));
  const paramOrder = [...new Set(o.agents.map((a) => a.paramId))];
  const timing: GrowTiming = { selectionMs: 0, generationMs: 0, testMs: 0, rounds: 0, generateCalls: 0 };
  const own = o.streamsPerTree
    ? new Map(trees.map((t) => [t.treeId, { search: o.searchRng.split(t.treeId), tokens: o.tokenRng.split(t.treeId) }]))
    : null;
  for (;;) {
    const t0 = performance.now();
    const exps = o.independent
      ? trees.filter((t) => !t.pending && !isComplete(t)).map((t) => forceExpansion(t, 0, o.agents[0]!.id))
      : selectExpansions(trees, own ? (t) => own.get(t.treeId)!.search : o.searchRng);
    const t1 = performance.now();
    timing.selectionMs += t1 - t0;
    if (exps.length === 0) break;
    timing.rounds++;
    const prompts = exps.map((e) =>
      promptFor(treeOf.get(e.treeId)!, taskOf.get(e.treeId)!, e, agentOf.get(e.agentId)!),
    );
    const promptTokens = prompts.map((p) => fmt.prompt(p));
    const outs = new Array<{ tokens: number[]; logProbs: number[]; finish: string }>(exps.length);
    // One call per parameter set per round, in a fixed order, so the token stream is consumed deterministically.
    for (const pid of paramOrder) {
      const idx = exps.map((e, i) => (agentOf.get(e.agentId)!.paramId === pid ? i : -1)).filter((i) => i >= 0);
      if (!idx.length) continue;
      const g0 = performance.now();
      const gens = await generateWith(
        o.models.get(pid)!,
        idx.map((i) => promptTokens[i]!),
        {
          maxNewTokens: o.maxNewTokens,
          temperature: o.temperature,
          topP: o.topP,
          stopTokens: [fmt.eos],
          rng: o.tokenRng,
          ...(own ? { rowRngs: idx.map((i) => own.get(exps[i]!.treeId)!.tokens) } : {}),
        },
      );
      timing.generationMs += performance.now() - g0;
      timing.generateCalls++;
      idx.forEach((i, k) => (outs[i] = gens[k]!));
    }
    const s0 = performance.now();
    exps.forEach((e, i) => {
      const tree = treeOf.get(e.treeId)!;
      const task = taskOf.get(e.treeId)!;
      const g = outs[i]!;
      // an endpoint's answer its tokens cannot hold is read from its text (prompts.ts readCompletion)
      const { completion, evaluation: ev } = readCompletion(fmt, g, task, { rewardMode: o.rewardMode });
      addNode(tree, e, {
        program: ev.program,
        score: ev.publicScore,
        publicScore: ev.publicScore,
        // private tests are metrics only: always all-pass, so pass rates stay pass rates under rewardMode 'fraction'
        privateScore: ev.privatePassed === ev.privateTests.length ? 1 : 0,
        payload: {
          prompt: prompts[i]!,
          promptTokens: promptTokens[i]!,
          outputTokens: g.tokens,
          logProbs: g.logProbs,
          completion,
          feedback: feedbackText(ev, o.feedback),
          finish: g.finish,
          parseError: ev.parseError ? `${ev.parseError.kind}: ${ev.parseError.message}` : null,
          publicPassed: ev.publicPassed,
          publicTotal: ev.publicTests.length,
          privatePassed: ev.privatePassed,
          privateTotal: ev.privateTests.length,
        },
      });
    });
    timing.testMs += performance.now() - s0;
    o.onRound?.(trees);
  }
  return { trees, timing };
}
