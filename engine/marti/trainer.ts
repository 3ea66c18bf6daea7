/**
 * The MARTI-MARS² trainer (docs/algorithms.md §3.8): per step, one AB-MCTS-A tree per problem grown by the team
 * (rollout.ts: one generate() per parameter set per round), one GRPO group per tree (z-score over all its nodes),
 * samples routed to the parameter set of the agent that wrote them, per-set buffers, optimisers and frozen KL
 * references. Evaluation on held-out tasks: pass@1, best-of-tree, T+ and the §3.11 diversity measures.
 *
 * Parameter sets: `single` → one set 'policy' (first agent only); `homogeneous` → one set 'shared' for all agents;
 * `heterogeneous` → one set per agent, named by the agent id. The first set is the checkpoint's main model; the others
 * are extra files `agent-<id>.safetensors` (+ config and optimiser), like MARS's separate System 1.
 */
import fs from 'node:fs';
import path from 'node:path';
import { encodeSafetensors, readSafetensorsFile } from '../model/formats/safetensors';
import { encodeModelWeights, loadModelWeights, type CheckpointContents } from '../model/formats/checkpoint';
import { TOKENIZER_FILE } from '../model/formats/checkpointFiles';
import { parseLlamaConfig, toHfConfigJson } from '../model/config';
import { cloneModel } from '../model/formats/hfWeights';
import type { PolicyModel } from '../policy/endpointPolicy';
import { loadMartiTaskFile } from './tasks/taskFile';
import type { LlamaModel } from '../model/llama';
import { Rng } from '../random/prng';
import type { Adam } from '../rl/adam';
import { policyUpdate, type PolicyUpdateStats } from '../rl/policyUpdate';
import type { Sample } from '../rl/sample';
import {
  configuredAdam,
  configuredInitialModel,
  configuredUpdate,
  restoreStreams,
  saveStreams,
} from '../training/configuredTraining';
import type { Algorithm, EvalResult, StepHooks, StepOutput, Trainer, TrainerSnapshot } from '../training/trainer';
import type { MartiTreeRecord } from '../records/marti';
import { RECORD_VERSION } from '../records/version';
import { UserError } from '../base/userError';
import type { MartiConfig } from './configSchema';
import { diversityNodesOf, diversityReport, tokenEntropyFromLogProbs, type DiversityNode } from './diversity';
import { martiFormat } from './format';
import { run } from './lang/interpreter';
import { valueKey } from './lang/values';
import { growTrees, type AgentSpec, type GrowTiming, type MartiTree } from './rollout';
import { agentShares, makeSearchConfig, nonRootNodes, type SearchConfig } from './search/abmcts';
import { chooseFinal, treeMetrics } from './search/metrics';
import { summarizePosterior } from './search/posterior';
import {
  DEFAULT_TASK_SPEC,
  TaskPoolExhaustedError,
  generateTasks,
  type MartiTask,
  type TaskSpec,
} from './tasks/generator';
import { pretrainCorpus } from './tasks/corpus';
import { treeAdvantages, type TreeAdvantageOptions } from './treeAdvantage';

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

export function taskSpec(cfg: MartiConfig): TaskSpec {
  const t = cfg.task;
  return {
    ...DEFAULT_TASK_SPEC,
    minOps: t.minOps,
    maxOps: t.maxOps,
    publicTests: t.publicTests,
    privateTests: t.privateTests,
    vagueShare: t.vagueShare,
  };
}

const taskCache = new Map<string, MartiTask[]>();
function tasksOf(cfg: MartiConfig, split: 'train' | 'heldout', n: number): MartiTask[] {
  const key = `${split}:${cfg.task.taskSeed}:${n}:${JSON.stringify(taskSpec(cfg))}`;
  let ts = taskCache.get(key);
  if (!ts) {
    try {
      ts = generateTasks(split, cfg.task.taskSeed, n, taskSpec(cfg));
    } catch (e) {
      if (!(e instanceof TaskPoolExhaustedError)) throw e;
      const field = split === 'train' ? 'task.trainTasks' : 'eval.items';
      throw new UserError(`${field}: ${e.message} (task.maxOps)`);
    }
    taskCache.set(key, ts);
  }
  return ts;
}
/** The held-out problems: generated, or the first eval.items of a user's task file (task.file). */
export const heldoutTasks = (cfg: MartiConfig) =>
  cfg.task.file
    ? loadMartiTaskFile(cfg.task.file).tasks.slice(0, cfg.eval.items)
    : tasksOf(cfg, 'heldout', cfg.eval.items);

