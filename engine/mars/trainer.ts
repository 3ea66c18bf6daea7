/**
 * The MARS trainer (docs/algorithms.md §2.8): questions from training worlds, G dual-system rollouts each, two advantage
 * pools, balanced System 1 samples, one clipped-loss update (or two, with separate System 1 parameters).
 */
import { encodeSafetensors, readSafetensorsFile } from '../model/formats/safetensors';
import { encodeModelWeights, loadModelWeights } from '../model/formats/checkpoint';
import { TOKENIZER_FILE } from '../model/formats/checkpointFiles';
import type { LlamaConfig } from '../model/config';
import { cloneModel } from '../model/formats/hfWeights';
import type { PolicyModel } from '../policy/endpointPolicy';
import type { LlamaModel } from '../model/llama';
import { Rng } from '../random/prng';
import type { Adam } from '../rl/adam';
import { policyUpdate, type PolicyUpdateStats } from '../rl/policyUpdate';
import {
  configuredAdam,
  configuredInitialModel,
  configuredUpdate,
  restoreStreams,
  saveStreams,
} from '../training/configuredTraining';
import type { Sample } from '../rl/sample';
import type { Algorithm, EvalResult, StepOutput, Trainer, TrainerSnapshot } from '../training/trainer';
import type { MarsEpisodeRecord } from '../records/mars';
import { RECORD_VERSION } from '../records/version';
import { UserError } from '../base/userError';
import fs from 'node:fs';
import path from 'node:path';
import type { MarsConfig } from './configSchema';
import { MarsFormat, marsTokenizer } from './format';
import { questionBatch } from './marsBatch';
import {
  emptyRolloutTiming,
  rolloutBatch,
  type MarsRolloutSettings,
  type RolloutQuestion,
  type Trajectory,
} from './rollout';
import { marsVocabulary, generateWorld, type World } from './world';
import { SearchIndex } from './search';
import { evalWorldSeeds, trainWorldSeeds } from './worldSplits';
import { QUESTION_FAMILIES, SINGLE_HOP_FAMILIES } from './questions';
import { pretrainExamples } from './pretrainData';
import { supportSentences, sys1Metrics, sys1Stats } from './sys1Measures';

const SYS1_WEIGHTS = 'sys1.safetensors';
const SYS1_OPTIMIZER = 'sys1_optimizer.safetensors';

let cachedFormat: MarsFormat | null = null;
/** One tokenizer for every world: the vocabulary does not depend on the seed. */
export function marsFormat(): MarsFormat {
  return (cachedFormat ??= new MarsFormat(marsTokenizer(marsVocabulary())));
}

interface WorldEnv {
  world: World;
  index: SearchIndex;
}

const worldCache = new Map<string, WorldEnv>();
function worldEnv(seed: number, spec: MarsConfig['task']['world']): WorldEnv {
  const key = `${seed}:${JSON.stringify(spec)}`;
  let env = worldCache.get(key);
  if (!env) {
    const world = generateWorld(seed, spec);
    env = { world, index: new SearchIndex(world.pages) };
    worldCache.set(key, env);
  }
  return env;
}

function questionsOf(envs: WorldEnv[], families: readonly string[]): RolloutQuestion[] {
  return envs.flatMap(({ world, index }) => {
    const pagesById = new Map(world.pages.map((p) => [p.id, p]));
    const names = new Map(world.entities.map((e) => [e.id, e.name]));
    return world.questions
      .filter((q) => families.includes(q.family))
      .map((q) => ({
        id: `w${world.seed}:${q.id}`,
        family: q.family,
        text: q.text,
        answers: q.answers,
        env: { search: (query: string, k: number) => index.search(query, k).map((p) => ({ id: p.id, text: p.text })) },
        supportSentences: supportSentences(q, pagesById, names).filter((x): x is string => x !== null),
      }));
  });
}

function trainQuestions(cfg: MarsConfig): RolloutQuestion[] {
  return questionsOf(
    trainWorldSeeds(cfg.task.worldSeed, cfg.task.trainWorlds).map((s) => worldEnv(s, cfg.task.world)),
    cfg.task.families,
  );
}

