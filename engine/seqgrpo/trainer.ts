/**
 * `seqgrpo`: one policy learns a sequence transformation by GRPO alone (docs/algorithms.md §1: group z-score over the G
 * rollouts of one prompt, ppoToken or gspo loss, Adam). The engine's smallest complete algorithm: the newcomer's first
 * run, and the trainer the run layer's own tests drive.
 */
import type { Adam } from '../rl/adam';
import { groupZScore } from '../rl/advantages';
import { policyUpdate, updateMetrics } from '../rl/policyUpdate';
import type { Sample } from '../rl/sample';
import type { LlamaModel } from '../model/llama';
import { TOKENIZER_FILE } from '../model/formats/checkpointFiles';
import { generate } from '../model/sampler';
import { Rng } from '../random/prng';
import type { Algorithm, EvalResult, StepOutput, Trainer, TrainerSnapshot } from '../training/trainer';
import type { SeqgrpoGroupRecord } from '../records/seqgrpo';
import { RECORD_VERSION } from '../records/version';
import type { SeqGrpoConfig } from './configSchema';
import {
  configuredAdam,
  configuredInitialModel,
  configuredUpdate,
  restoreStreams,
  saveStreams,
} from '../training/configuredTraining';
import { resumePoint } from '../training/resumeChecks';
import { UserError } from '../base/userError';
import { SeqTask, seqTokenizer, type SeqItem } from './task';

interface Streams {
  tokens: Rng;
  task: Rng;
  minibatch: Rng;
}

class SeqGrpoTrainer implements Trainer {
  step: number;

  constructor(
    private readonly cfg: SeqGrpoConfig,
    private readonly task: SeqTask,
    private readonly model: LlamaModel,
    private readonly optimizer: Adam,
    private readonly streams: Streams,
    step: number,
    /** The KL reference (the run's initial weights), present only when rl.klCoef > 0. */
    private readonly reference: LlamaModel | null,
  ) {
    this.step = step;
  }

  async trainStep(): Promise<StepOutput> {
    const { task, cfg } = this;
    const G = cfg.task.groupSize;
    const items: SeqItem[] = Array.from({ length: cfg.task.promptsPerStep }, () => task.sampleTrain(this.streams.task));
    const prompts = items.flatMap((it) => Array.from({ length: G }, () => task.prompt(it)));
    const t0 = performance.now();
    const gens = await generate(this.model, prompts, {
      maxNewTokens: cfg.task.length,
      temperature: cfg.sampler.temperature,
      topP: cfg.sampler.topP,
      rng: this.streams.tokens,
    });
    const samples: Sample[] = [];
    const trajectories: SeqgrpoGroupRecord[] = [];
    let rewardSum = 0;
    let exactSum = 0;
    let zeroAdv = 0;
    items.forEach((item, q) => {
      const group = gens.slice(q * G, (q + 1) * G);
      const rewards = group.map((g) => task.positionScore(item, g.tokens));
      const adv = groupZScore(rewards, { eps: cfg.rl.zscoreEps, singleton: cfg.rl.singleton, stdMode: cfg.rl.stdMode });
      group.forEach((g, k) => {
        const prompt = prompts[q * G + k]!;
        samples.push({
          role: 'node',
          groupId: `q${q}`,
          paramId: 'policy',
          tokens: [...prompt, ...g.tokens],
          lossMask: [...prompt.map(() => 0), ...g.tokens.map(() => 1)],
          behaviourLogProbs: [...prompt.map(() => 0), ...g.logProbs],
          reward: rewards[k]!,
          advantage: adv[k]!,
        });
        rewardSum += rewards[k]!;
        exactSum += rewards[k] === 1 ? 1 : 0;
        if (adv[k] === 0) zeroAdv++;
      });
      trajectories.push({
        kind: 'seqgrpo.group',
        version: RECORD_VERSION,
        input: task.describe(task.prompt(item)),
        target: item.target.map((v) => `s${v}`).join(' '),
        rollouts: group.map((g, k) => ({
          output: task.describe(g.tokens),
          reward: rewards[k]!,
          advantage: adv[k]!,
          logProbs: g.logProbs,
        })),
      });
    });
    const t1 = performance.now();
    const opts = configuredUpdate(cfg, this.streams.minibatch, this.step);
    if (this.reference) opts.reference = this.reference;
    const st = await policyUpdate(this.model, this.optimizer, samples, opts);
    const t2 = performance.now();
    this.step++;
    const n = samples.length;
    return {
      metrics: {
        reward: rewardSum / n,
        exact: exactSum / n,
        zeroAdvantageShare: zeroAdv / n,
        ...updateMetrics(st),
        // wall-clock time of the step's phases (the only non-deterministic fields besides `time`)
        'timing.rolloutMs': t1 - t0,
        'timing.updateMs': t2 - t1,
      },
      trajectories,
      tokens: samples.reduce((s, x) => s + x.tokens.length, 0),
    };
  }

  evaluate(): Promise<EvalResult> {
    return evaluateSeq(this.cfg, this.task, this.model);
  }

  async snapshot(): Promise<TrainerSnapshot> {
    return {
      model: this.model,
      optimizer: await this.optimizer.exportState(),
      state: {
        step: this.step,
        rng: saveStreams(this.streams),
      },
      files: seqgrpo.checkpointFiles(this.cfg),
    };
  }