/** The team (§3.1): agents with the parameter set each writes to. */
export function teamOf(cfg: MartiConfig): AgentSpec[] {
  const m = cfg.marti;
  if (m.configuration === 'single') {
    return [{ id: m.agents[0]!.id, paramId: 'policy', rolePrompt: m.agents[0]!.rolePrompt }];
  }
  return m.agents.map((a) => ({
    id: a.id,
    paramId: m.configuration === 'homogeneous' ? 'shared' : a.id,
    rolePrompt: a.rolePrompt,
  }));
}

export function paramIdsOf(cfg: MartiConfig): string[] {
  return [...new Set(teamOf(cfg).map((a) => a.paramId))];
}

function searchConfig(cfg: MartiConfig, nodes: number, agents: readonly AgentSpec[], tplus = false): SearchConfig {
  const t = cfg.marti.tplus;
  return makeSearchConfig({
    agents: agents.map((a) => a.id),
    nodesPerTree: nodes,
    posterior: cfg.marti.posterior,
    agentSelect: cfg.marti.agentSelect,
    depthWeighting: tplus && t.depthWeighting ? { alpha: t.alpha, beta: t.beta } : null,
  });
}

/** The initial weights of parameter set `index` (deterministic: the KL reference is rebuilt from it on resume). */
async function initialParamModel(cfg: MartiConfig, index: number, paramId: string, root: Rng): Promise<LlamaModel> {
  const agent =
    cfg.marti.configuration === 'heterogeneous' ? cfg.marti.agents.find((a) => a.id === paramId) : undefined;
  const model = {
    ...cfg.model,
    ...(agent?.size ? { size: agent.size } : {}),
    ...(agent?.from ? { from: agent.from } : {}),
  };
  return configuredInitialModel(
    { ...cfg, model },
    martiFormat().tokenizer.vocabSize,
    {},
    root.split(index === 0 ? 'init' : `init-${paramId}`),
    'the MARTI vocabulary',
  );
}

interface ParamSet {
  id: string;
  model: LlamaModel;
  opt: Adam;
  ref: LlamaModel | null;
  buffer: Sample[];
  updates: number;
}

interface Streams {
  problems: Rng;
  search: Rng;
  tokens: Rng;
  minibatch: Rng;
}
const STREAMS = ['problems', 'search', 'tokens', 'minibatch'] as const;

const agentFile = (id: string) => `agent-${id}.safetensors`;
const agentConfigFile = (id: string) => `agent-${id}.config.json`;
const agentOptFile = (id: string) => `agent-${id}_optimizer.safetensors`;

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

class MartiTrainer implements Trainer {
  constructor(
    private readonly cfg: MartiConfig,
    private readonly pool: MartiTask[],
    private readonly sets: ParamSet[],
    private readonly streams: Streams,
    public step: number,
  ) {}

  /** The parameter sets, in order (tests check how many distinct models a team really has). */
  get parameterSets(): readonly { id: string; model: LlamaModel }[] {
    return this.sets;
  }

  private get models(): Map<string, LlamaModel> {
    return new Map(this.sets.map((s) => [s.id, s.model]));
  }

