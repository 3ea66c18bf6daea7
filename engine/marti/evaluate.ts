/**
 * MARTI held-out evaluation (docs/algorithms.md §3.9, §3.10, §3.11), seeded by the task seed only, so it is the same
 * for every run and step: pass@1 (sampled, greedy, per agent), the search tree's figures, T+ and the diversity
 * measures, with the identity that keys the evaluation cache. The trainer, the run layer's evaluations (with a
 * checkpoint or endpoint agents) and the studies all evaluate through this file, none through the trainer.
 */
import { UserError } from '../base/userError';
import type { PolicyModel } from '../policy/endpointPolicy';
import { Rng } from '../random/prng';
import type { EvalResult } from '../training/trainer';
import type { MartiConfig } from './configSchema';
import { diversityNodesOf, diversityReport, tokenEntropyFromLogProbs, type DiversityNode } from './diversity';
import { martiFormat, type MartiFormat } from './format';
import { run } from './lang/interpreter';
import { valueKey } from './lang/values';
import { heldoutTasks, taskSpec } from './problems';
import { growTrees, type AgentSpec, type GrowOptions, type GrowTiming, type MartiTree } from './rollout';
import { nonRootNodes } from './search/abmcts';
import { chooseFinal, treeMetrics } from './search/metrics';
import type { MartiTask } from './tasks/generator';
import { loadMartiTaskFile } from './tasks/taskFile';
import { searchConfig, teamOf } from './team';
import { treeRecord } from './treeRecord';

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** Program outputs on the task's private inputs: the behavioural signature of §3.11. */
function signature(program: string, task: MartiTask): string {
  return task.privateTests
    .map((t) => {
      const r = run(program, t.input);
      return r.ok ? valueKey(r.value) : `E:${r.error.kind}`;
    })
    .join('|');
}

function diversityMetrics(
  prefix: string,
  trees: readonly MartiTree[],
  tasks: readonly MartiTask[],
  agents: readonly string[],
  out: Record<string, number>,
): void {
  const taskOf = new Map(trees.map((t, i) => [t.treeId, tasks[i]!]));
  const nodes: DiversityNode[] = trees.flatMap((t) => diversityNodesOf(t));
  const rep = diversityReport(nodes, { outputsOf: (p, n) => signature(p, taskOf.get(n.problemId)!), agents });
  const put = (k: string, v: number | null | undefined) => {
    if (typeof v === 'number' && Number.isFinite(v)) out[`${prefix}${k}`] = v;
  };
  put('editDistance', rep.editDistance.all);
  put('editDistance.acrossAgents', rep.editDistance.acrossAgents);
  put('distinctPrograms', rep.distinctPrograms.all);
  put('behaviour', rep.behaviour?.all);
  put('distinctCorrect', rep.distinctCorrect.all);
  put('uniqueSolves', rep.uniqueSolves.total);
  put('passGap', rep.passGap.gap);
  put('agentSelectionEntropy', rep.agentSelectionEntropy);
  const all = trees.flatMap((t) => nonRootNodes(t));
  put('tokenEntropy', tokenEntropyFromLogProbs(all.map((n) => n.payload!.logProbs)));
  if (agents.length > 1) {
    for (const a of agents) {
      put(`editDistance.${a}`, rep.editDistance.withinAgent[a]);
      put(`distinctPrograms.${a}`, rep.distinctPrograms.perAgent[a]);
      put(`behaviour.${a}`, rep.behaviour?.perAgent[a]);
      put(`distinctCorrect.${a}`, rep.distinctCorrect.perAgent[a]);
      put(`uniqueSolves.${a}`, rep.uniqueSolves.perAgent[a]);
      put(
        `tokenEntropy.${a}`,
        tokenEntropyFromLogProbs(all.filter((n) => n.agentId === a).map((n) => n.payload!.logProbs)),
      );
    }
  }
}

export interface MartiEvalDetail {
  result: EvalResult;
  trees: { pass1: MartiTree[]; search: MartiTree[]; tplus: MartiTree[] };
  timing: GrowTiming[];
}

/** What every tree grown by one evaluation shares, and where its figures go. */
interface EvalContext {
  cfg: MartiConfig;
  fmt: MartiFormat;
  tasks: MartiTask[];
  team: AgentSpec[];
  root: Rng;
  base: Pick<GrowOptions, 'tasks' | 'agents' | 'models' | 'rewardMode' | 'maxNewTokens' | 'topP' | 'streamsPerTree'>;
  treeIds: (mode: string) => string[];
  metrics: Record<string, number>;
  timing: GrowTiming[];
}

/** Refuses models whose vocabulary is not MARTI's (e.g. a MARS checkpoint). */
function checkVocabulary(fmt: MartiFormat, models: ReadonlyMap<string, PolicyModel>): void {
  for (const [id, model] of models) {
    if (model.config.vocab_size !== fmt.tokenizer.vocabSize) {
      throw new UserError(
        `parameter set ${id}: this checkpoint's vocab_size is ${model.config.vocab_size}, but MARTI needs ${fmt.tokenizer.vocabSize}: evaluate MARTI checkpoints`,
      );
    }
  }
}

