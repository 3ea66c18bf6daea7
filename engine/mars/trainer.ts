/**
 * The MARS trainer (docs/algorithms.md §2.8): questions from training worlds, G dual-system rollouts each, two advantage
 * pools, balanced System 1 samples, one clipped-loss update (or two, with separate System 1 parameters). What it shares
 * with evaluation lives beside it: the worlds and question sets (questionSets.ts), the rollout settings, episode
 * statistics and records (episodes.ts), the held-out evaluation (evaluate.ts).
 */
import { encodeSafetensors } from '../model/formats/safetensors';
import { encodeModelWeights } from '../model/formats/checkpoint';
import { TOKENIZER_FILE } from '../model/formats/checkpointFiles';
import { cloneModel } from '../model/formats/hfWeights';
import type { LlamaModel } from '../model/llama';
import { Rng } from '../random/prng';
import type { Adam } from '../rl/adam';
import { policyUpdate, updateMetrics, type PolicyUpdateStats } from '../rl/policyUpdate';
import {
  configuredAdam,
  configuredInitialModel,
  configuredUpdate,
  restoreStreams,
  saveStreams,
} from '../training/configuredTraining';
import { readOptimizerFile, resumePoint } from '../training/resumeChecks';
import type { Sample } from '../rl/sample';
import type { Algorithm, EvalResult, StepOutput, Trainer, TrainerSnapshot } from '../training/trainer';
import type { MarsEpisodeRecord } from '../records/mars';
import { UserError } from '../base/userError';
import path from 'node:path';
import type { MarsConfig } from './configSchema';
import { episodeStats, rolloutSettings, trajectoryRecord } from './episodes';
import { evaluateMars, evaluateMarsCheckpoint, marsEvalIdentity } from './evaluate';
import { questionBatch } from './marsBatch';
import { evalQuestions, marsFormat, trainQuestions, trainWorldEnvs } from './questionSets';
import { emptyRolloutTiming, rolloutBatch, type RolloutQuestion } from './rollout';
import { SYS1_OPTIMIZER, SYS1_WEIGHTS, sys1FromCheckpoint } from './sys1Checkpoint';
import { pretrainExamples } from './pretrainData';
import { sys1Metrics, sys1Stats } from './sys1Measures';

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
    if (mode === 'off' || mode === 'oracle') return null;
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
    if (st) Object.assign(metrics, updateMetrics(st));
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
    const { state, optimizer } = resumePoint(from);
    const opt = configuredAdam(cfg, from.model);
    opt.importState(optimizer);
    let sys1: { model: LlamaModel; opt: Adam | null } | null = null;
    if (mode === 'separate' || mode === 'frozen') {
      const model = await sys1FromCheckpoint(from.dir, from.model.config);
      sys1 = { model, opt: null };
      if (mode === 'separate') {
        const saved = await readOptimizerFile(path.join(from.dir, SYS1_OPTIMIZER));
        sys1.opt = configuredAdam(cfg, model);
        sys1.opt.importState(saved);
      }
    }
    const streams = restoreStreams(state, ['tokens', 'questions', 'balance', 'minibatch'] as const);
    return new MarsTrainer(cfg, questions, from.model, opt, sys1, streams, state.step, reference);
  },
  evalIdentity: marsEvalIdentity,
  evaluate: evaluateMarsCheckpoint,
  initialModel(cfg, rng) {
    return initialModel(cfg, rng);
  },
  checkpointFiles() {
    return { [TOKENIZER_FILE]: JSON.stringify(marsFormat().tokenizer.toJSON()) + '\n' };
  },
  pretrainBatch(cfg, rng, size) {
    return pretrainExamples(trainWorldEnvs(cfg), cfg.task, cfg.mars, marsFormat(), rng, size);
  },
};