/**
 * The fixed evaluation set: exactly eval.items questions of the held-out worlds, round-robin over families so every
 * family is represented (deterministic). Fewer held-out questions than eval.items is an error naming both fields,
 * never a smaller evaluation under the same identity.
 */
export function evalQuestions(cfg: MarsConfig): RolloutQuestion[] {
  const all = questionsOf(
    evalWorldSeeds(cfg.task.worldSeed, cfg.task.evalWorlds).map((s) => worldEnv(s, cfg.task.world)),
    cfg.task.families,
  );
  const want = cfg.eval.items;
  if (all.length < want) {
    throw new UserError(
      `eval.items: ${want} held-out questions asked, but the ${cfg.task.evalWorlds} held-out world(s) of task.evalWorlds have ${all.length} questions of the families ${cfg.task.families.join(', ')}; set eval.items to at most ${all.length}, or raise task.evalWorlds`,
    );
  }
  const byFamily = cfg.task.families.map((f) => all.filter((q) => q.family === f));
  const out: RolloutQuestion[] = [];
  for (let i = 0; out.length < want && byFamily.some((qs) => i < qs.length); i++) {
    for (const qs of byFamily) if (i < qs.length && out.length < want) out.push(qs[i]!);
  }
  return out;
}

export function rolloutSettings(cfg: MarsConfig, temperature = cfg.sampler.temperature): MarsRolloutSettings {
  const m = cfg.mars;
  return {
    maxTurns: m.maxTurns,
    topK: m.topK,
    sys1PromptMax: m.sys1PromptMax,
    sys1ResponseMax: m.sys1ResponseMax,
    sys2PromptMax: m.sys2PromptMax,
    sys2ResponseMax: m.sys2ResponseMax,
    sys2TurnMax: m.sys2TurnMax,
    purposeMax: m.purposeMax,
    sepCost: m.sepCost,
    rawInfoBudget: m.rawInfoBudget,
    packing: m.packing,
    sys1: m.sys1Params === 'off' ? 'off' : 'on',
    missingPurpose: m.missingPurpose,
    temperature,
    topP: cfg.sampler.topP,
  };
}

/** Positions a MARS rollout can reach: System 2's whole trajectory or one System 1 window and its answer. */
function maxPositions(cfg: MarsConfig): number {
  const m = cfg.mars;
  return Math.max(1024, m.sys2PromptMax + m.sys2ResponseMax + m.sys2TurnMax, m.sys1PromptMax + m.sys1ResponseMax);
}

function initialModel(cfg: MarsConfig, rng: Rng): Promise<LlamaModel> {
  return configuredInitialModel(
    cfg,
    marsFormat().tokenizer.vocabSize,
    { max_position_embeddings: maxPositions(cfg) },
    rng,
    'the MARS vocabulary',
  );
}

interface Streams {
  tokens: Rng;
  questions: Rng;
  balance: Rng;
  minibatch: Rng;
}

const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** Per-episode statistics shared by training metrics and evaluation. */
function episodeStats(trajs: Trajectory[]) {
  const searches = trajs.map((t) => t.turns.filter((u) => u.query !== null).length);
  const calls = trajs.flatMap((t) => t.turns.filter((u) => u.results.length > 0).map((u) => u.sys1.length));
  return {
    reward: mean(trajs.map((t) => t.reward)),
    f1: mean(trajs.map((t) => t.f1)),
    answered: mean(trajs.map((t) => (t.end === 'answer' ? 1 : 0))),
    malformedTurns: mean(trajs.map((t) => t.turns.filter((u) => u.query === null && u.answer === null).length)),
    overflow: mean(trajs.map((t) => (t.end === 'overflow' ? 1 : 0))),
    searchesPerQuestion: mean(searches),
    sys1CallsPerSearch: mean(calls),
    sys2Tokens: mean(trajs.map((t) => t.lossMask.reduce((a, b) => a + b, 0))),
    sys1Tokens: mean(
      trajs.map((t) => t.turns.reduce((s, u) => s + u.sys1.reduce((a, c) => a + c.output.length, 0), 0)),
    ),
  };
}