  async trainStep(hooks: StepHooks = {}): Promise<StepOutput> {
    const { cfg } = this;
    const fmt = martiFormat();
    const team = teamOf(cfg);
    const m = cfg.marti;
    const picked = Array.from(
      { length: m.problemsPerStep },
      () => this.pool[this.streams.problems.int(this.pool.length)]!,
    );
    // Live view: after each round, every tree as it stands (the nodes expanded so far, in expansion order), in the
    // final record's form without advantages; `budget` says how many nodes it will have.
    let liveMs = 0;
    const onRound = hooks.live
      ? (trees: readonly MartiTree[]) => {
          const l0 = performance.now();
          hooks.live!(
            trees.map((t, i) => ({ ...treeRecord(t, picked[i]!, team), live: true, budget: m.nodesPerTree })),
          );
          liveMs += performance.now() - l0;
        }
      : undefined;
    const grown = await growTrees(fmt, {
      onRound,
      tasks: picked,
      treeIds: picked.map((t, i) => `s${this.step + 1}-${i}-${t.id}`),
      agents: team,
      models: this.models,
      search: searchConfig(cfg, m.nodesPerTree, team),
      independent: m.configuration === 'single' && m.singleSearch === 'none',
      feedback: cfg.task.feedback,
      rewardMode: cfg.task.rewardMode,
      maxNewTokens: cfg.task.maxProgramTokens,
      temperature: cfg.sampler.temperature,
      topP: cfg.sampler.topP,
      searchRng: this.streams.search,
      tokenRng: this.streams.tokens,
    });
    const { trees } = grown;
    // §3.7: advantages per tree first, then routing to the writer's parameter set.
    const advOpts: TreeAdvantageOptions = {
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
    const paramOf = new Map(team.map((a) => [a.id, a.paramId]));
    const setById = new Map(this.sets.map((s) => [s.id, s]));
    const advByTree: Map<number, { advantage: number; shapedReward: number }>[] = [];
    const routedNodes: Set<number>[] = [];
    let dropped = 0;
    let zeroAdv = 0;
    let routed = 0;
    trees.forEach((tree) => {
      const ta = treeAdvantages(tree, advOpts);
      advByTree.push(
        new Map(ta.nodes.map((n) => [n.nodeId, { advantage: n.advantage, shapedReward: n.shapedReward }])),
      );
      const mine = new Set<number>();
      routedNodes.push(mine);
      if (ta.dropped) {
        dropped++;
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
        routed++;
        if (na.advantage === 0) zeroAdv++;
      }
    });
    const u0 = performance.now();
    const stats = new Map<string, PolicyUpdateStats>();
    const updatedNow = new Set<string>();
    for (const set of this.sets) {
      const due = m.agentUpdate === 'everyStep' ? set.buffer.length > 0 : set.buffer.length >= m.trainBatch;
      if (!due) continue;
      const opts = configuredUpdate(cfg, this.streams.minibatch, this.step);
      opts.miniBatches = Math.max(cfg.rl.miniBatches, Math.ceil(set.buffer.length / m.trainBatch));
      if (set.ref) opts.reference = set.ref;
      stats.set(set.id, await policyUpdate(set.model, set.opt, set.buffer, opts));
      set.buffer = [];
      set.updates++;
      updatedNow.add(set.id);
    }
    const updateMs = performance.now() - u0;
    this.step++;

    const nodes = trees.flatMap((t) => nonRootNodes(t));
    const tm = trees.map((t) => treeMetrics(t));
    const metrics: Record<string, number> = {
      reward: mean(nodes.map((n) => n.publicScore)),
      privatePass: mean(nodes.map((n) => n.privateScore ?? 0)),
      validPrograms: mean(nodes.map((n) => (n.program === null ? 0 : 1))),
      treePass1: mean(tm.map((x) => x.pass1)),
      treePassN: mean(tm.map((x) => x.passN)),
      treesSolvedPublic: mean(trees.map((t) => (nonRootNodes(t).some((n) => n.publicScore === 1) ? 1 : 0))),
      meanDepth: mean(nodes.map((n) => n.depth)),
      maxDepth: Math.max(0, ...nodes.map((n) => n.depth)),
      refineShare: mean(nodes.map((n) => (n.depth > 1 ? 1 : 0))),
      refineGain: mean(
        nodes
          .filter((n) => n.depth > 1)
          .map((n) => n.publicScore - trees.find((t) => t.nodes.includes(n))!.nodes[n.parentId!]!.publicScore),
      ),
      programTokens: mean(nodes.map((n) => n.payload!.outputTokens.length)),
      zeroAdvantageShare: routed ? zeroAdv / routed : 1,
      droppedTrees: dropped,
      samples: routed,
      'timing.selectionMs': grown.timing.selectionMs,
      'timing.generationMs': grown.timing.generationMs,
      'timing.testMs': grown.timing.testMs,
      'timing.updateMs': updateMs,
      // building and handing over the live trees (writing live.json), included in the step's time
      'timing.liveMs': liveMs,
      generateCalls: grown.timing.generateCalls,
      rounds: grown.timing.rounds,
    };
    for (const a of team) {
      const mine = nodes.filter((n) => n.agentId === a.id);
      metrics[`agentShare.${a.id}`] = nodes.length ? mine.length / nodes.length : 0;
      metrics[`agentReward.${a.id}`] = mean(mine.map((n) => n.publicScore));
    }
    for (const set of this.sets) {
      const st = stats.get(set.id);
      const key = this.sets.length > 1 ? `.${set.id}` : '';
      metrics[`agentStep${key}`] = set.updates;
      metrics[`buffered${key}`] = set.buffer.length;
      if (st) {
        Object.assign(metrics, {
          [`loss${key}`]: st.total,
          [`clipFraction${key}`]: st.clipFraction,
          [`gradNorm${key}`]: st.gradNorm,
          [`lr${key}`]: st.lr,
          [`optimizerSteps${key}`]: st.optimizerSteps,
        });
      }
    }
    const trajectories = trees.map((t, i) =>
      treeRecord(t, picked[i]!, team, {
        advantages: advByTree[i],
        trained: (id) =>
          routedNodes[i]!.has(id) ? (updatedNow.has(paramOf.get(t.nodes[id]!.agentId!)!) ? true : 'buffered') : false,
      }),
    );
    const tokens = nodes.reduce((s, n) => s + n.payload!.promptTokens.length + n.payload!.outputTokens.length, 0);
    return { metrics, trajectories, tokens };
  }

  evaluate(): Promise<EvalResult> {
    const tp = this.cfg.marti.tplus;
    return evaluateMarti(this.cfg, this.models, {
      tplus: tp.enabled && (tp.when === 'everyEval' || this.step >= this.cfg.budget.steps),
    });
  }

  async snapshot(): Promise<TrainerSnapshot> {
    const fmt = martiFormat();
    const files: Record<string, string | Uint8Array> = {
      [TOKENIZER_FILE]: JSON.stringify(fmt.tokenizer.toJSON()) + '\n',
    };
    for (const set of this.sets.slice(1)) {
      files[agentFile(set.id)] = await encodeModelWeights(set.model);
      files[agentConfigFile(set.id)] = JSON.stringify(toHfConfigJson(set.model.config), null, 2) + '\n';
      const o = await set.opt.exportState();
      files[agentOptFile(set.id)] = encodeSafetensors(o.tensors, { step: String(o.step) });
    }
    const main = this.sets[0]!;
    return {
      model: main.model,
      optimizer: await main.opt.exportState(),
      state: {
        step: this.step,
        rng: saveStreams(this.streams),
        // samples waiting for a full buffer (§3.7 whenFull) and each set's update count, so resume is exact
        paramSets: this.sets.map((s) => ({ id: s.id, updates: s.updates, buffer: s.buffer })),
      },
      files,
    };
  }

  dispose(): void {
    for (const s of this.sets) {
      s.model.dispose();
      s.opt.dispose();
      s.ref?.dispose();
    }
  }
}

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
  for (const [id, model] of models) {
    if (model.config.vocab_size !== fmt.tokenizer.vocabSize) {
      throw new UserError(
        `parameter set ${id}: this checkpoint's vocab_size is ${model.config.vocab_size}, but MARTI needs ${fmt.tokenizer.vocabSize}: evaluate MARTI checkpoints`,
      );
    }
  }
  const tasks = heldoutTasks(cfg);
  const team = teamOf(cfg);
  const ids = team.map((a) => a.id);
  const root = new Rng(cfg.task.taskSeed).split('marti-eval');
  const base = {
    tasks,
    agents: team,
    models,
    rewardMode: cfg.task.rewardMode,
    maxNewTokens: cfg.task.maxProgramTokens,
    topP: cfg.sampler.topP,
  };
  const treeIds = (mode: string) => tasks.map((t) => `${mode}-${t.id}`);
  const metrics: Record<string, number> = {};
  const timing: GrowTiming[] = [];

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
  diversityMetrics('div.', search.trees, tasks, ids, metrics);