/** pass1, validPrograms, publicPass1 and pass1Greedy: one node per problem; returns the sampled trees. */
async function evalPass1(ctx: EvalContext): Promise<MartiTree[]> {
  const { cfg, fmt, team, root, base, treeIds, metrics, timing } = ctx;
  const one = await growTrees(fmt, {
    ...base,
    treeIds: treeIds('pass1'),
    search: searchConfig(cfg, 1, team),
    feedback: cfg.task.feedback,
    temperature: cfg.eval.temperature,
    searchRng: root.split('pass1-search'),
    tokenRng: root.split('pass1-tokens'),
  });
  timing.push(one.timing);
  metrics.pass1 = mean(one.trees.map((t) => treeMetrics(t).pass1));
  metrics.validPrograms = mean(one.trees.flatMap((t) => nonRootNodes(t).map((n) => (n.program === null ? 0 : 1))));
  metrics.publicPass1 = mean(one.trees.map((t) => nonRootNodes(t)[0]!.publicScore));
  // Sampled and greedy pass@1 need not move together under RL (in docs/results/marti.md sampled pass@1 doubles while
  // greedy stays flat), so a sampled evaluation also reports the greedy figure.
  if (cfg.eval.temperature > 0) {
    const greedy = await growTrees(fmt, {
      ...base,
      treeIds: treeIds('pass1'),
      search: searchConfig(cfg, 1, team),
      feedback: cfg.task.feedback,
      temperature: 0,
      searchRng: root.split('pass1-search'),
      tokenRng: root.split('pass1-tokens'),
    });
    timing.push(greedy.timing);
    metrics.pass1Greedy = mean(greedy.trees.map((t) => treeMetrics(t).pass1));
  } else metrics.pass1Greedy = metrics.pass1;
  return one.trees;
}

/** pass1.<a>: one node per problem written by agent a alone (agent mode), when K > 1. */
async function evalAgentsAlone(ctx: EvalContext): Promise<void> {
  const { cfg, fmt, team, root, base, treeIds, metrics, timing } = ctx;
  if (team.length > 1) {
    for (const a of team) {
      const solo = await growTrees(fmt, {
        ...base,
        agents: [a],
        treeIds: treeIds(`pass1-${a.id}`),
        search: searchConfig(cfg, 1, [a]),
        feedback: cfg.task.feedback,
        temperature: cfg.eval.temperature,
        searchRng: root.split(`pass1-search-${a.id}`),
        tokenRng: root.split(`pass1-tokens-${a.id}`),
      });
      timing.push(solo.timing);
      metrics[`pass1.${a.id}`] = mean(solo.trees.map((t) => treeMetrics(t).pass1));
    }
  }
}

/** pass1MCTS, bestOfTree, avgPass1, treeReward and div.*: a tree of evalNodes nodes per problem. */
async function evalSearch(ctx: EvalContext): Promise<MartiTree[]> {
  const { cfg, fmt, tasks, team, root, base, treeIds, metrics, timing } = ctx;
  const independent = cfg.marti.configuration === 'single' && cfg.marti.singleSearch === 'none';
  const search = await growTrees(fmt, {
    ...base,
    treeIds: treeIds('tree'),
    search: searchConfig(cfg, cfg.marti.evalNodes, team),
    independent,
    feedback: cfg.task.feedback,
    temperature: cfg.marti.evalSearchTemperature,
    searchRng: root.split('tree-search'),
    tokenRng: root.split('tree-tokens'),
  });
  timing.push(search.timing);
  const sm = search.trees.map((t) => treeMetrics(t));
  metrics.pass1MCTS = mean(sm.map((x) => x.pass1));
  metrics.bestOfTree = mean(sm.map((x) => x.passN));
  metrics.avgPass1 = mean(sm.map((x) => x.avgPass1));
  metrics.treeReward = mean(search.trees.flatMap((t) => nonRootNodes(t).map((n) => n.publicScore)));
  diversityMetrics(
    'div.',
    search.trees,
    tasks,
    team.map((a) => a.id),
    metrics,
  );
  return search.trees;
}

/** T+ (§3.10): tplus.nodes nodes, rich feedback, depth weighting, final pick by public tests; tplus.div.*. */
async function evalTplus(ctx: EvalContext): Promise<MartiTree[]> {
  const { cfg, fmt, tasks, team, root, base, treeIds, metrics, timing } = ctx;
  const tp = cfg.marti.tplus;
  const plus = await growTrees(fmt, {
    ...base,
    treeIds: treeIds('tplus'),
    search: searchConfig(cfg, tp.nodes, team, true),
    feedback: tp.feedback,
    temperature: cfg.marti.evalSearchTemperature,
    searchRng: root.split('tplus-search'),
    tokenRng: root.split('tplus-tokens'),
  });
  timing.push(plus.timing);
  // §3.10: the final answer is the node with the best public score (newest on ties); report its private score
  metrics['tplus.pass1'] = mean(plus.trees.map((t) => chooseFinal(t, { by: 'publicScore' })?.privateScore ?? 0));
  metrics['tplus.bestOfTree'] = mean(plus.trees.map((t) => treeMetrics(t).passN));
  diversityMetrics(
    'tplus.div.',
    plus.trees,
    tasks,
    team.map((a) => a.id),
    metrics,
  );
  return plus.trees;
}