function trajectoryRecord(
  t: Trajectory,
  format: MarsFormat,
  a2: number,
  a1: number[],
  kept: number[],
): MarsEpisodeRecord {
  const tokenTexts = (ids: readonly number[]) => ids.map((id) => format.decode([id]));
  let j = 0;
  return {
    kind: 'mars.episode',
    version: RECORD_VERSION,
    questionId: t.question.id,
    family: t.question.family,
    question: t.question.text,
    gold: t.question.answers,
    turns: t.turns.map((u) => ({
      text: format.decode(u.tokens),
      // per generated token: its text and its log-probability under the behaviour policy (the inspector's token view)
      tokens: tokenTexts(u.tokens),
      logProbs: u.logProbs,
      query: u.query,
      purpose: u.purpose,
      results: u.results,
      capacity: u.capacity,
      bins: u.sys1.map((c) => {
        const rec = {
          pages: c.pages,
          used: c.used,
          output: format.decode(c.output),
          outputTokens: tokenTexts(c.output),
          outputLogProbs: c.logProbs,
          advantage: a1[j],
          kept: kept[j],
        };
        j++;
        return rec;
      }),
      info: format.decode(u.info),
    })),
    answer: t.answer,
    end: t.end,
    reward: t.reward,
    f1: t.f1,
    advantage: a2,
  };
}

/**
 * Which parameter set trains on which samples (§2.1, §6.1–6.3): 'shared' trains one policy on both systems' samples;
 * 'separate' trains θ2 on System 2 samples and θ1 on System 1 samples only; 'frozen', 'sharedUntrained' and 'off'
 * train the policy on System 2 samples and drop System 1's.
 */
export function routeSamples(
  mode: MarsConfig['mars']['sys1Params'],
  sys2: Sample[],
  sys1: Sample[],
): { policy: Sample[]; sys1Model: Sample[] } {
  switch (mode) {
    case 'shared':
      return { policy: [...sys2, ...sys1], sys1Model: [] };
    case 'separate':
      return { policy: sys2, sys1Model: sys1 };
    default:
      return { policy: sys2, sys1Model: [] };
  }
}

class MarsTrainer implements Trainer {
  constructor(
    private readonly cfg: MarsConfig,
    private readonly questions: RolloutQuestion[],
    private readonly policy: LlamaModel,
    private readonly opt: Adam,
    private readonly sys1: { model: LlamaModel; opt: Adam | null } | null,
    private readonly streams: Streams,
    public step: number,
    /** The KL reference (the run's initial weights, which a separate System 1 also starts from), only when rl.klCoef > 0. */
    private readonly reference: LlamaModel | null = null,
  ) {}

  private get sys1Model(): LlamaModel | null {
    const mode = this.cfg.mars.sys1Params;
    if (mode === 'off') return null;
    return this.sys1?.model ?? this.policy;
  }