  let tplusTrees: MartiTree[] = [];
  const tp = cfg.marti.tplus;
  if (opts.tplus ?? tp.enabled) {
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
    tplusTrees = plus.trees;
    // §3.10: the final answer is the node with the best public score (newest on ties); report its private score
    metrics['tplus.pass1'] = mean(plus.trees.map((t) => chooseFinal(t, { by: 'publicScore' })?.privateScore ?? 0));
    metrics['tplus.bestOfTree'] = mean(plus.trees.map((t) => treeMetrics(t).passN));
    diversityMetrics('tplus.div.', plus.trees, tasks, ids, metrics);
  }

  const items = tasks.map((task, i) => {
    const n = nonRootNodes(one.trees[i]!)[0]!;
    const record = treeRecord(search.trees[i]!, task, team, { mode: 'eval' });
    return {
      id: task.id,
      correct: n.privateScore === 1,
      score: n.privateScore ?? 0,
      output: n.program ?? n.payload!.completion,
      target: task.target,
      record,
    };
  });
  return {
    result: { identity: martiEvalIdentity(cfg), metrics, items },
    trees: { pass1: one.trees, search: search.trees, tplus: tplusTrees },
    timing,
  };
}

export async function evaluateMarti(
  cfg: MartiConfig,
  models: ReadonlyMap<string, PolicyModel>,
  opts: { tplus?: boolean } = {},
): Promise<EvalResult> {
  return (await evaluateMartiDetailed(cfg, models, opts)).result;
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
    ...(cfg.task.file ? { taskFile: loadMartiTaskFile(cfg.task.file).sha } : {}),
  };
}

