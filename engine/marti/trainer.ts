/**
 * The MARTI-MARS² trainer (docs/algorithms.md §3.8): per step, one AB-MCTS-A tree per problem grown by the team
 * (rollout.ts: one generate() per parameter set per round), one GRPO group per tree (z-score over all its nodes),
 * samples routed to the parameter set of the agent that wrote them, per-set buffers, optimisers and frozen KL
 * references. Evaluation on held-out tasks (pass@1, best-of-tree, T+, the §3.11 diversity measures) is evaluate.ts;
 * the team is team.ts, the problems problems.ts, advantages and routing routing.ts, a tree's record treeRecord.ts.
 *
 * Parameter sets: `single` → one set 'policy' (first agent only); `homogeneous` → one set 'shared' for all agents;
 * `heterogeneous` → one set per agent, named by the agent id. The first set is the checkpoint's main model; the others
 * are extra files `agent-<id>.safetensors` (+ config and optimiser, checkpoint.ts), like MARS's separate System 1.
 */
import type { CheckpointContents } from '../model/formats/checkpoint';
import { TOKENIZER_FILE } from '../model/formats/checkpointFiles';
import { cloneModel } from '../model/formats/hfWeights';
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
import { addAgentFiles, hasAgentModel, importAgentOptimizer, loadAgentModel, resumeState } from './checkpoint';
import type { MartiConfig } from './configSchema';
import { evaluateMarti, martiEvalIdentity } from './evaluate';
import { martiFormat } from './format';
import { taskSpec, tasksOf } from './problems';
import { advantageOptions, routeSamples, stepRecords, type Routing } from './routing';
import { growTrees, type AgentSpec, type GrowResult, type MartiTree } from './rollout';
import { nonRootNodes } from './search/abmcts';
import { treeMetrics } from './search/metrics';
import { pretrainCorpus } from './tasks/corpus';
import type { MartiTask } from './tasks/generator';
import { paramIdsOf, searchConfig, teamOf } from './team';
import { treeRecord } from './treeRecord';

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

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

type StepNode = MartiTree['nodes'][number];

interface LiveView {
  onRound?: (trees: readonly MartiTree[]) => void;
  /** Time spent building and handing over the live trees so far. */
  ms: number;
}

/**
 * Live view: after each round, every tree as it stands (the nodes expanded so far, in expansion order), in the final
 * record's form without advantages; `budget` says how many nodes it will have.
 */
function liveView(
  hooks: StepHooks,
  picked: readonly MartiTask[],
  team: readonly AgentSpec[],
  budget: number,
): LiveView {
  const view: LiveView = { ms: 0 };
  if (hooks.live) {
    view.onRound = (trees: readonly MartiTree[]) => {
      const l0 = performance.now();
      hooks.live!(trees.map((t, i) => ({ ...treeRecord(t, picked[i]!, team), live: true, budget })));
      view.ms += performance.now() - l0;
    };
  }
  return view;
}

interface StepFacts {
  grown: GrowResult;
  nodes: readonly StepNode[];
  routing: Routing;
  updateMs: number;
  liveMs: number;
}

/** The step's search, reward and timing figures (agent and set figures follow them). */
function treeStepMetrics({ grown, nodes, routing, updateMs, liveMs }: StepFacts): Record<string, number> {
  const { trees } = grown;
  const tm = trees.map((t) => treeMetrics(t));
  return {
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
    // a program that never wrote its end token: cut by task.maxProgramTokens or the context (issue 33, item 4)
    truncatedShare: mean(nodes.map((n) => (n.payload!.finish === 'stop' ? 0 : 1))),
    zeroAdvantageShare: routing.routed ? routing.zeroAdv / routing.routed : 1,
    droppedTrees: routing.dropped,
    samples: routing.routed,
    'timing.selectionMs': grown.timing.selectionMs,
    'timing.generationMs': grown.timing.generationMs,
    'timing.testMs': grown.timing.testMs,
    'timing.updateMs': updateMs,
    // building and handing over the live trees (writing live.json), included in the step's time
    'timing.liveMs': liveMs,
    generateCalls: grown.timing.generateCalls,
    rounds: grown.timing.rounds,
  };
}

/** Each agent's share of the nodes and mean reward; each set's update count, buffer and update statistics. */
function teamStepMetrics(
  metrics: Record<string, number>,
  nodes: readonly StepNode[],
  team: readonly AgentSpec[],
  sets: readonly ParamSet[],
  stats: ReadonlyMap<string, PolicyUpdateStats>,
): void {
  for (const a of team) {
    const mine = nodes.filter((n) => n.agentId === a.id);
    metrics[`agentShare.${a.id}`] = nodes.length ? mine.length / nodes.length : 0;
    metrics[`agentReward.${a.id}`] = mean(mine.map((n) => n.publicScore));
  }
  for (const set of sets) {
    const st = stats.get(set.id);
    const key = sets.length > 1 ? `.${set.id}` : '';
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
    const team = teamOf(this.cfg);
    const picked = this.pickProblems();
    const live = liveView(hooks, picked, team, this.cfg.marti.nodesPerTree);
    const grown = await this.growStepTrees(picked, team, live.onRound);
    const { trees } = grown;
    const routing = routeSamples(trees, team, this.sets, advantageOptions(this.cfg));
    const u0 = performance.now();
    const { stats, updatedNow } = await this.updateDueSets();
    const updateMs = performance.now() - u0;
    this.step++;

    const nodes = trees.flatMap((t) => nonRootNodes(t));
    const metrics = treeStepMetrics({ grown, nodes, routing, updateMs, liveMs: live.ms });
    teamStepMetrics(metrics, nodes, team, this.sets, stats);
    const trajectories = stepRecords(trees, picked, team, routing, updatedNow);
    const tokens = nodes.reduce((s, n) => s + n.payload!.promptTokens.length + n.payload!.outputTokens.length, 0);
    return { metrics, trajectories, tokens };
  }

  /** The step's problems, drawn from the training pool with replacement. */
  private pickProblems(): MartiTask[] {
    return Array.from(
      { length: this.cfg.marti.problemsPerStep },
      () => this.pool[this.streams.problems.int(this.pool.length)]!,
    );
  }

  /** One tree per picked problem, grown by the team with the step's streams. */
  private growStepTrees(
    picked: readonly MartiTask[],
    team: readonly AgentSpec[],
    onRound: LiveView['onRound'],
  ): Promise<GrowResult> {
    const { cfg } = this;
    const m = cfg.marti;
    return growTrees(martiFormat(), {
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
  }

  /** §3.7: one policy update per set whose buffer is due (every step, or when full), in set order. */
  private async updateDueSets(): Promise<{ stats: Map<string, PolicyUpdateStats>; updatedNow: Set<string> }> {
    const { cfg } = this;
    const m = cfg.marti;
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
    return { stats, updatedNow };
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
    for (const set of this.sets.slice(1)) await addAgentFiles(files, set.id, set.model, set.opt);
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
    const { state, optimizer } = resumeState(from);
    for (const [i, id] of ids.entries()) {
      const model = i === 0 ? from.model : await loadAgentModel(from.dir, id);
      const opt = configuredAdam(cfg, model);
      if (i === 0) opt.importState(optimizer);
      else await importAgentOptimizer(from.dir, id, opt);
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
        const has = checkpointDir && hasAgentModel(checkpointDir, id);
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