  async trainStep(): Promise<StepOutput> {
    const { cfg } = this;
    const format = marsFormat();
    const G = cfg.task.groupSize;
    const picked = Array.from(
      { length: cfg.task.questionsPerStep },
      () => this.questions[this.streams.questions.int(this.questions.length)]!,
    );
    const phases = emptyRolloutTiming();
    const t0 = performance.now();
    const trajs = await rolloutBatch(
      { sys2: this.policy, sys1: this.sys1Model },
      format,
      picked.flatMap((q) => Array.from({ length: G }, () => q)),
      rolloutSettings(cfg),
      this.streams.tokens,
      phases,
    );
    const t1 = performance.now();
    const sys2: Sample[] = [];
    const sys1: Sample[] = [];
    const records: MarsEpisodeRecord[] = [];
    let before = 0;
    let unique = 0;
    let zeroAdv = 0;
    let dropped = 0;
    picked.forEach((_, q) => {
      const group = trajs.slice(q * G, (q + 1) * G);
      const b = questionBatch(group, cfg.mars, cfg.rl.zscoreEps, this.streams.balance);
      group.forEach((t, k) => records.push(trajectoryRecord(t, format, b.a2[k]!, b.a1[k]!, b.kept[k]!)));
      if (cfg.mars.dropZeroAdvGroups && b.a2.every((a) => a === 0)) {
        dropped++;
        return;
      }
      sys2.push(...b.sys2);
      sys1.push(...b.sys1);
      before += b.sys1Before;
      unique += b.kept.flat().filter((n) => n > 0).length;
      zeroAdv += b.a2.filter((a) => a === 0).length;
    });
    const routed = routeSamples(cfg.mars.sys1Params, sys2, sys1);
    const upd = (model: LlamaModel, opt: Adam, samples: Sample[]) => {
      const opts = configuredUpdate(cfg, this.streams.minibatch, this.step);
      if (this.reference) opts.reference = this.reference;
      return policyUpdate(model, opt, samples, opts);
    };
    let st: PolicyUpdateStats | null = null;
    let st1: PolicyUpdateStats | null = null;
    if (routed.policy.length) st = await upd(this.policy, this.opt, routed.policy);
    if (routed.sys1Model.length) st1 = await upd(this.sys1!.model, this.sys1!.opt!, routed.sys1Model);
    const t2 = performance.now();
    this.step++;
    const e = episodeStats(trajs);
    const metrics: Record<string, number> = {
      ...e,
      ...sys1Metrics(sys1Stats(trajs, (id) => format.decode([id]))),
      sys1SamplesBeforeBalance: before / picked.length,
      sys1DuplicateRatio: sys1.length ? 1 - unique / sys1.length : 0,
      zeroAdvantageShare: sys2.length ? zeroAdv / sys2.length : 1,
      droppedQuestions: dropped,
      sys2Samples: sys2.length,
      sys1Samples: routed.policy.length + routed.sys1Model.length - sys2.length,
      // wall-clock time of the step's phases (the only non-deterministic fields besides `time`)
      'timing.rolloutMs': t1 - t0,
      'timing.sys2GenerationMs': phases.sys2GenerationMs,
      'timing.searchMs': phases.searchMs,
      'timing.packingMs': phases.packingMs,
      'timing.sys1GenerationMs': phases.sys1GenerationMs,
      'timing.updateMs': t2 - t1,
    };
    if (st) {
      Object.assign(
        metrics,
        { loss: st.total, clipFraction: st.clipFraction, gradNorm: st.gradNorm, lr: st.lr },
        st.kl === null ? {} : { kl: st.kl },
      );
    }
    if (st1) {
      Object.assign(
        metrics,
        { sys1Loss: st1.total, sys1GradNorm: st1.gradNorm },
        st1.kl === null ? {} : { sys1Kl: st1.kl },
      );
    }
    return { metrics, trajectories: records, tokens: [...sys2, ...sys1].reduce((s, x) => s + x.tokens.length, 0) };
  }

  evaluate(): Promise<EvalResult> {
    return evaluateMars(this.cfg, this.policy, this.sys1Model);
  }

  async snapshot(): Promise<TrainerSnapshot> {
    const files: Record<string, string | Uint8Array> = {
      [TOKENIZER_FILE]: JSON.stringify(marsFormat().tokenizer.toJSON()) + '\n',
    };
    if (this.sys1) {
      files[SYS1_WEIGHTS] = await encodeModelWeights(this.sys1.model);
      if (this.sys1.opt) {
        const o = await this.sys1.opt.exportState();
        files[SYS1_OPTIMIZER] = encodeSafetensors(o.tensors, { step: String(o.step) });
      }
    }
    return {
      model: this.policy,
      optimizer: await this.opt.exportState(),
      state: {
        step: this.step,
        rng: saveStreams(this.streams),
      },
      files,
    };
  }

  dispose(): void {
    this.policy.dispose();
    this.opt.dispose();
    this.sys1?.model.dispose();
    this.sys1?.opt?.dispose();
    this.reference?.dispose();
  }
}

/**
 * Held-out evaluation; each system's policy may be an endpoint, and a user's corpus may replace the generated worlds
 * with its own questions and format (engine/runs/evaluation/evaluateEndpoints.ts, engine/mars/corpus.ts).
 */