async function loadAgentModel(dir: string, id: string): Promise<LlamaModel> {
  const file = path.join(dir, agentFile(id));
  const cfgFile = path.join(dir, agentConfigFile(id));
  if (!fs.existsSync(file) || !fs.existsSync(cfgFile)) {
    throw new UserError(`${file} is missing: a checkpoint of a heterogeneous MARTI run carries every agent's weights`);
  }
  return loadModelWeights(file, parseLlamaConfig(JSON.parse(fs.readFileSync(cfgFile, 'utf8')), cfgFile));
}

/** A fresh MARTI trainer, or one continuing from a checkpoint (the class type, for tests that inspect its sets). */
export async function createMartiTrainer(cfg: MartiConfig, from?: CheckpointContents): Promise<MartiTrainer> {
  const pool = tasksOf(cfg, 'train', cfg.task.trainTasks);
  const root = new Rng(cfg.seed);
  const ids = paramIdsOf(cfg);
  const kl = cfg.rl.klCoef > 0;
  const sets: ParamSet[] = [];
  try {
    if (!from) {
      for (const [i, id] of ids.entries()) {
        const model = await initialParamModel(cfg, i, id, root);
        sets.push({
          id,
          model,
          opt: configuredAdam(cfg, model),
          ref: kl ? cloneModel(model, false) : null,
          buffer: [],
          updates: 0,
        });
      }
      const streams = Object.fromEntries(STREAMS.map((s) => [s, root.split(s)])) as unknown as Streams;
      return new MartiTrainer(cfg, pool, sets, streams, 0);
    }
    const state = from.trainerState as {
      step?: number;
      paramSets?: { id: string; updates: number; buffer: Sample[] }[];
    };
    if (!Number.isInteger(state?.step)) {
      throw new UserError('trainer_state.json: step is missing; the checkpoint cannot be resumed');
    }
    if (!from.optimizer) {
      throw new UserError('optimizer.safetensors is missing; the checkpoint cannot be resumed exactly');
    }
    for (const [i, id] of ids.entries()) {
      const model = i === 0 ? from.model : await loadAgentModel(from.dir, id);
      const opt = configuredAdam(cfg, model);
      if (i === 0) opt.importState(from.optimizer);
      else {
        const file = path.join(from.dir, agentOptFile(id));
        if (!fs.existsSync(file)) throw new UserError(`${file} is missing; the checkpoint cannot be resumed exactly`);
        const decoded = await readSafetensorsFile(file);
        opt.importState({
          step: Number(decoded.metadata.step),
          tensors: Object.fromEntries(
            Object.entries(decoded.tensors).map(([k, t]) => [k, { shape: t.shape, data: t.data as Float32Array }]),
          ),
        });
      }
      // the KL reference is the set's initial weights, rebuilt exactly as a fresh run builds them
      const ref = kl ? await initialParamModel(cfg, i, id, root) : null;
      const saved = state.paramSets?.find((p) => p.id === id);
      sets.push({ id, model, opt, ref, buffer: saved?.buffer ?? [], updates: saved?.updates ?? 0 });
    }
    return new MartiTrainer(cfg, pool, sets, restoreStreams(state, STREAMS), state.step!);
  } catch (err) {
    for (const s of sets) {
      if (s.model !== from?.model) s.model.dispose();
      s.opt.dispose();
      s.ref?.dispose();
    }
    throw err;
  }
}