  dispose(): void {
    this.model.dispose();
    this.reference?.dispose();
    this.optimizer.dispose();
  }
}

function evalIdentity(cfg: SeqGrpoConfig): EvalResult['identity'] {
  return {
    algorithm: 'seqgrpo',
    split: 'heldout',
    kind: cfg.task.kind,
    symbols: cfg.task.symbols,
    length: cfg.task.length,
    evalSeed: cfg.task.evalSeed,
    heldoutFraction: cfg.task.heldoutFraction,
    items: cfg.eval.items,
    temperature: cfg.eval.temperature,
    ...(cfg.eval.drawSeed ? { drawSeed: cfg.eval.drawSeed } : {}),
  };
}

async function evaluateSeq(cfg: SeqGrpoConfig, task: SeqTask, model: LlamaModel): Promise<EvalResult> {
  if (model.config.vocab_size !== task.tokenizer.vocabSize) {
    throw new UserError(
      `this checkpoint's vocab_size is ${model.config.vocab_size}, but the ${cfg.task.kind} task with ${cfg.task.symbols} symbols needs ${task.tokenizer.vocabSize}: evaluate checkpoints trained on the same task`,
    );
  }
  const items = task.evalItems(cfg.eval.items);
  const gens = await generate(
    model,
    items.map((it) => task.prompt(it)),
    {
      maxNewTokens: cfg.task.length,
      temperature: cfg.eval.temperature,
      rng: cfg.eval.drawSeed
        ? new Rng(cfg.task.evalSeed).split('eval-tokens').split(`draws-${cfg.eval.drawSeed}`)
        : new Rng(cfg.task.evalSeed).split('eval-tokens'),
    },
  );
  const outcomes = items.map((it, i) => {
    const out = gens[i]!.tokens;
    return {
      id: it.input.join(','),
      correct: task.exact(it, out),
      score: task.positionScore(it, out),
      output: task.describe(out),
      target: it.target.map((v) => `s${v}`).join(' '),
    };
  });
  const n = outcomes.length;
  return {
    identity: evalIdentity(cfg),
    metrics: {
      accuracy: outcomes.filter((o) => o.correct).length / n,
      positionAccuracy: outcomes.reduce((s, o) => s + o.score, 0) / n,
    },
    items: outcomes,
  };
}

/** The run's initial weights: random from the run seed's 'init' stream, or model.from (the KL reference is rebuilt the same way). */
function initialModel(cfg: SeqGrpoConfig, task: SeqTask): Promise<LlamaModel> {
  return configuredInitialModel(
    cfg,
    task.tokenizer.vocabSize,
    { max_position_embeddings: 64 },
    new Rng(cfg.seed).split('init'),
    `this task's vocabulary (${cfg.task.symbols} symbols)`,
  );
}

export const seqgrpo: Algorithm<SeqGrpoConfig> = {
  name: 'seqgrpo',
  async createTrainer(cfg, from) {
    const task = new SeqTask(cfg.task);
    const root = new Rng(cfg.seed);
    const reference = cfg.rl.klCoef > 0 ? await initialModel(cfg, task) : null;
    if (!from) {
      const model = await initialModel(cfg, task);
      // Training inputs come from task.trainSeed (the task's own stream); tokens and minibatches from the run seed.
      const streams = {
        tokens: root.split('tokens'),
        task: new Rng(cfg.task.trainSeed).split('train-items'),
        minibatch: root.split('minibatch'),
      };
      return new SeqGrpoTrainer(cfg, task, model, configuredAdam(cfg, model), streams, 0, reference);
    }
    try {
      const { state, optimizer: saved } = resumePoint(from);
      const optimizer = configuredAdam(cfg, from.model);
      optimizer.importState(saved);
      const streams = restoreStreams(state, ['tokens', 'task', 'minibatch'] as const);
      return new SeqGrpoTrainer(cfg, task, from.model, optimizer, streams, state.step, reference);
    } catch (err) {
      reference?.dispose();
      throw err;
    }
  },
  evalIdentity,
  initialModel(cfg, rng) {
    return configuredInitialModel(
      cfg,
      new SeqTask(cfg.task).tokenizer.vocabSize,
      { max_position_embeddings: 64 },
      rng,
      `this task's vocabulary (${cfg.task.symbols} symbols)`,
    );
  },
  checkpointFiles(cfg) {
    return { [TOKENIZER_FILE]: JSON.stringify(seqTokenizer(cfg.task.symbols).toJSON()) + '\n' };
  },
  pretrainBatch(cfg, rng, size) {
    // The base model learns another transformation (task.pretrainKind) on training inputs only; RL must then find
    // task.kind from it.
    const source = new SeqTask({ ...cfg.task, kind: cfg.task.pretrainKind });
    return Array.from({ length: size }, () => {
      const item = source.sampleTrain(rng);
      const prompt = source.prompt(item);
      const answer = source.prompt({ input: item.target, target: [] }).slice(1, -1);
      return { tokens: [...prompt, ...answer], lossMask: [...prompt.map(() => 0), ...answer.map(() => 1)] };
    });
  },
  evaluate(cfg, model) {
    return evaluateSeq(cfg, new SeqTask(cfg.task), model);
  },
};