export async function evaluateMars(
  cfg: MarsConfig,
  policy: PolicyModel,
  sys1: PolicyModel | null,
  over: { format?: MarsFormat; questions?: RolloutQuestion[] } = {},
): Promise<EvalResult> {
  const format = over.format ?? marsFormat();
  if (policy.config.vocab_size !== format.tokenizer.vocabSize) {
    throw new UserError(
      `this checkpoint's vocab_size is ${policy.config.vocab_size}, but MARS needs ${format.tokenizer.vocabSize}: evaluate MARS checkpoints`,
    );
  }
  const qs = over.questions ?? evalQuestions(cfg);
  const trajs = await rolloutBatch(
    { sys2: policy, sys1 },
    format,
    qs,
    rolloutSettings(cfg, cfg.eval.temperature),
    new Rng(cfg.task.worldSeed).split('eval-tokens'),
  );
  const e = episodeStats(trajs);
  const metrics: Record<string, number> = {
    exactMatch: e.reward,
    f1: e.f1,
    answered: e.answered,
    searchesPerQuestion: e.searchesPerQuestion,
    sys1CallsPerSearch: e.sys1CallsPerSearch,
    sys2TokensPerQuestion: e.sys2Tokens,
    sys1TokensPerQuestion: e.sys1Tokens,
  };
  const byKind = (pred: (f: string) => boolean) => trajs.filter((t) => pred(t.question.family));
  const single = byKind((f) => (SINGLE_HOP_FAMILIES as readonly string[]).includes(f));
  const multi = byKind((f) => !(SINGLE_HOP_FAMILIES as readonly string[]).includes(f));
  Object.assign(metrics, sys1Metrics(sys1Stats(trajs, (id) => format.decode([id]))));
  if (cfg.mars.evalPurposeStripped && sys1 !== null) {
    // The purpose-stripped ablation: the same questions, System 1 prompted without System 2's purpose.
    const stripped = await rolloutBatch(
      { sys2: policy, sys1 },
      format,
      qs,
      { ...rolloutSettings(cfg, cfg.eval.temperature), stripPurpose: true },
      new Rng(cfg.task.worldSeed).split('eval-tokens'),
    );
    metrics['purposeStripped.exactMatch'] = mean(stripped.map((t) => t.reward));
    Object.assign(
      metrics,
      sys1Metrics(
        sys1Stats(stripped, (id) => format.decode([id])),
        'purposeStripped.',
      ),
    );
  }
  if (single.length) metrics.singleHopExactMatch = mean(single.map((t) => t.reward));
  if (multi.length) metrics.multiHopExactMatch = mean(multi.map((t) => t.reward));
  for (const f of QUESTION_FAMILIES) {
    const ts = byKind((x) => x === f);
    if (!ts.length) continue;
    metrics[`exactMatch.${f}`] = mean(ts.map((t) => t.reward));
    metrics[`f1.${f}`] = mean(ts.map((t) => t.f1));
  }
  return {
    identity: marsEvalIdentity(cfg),
    metrics,
    // evaluation has no groups: advantages are 0 and nothing is balanced
    items: trajs.map((t) => ({
      id: t.question.id,
      correct: t.reward === 1,
      score: t.f1,
      output: t.answer ?? '',
      target: t.question.answers[0],
      record: trajectoryRecord(t, format, 0, [], []),
    })),
  };
}

function marsEvalIdentity(cfg: MarsConfig): EvalResult['identity'] {
  const m = cfg.mars;
  return {
    algorithm: 'mars',
    split: 'heldout',
    worldSeed: cfg.task.worldSeed,
    evalWorlds: cfg.task.evalWorlds,
    world: JSON.stringify(cfg.task.world),
    families: cfg.task.families.join(','),
    items: cfg.eval.items,
    temperature: cfg.eval.temperature,
    rollout: JSON.stringify({
      maxTurns: m.maxTurns,
      topK: m.topK,
      sys1: m.sys1Params === 'off' ? 'off' : 'on',
      packing: m.packing,
      budgets: [
        m.sys1PromptMax,
        m.sys1ResponseMax,
        m.sys2PromptMax,
        m.sys2ResponseMax,
        m.sys2TurnMax,
        m.purposeMax,
        m.rawInfoBudget,
      ],
    }),
    // the ablation adds figures: a cached evaluation without them must not answer for one with them (left out when
    // off, so the identities of evaluations cached before the switch existed still match)
    ...(m.evalPurposeStripped ? { purposeStripped: true } : {}),
  };
}

/** The System 1 model a checkpoint of a 'separate' or 'frozen' run carries. */
async function sys1FromCheckpoint(dir: string, config: LlamaConfig): Promise<LlamaModel> {
  const file = path.join(dir, SYS1_WEIGHTS);
  if (!fs.existsSync(file)) {
    throw new UserError(
      `${file} is missing: a checkpoint of a run with separate or frozen System 1 parameters carries them`,
    );
  }
  return loadModelWeights(file, config);
}