export type { MartiTrainer };

export const marti: Algorithm<MartiConfig> = {
  name: 'marti',
  createTrainer: createMartiTrainer,
  evalIdentity: martiEvalIdentity,
  async evaluate(cfg, model, checkpointDir) {
    const ids = paramIdsOf(cfg);
    const models = new Map<string, LlamaModel>([[ids[0]!, model]]);
    const extra: LlamaModel[] = [];
    try {
      for (const id of ids.slice(1)) {
        // a base checkpoint (from `pretrain`) has one model: every agent then starts from it
        const has = checkpointDir && fs.existsSync(path.join(checkpointDir, agentFile(id)));
        if (has) extra.push(await loadAgentModel(checkpointDir, id));
        models.set(id, has ? extra.at(-1)! : model);
      }
      return await evaluateMarti(cfg, models);
    } finally {
      for (const m of extra) m.dispose();
    }
  },
  initialModel(cfg, rng) {
    return configuredInitialModel(cfg, martiFormat().tokenizer.vocabSize, {}, rng, 'the MARTI vocabulary');
  },
  checkpointFiles() {
    return { [TOKENIZER_FILE]: JSON.stringify(martiFormat().tokenizer.toJSON()) + '\n' };
  },
  pretrainBatch(cfg, rng, size) {
    // Issue 5 "Base model": random well-formed programs (training side only) with statements and test outputs, in
    // the search's own prompt layouts, each with one of the team's role prompts; the loss covers the program and EOS.
    const fmt = martiFormat();
    const team = teamOf(cfg);
    const spec = { ...taskSpec(cfg), minOps: 1, rejectDegenerate: false };
    return Array.from({ length: size }, () => {
      const rolePrompt = team[rng.int(team.length)]!.rolePrompt;
      const ex = pretrainCorpus(rng.nextUint32(), 1, {
        refineShare: cfg.marti.pretrainRefineShare,
        noisyParents: cfg.marti.pretrainNoisyParents,
        feedback: cfg.task.feedback,
        rolePrompt,
        spec,
      })[0]!;
      const prompt = fmt.prompt(ex.prompt);
      const completion = fmt.completion(ex.completion);
      return { tokens: [...prompt, ...completion], lossMask: [...prompt.map(() => 0), ...completion.map(() => 1)] };
    });
  },
};