/** The per-problem items: the pass@1 node's private result, with the search tree's record. */
function evalItems(ctx: EvalContext, pass1: readonly MartiTree[], search: readonly MartiTree[]): EvalResult['items'] {
  return ctx.tasks.map((task, i) => {
    const n = nonRootNodes(pass1[i]!)[0]!;
    const record = treeRecord(search[i]!, task, ctx.team, { mode: 'eval' });
    return {
      id: task.id,
      correct: n.privateScore === 1,
      score: n.privateScore ?? 0,
      output: n.program ?? n.payload!.completion,
      target: task.target,
      record,
    };
  });
}

/**
 * Held-out evaluation (§3.9, §3.10, §3.11), seeded by the task seed only, so it is the same for every run and step:
 *   pass1        one node per problem (system mode: the search picks the agent), eval.temperature
 *   pass1Greedy  the same at temperature 0, with the same agent choices: exactly pass1 of a greedy evaluation
 *   pass1.<a>    one node per problem written by agent a alone (agent mode), when K > 1
 *   pass1MCTS / bestOfTree / avgPass1   a tree of evalNodes nodes per problem (§3.9 pass1 on the tree, passN, avgPass1)
 *   tplus.pass1 / tplus.bestOfTree      T+: tplus.nodes nodes, rich feedback, depth weighting, final pick by public tests
 *   div.* (and tplus.div.*)             §3.11 diversity of the search trees, overall and per agent
 */
export async function evaluateMartiDetailed(
  cfg: MartiConfig,
  models: ReadonlyMap<string, PolicyModel>,
  opts: { tplus?: boolean } = {},
): Promise<MartiEvalDetail> {
  const fmt = martiFormat();
  checkVocabulary(fmt, models);
  const tasks = heldoutTasks(cfg);
  const team = teamOf(cfg);
  const ctx: EvalContext = {
    cfg,
    fmt,
    tasks,
    team,
    root: evalRoot(cfg),
    base: {
      tasks,
      agents: team,
      models,
      rewardMode: cfg.task.rewardMode,
      maxNewTokens: cfg.task.maxProgramTokens,
      topP: cfg.sampler.topP,
      // each problem's tree from its own streams (by tree id): seeded by the problem, whatever is evaluated beside it
      streamsPerTree: true,
    },
    treeIds: (mode: string) => tasks.map((t) => `${mode}-${t.id}`),
    metrics: {},
    timing: [],
  };
  const pass1 = await evalPass1(ctx);
  await evalAgentsAlone(ctx);
  const search = await evalSearch(ctx);
  const tplus = (opts.tplus ?? cfg.marti.tplus.enabled) ? await evalTplus(ctx) : [];
  return {
    result: { identity: martiEvalIdentity(cfg), metrics: ctx.metrics, items: evalItems(ctx, pass1, search) },
    trees: { pass1, search, tplus },
    timing: ctx.timing,
  };
}

export async function evaluateMarti(
  cfg: MartiConfig,
  models: ReadonlyMap<string, PolicyModel>,
  opts: { tplus?: boolean } = {},
): Promise<EvalResult> {
  return (await evaluateMartiDetailed(cfg, models, opts)).result;
}

/** The evaluation's streams: by the task seed, and by eval.drawSeed when it is not 0 (0 keeps the streams it had). */
function evalRoot(cfg: MartiConfig): Rng {
  const root = new Rng(cfg.task.taskSeed).split('marti-eval');
  return cfg.eval.drawSeed ? root.split(`draws-${cfg.eval.drawSeed}`) : root;
}

export function martiEvalIdentity(cfg: MartiConfig): EvalResult['identity'] {
  const m = cfg.marti;
  return {
    algorithm: 'marti',
    split: 'heldout',
    taskSeed: cfg.task.taskSeed,
    spec: JSON.stringify(taskSpec(cfg)),
    items: cfg.eval.items,
    temperature: cfg.eval.temperature,
    team: JSON.stringify(teamOf(cfg)),
    search: JSON.stringify({
      single: m.configuration === 'single' ? m.singleSearch : 'tree',
      evalNodes: m.evalNodes,
      t: m.evalSearchTemperature,
      posterior: m.posterior,
      agentSelect: m.agentSelect,
      feedback: cfg.task.feedback,
      rewardMode: cfg.task.rewardMode,
      maxProgramTokens: cfg.task.maxProgramTokens,
      topP: cfg.sampler.topP,
    }),
    tplus: JSON.stringify(m.tplus),
    // each problem's tree from its own streams (issue 32, defect 4): entries from the shared streams do not answer
    streams: 'perTree',
    ...(cfg.eval.drawSeed ? { drawSeed: cfg.eval.drawSeed } : {}),
    ...(cfg.task.file ? { taskFile: loadMartiTaskFile(cfg.task.file).sha } : {}),
  };
}