export const mars: Algorithm<MarsConfig> = {
  name: 'mars',
  async createTrainer(cfg, from) {
    const questions = trainQuestions(cfg);
    if (questions.length === 0) {
      throw new UserError('task.families: the training worlds have no questions of these families');
    }
    evalQuestions(cfg); // a held-out set smaller than eval.items fails the run now, not at its first evaluation
    const root = new Rng(cfg.seed);
    const mode = cfg.mars.sys1Params;
    // rebuilt exactly as a fresh run builds its initial weights, so a resumed run's KL term is the uninterrupted one's
    const reference = cfg.rl.klCoef > 0 ? await initialModel(cfg, root.split('init')) : null;
    if (!from) {
      const policy = await initialModel(cfg, root.split('init'));
      const sys1 =
        mode === 'separate'
          ? { model: cloneModel(policy, true), opt: null as Adam | null }
          : mode === 'frozen'
            ? { model: cloneModel(policy, false), opt: null }
            : null;
      if (sys1 && mode === 'separate') sys1.opt = configuredAdam(cfg, sys1.model);
      const streams = {
        tokens: root.split('tokens'),
        questions: root.split('questions'),
        balance: root.split('balance'),
        minibatch: root.split('minibatch'),
      };
      return new MarsTrainer(cfg, questions, policy, configuredAdam(cfg, policy), sys1, streams, 0, reference);
    }
    const state = from.trainerState as { step?: number };
    if (!Number.isInteger(state?.step)) {
      throw new UserError('trainer_state.json: step is missing; the checkpoint cannot be resumed');
    }
    if (!from.optimizer) {
      throw new UserError('optimizer.safetensors is missing; the checkpoint cannot be resumed exactly');
    }
    const opt = configuredAdam(cfg, from.model);
    opt.importState(from.optimizer);
    let sys1: { model: LlamaModel; opt: Adam | null } | null = null;
    if (mode === 'separate' || mode === 'frozen') {
      const model = await sys1FromCheckpoint(from.dir, from.model.config);
      sys1 = { model, opt: null };
      if (mode === 'separate') {
        const file = path.join(from.dir, SYS1_OPTIMIZER);
        if (!fs.existsSync(file)) throw new UserError(`${file} is missing; the checkpoint cannot be resumed exactly`);
        const decoded = await readSafetensorsFile(file);
        sys1.opt = configuredAdam(cfg, model);
        sys1.opt.importState({
          step: Number(decoded.metadata.step),
          tensors: Object.fromEntries(
            Object.entries(decoded.tensors).map(([k, t]) => [k, { shape: t.shape, data: t.data as Float32Array }]),
          ),
        });
      }
    }
    const streams = restoreStreams(state, ['tokens', 'questions', 'balance', 'minibatch'] as const);
    return new MarsTrainer(cfg, questions, from.model, opt, sys1, streams, state.step!, reference);
  },
  evalIdentity: marsEvalIdentity,
  async evaluate(cfg, model, checkpointDir) {
    const mode = cfg.mars.sys1Params;
    if (mode === 'off') return evaluateMars(cfg, model, null);
    if ((mode === 'separate' || mode === 'frozen') && checkpointDir) {
      const sys1 = await sys1FromCheckpoint(checkpointDir, model.config);
      try {
        return await evaluateMars(cfg, model, sys1);
      } finally {
        sys1.dispose();
      }
    }
    return evaluateMars(cfg, model, model);
  },
  initialModel(cfg, rng) {
    return initialModel(cfg, rng);
  },
  checkpointFiles() {
    return { [TOKENIZER_FILE]: JSON.stringify(marsFormat().tokenizer.toJSON()) + '\n' };
  },
  pretrainBatch(cfg, rng, size) {
    const envs = trainWorldSeeds(cfg.task.worldSeed, cfg.task.trainWorlds).map((s) => worldEnv(s, cfg.task.world));
    return pretrainExamples(envs, cfg.task, cfg.mars, marsFormat(), rng, size);
  },
};
