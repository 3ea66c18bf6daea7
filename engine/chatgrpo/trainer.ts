/**
 * `chatgrpo` (issue 30, item 7): a real pretrained model trained by GRPO on a verifiable text task. Questions go
 * through the model's own chat template with the generation prompt (raw "Question: … Answer:" text for a base model
 * without one); G replies a question are sampled with the KV cache until the template's end-of-turn token or
 * task.maxNewTokens, decoded by the model's tokenizer and scored from their text (task.ts); advantages are the group's
 * z-scores and the update is the shared policy update (docs/algorithms.md §1), over LoRA adapters (the base frozen) or
 * every weight.
 *
 * A checkpoint holds the base weights (model.safetensors, unchanged under LoRA), the adapters in PEFT's layout
 * (adapter_config.json + adapter_model.safetensors, which PEFT, vLLM and `mars-lab model merge` read), Adam's state
 * over whatever is trained, and the random streams and LoRA dropout counter, so a resumed run continues exactly.
 */
import { UserError } from '../base/userError';
import type { CheckpointContents } from '../model/formats/checkpoint';
import type { LlamaModel } from '../model/llama';
import { LoraAdapters } from '../model/lora/loraAdapters';
import { adaptersFromPeft, peftAdapterFiles, readPeftAdapter } from '../model/lora/peftAdapter';
import { chatParts, loadRealModel, loadRealTokenizer, realModelPath, type RealModel } from '../model/realModel';
import { generate, type Generation } from '../model/sampler';
import type { HfTokenizer } from '../model/tokenizers/hf/hfTokenizer';
import { Rng } from '../random/prng';
import type { SeqgrpoGroupRecord } from '../records/seqgrpo';
import { RECORD_VERSION } from '../records/version';
import type { Adam } from '../rl/adam';
import { groupZScore } from '../rl/advantages';
import { policyUpdate, updateMetrics } from '../rl/policyUpdate';
import type { Sample } from '../rl/sample';
import { configuredAdam, configuredUpdate, restoreStreams, saveStreams } from '../training/configuredTraining';
import { realModelMemoryPlan, type RealModelMemoryPlan } from '../training/memoryBudget';
import { modelHeaderConfig } from '../training/realModelHeader';
import { resumePoint } from '../training/resumeChecks';
import type { Algorithm, EvalResult, StepOutput, Trainer, TrainerSnapshot } from '../training/trainer';
import type { ChatGrpoConfig } from './configSchema';
import { ArithmeticTask, type ArithmeticItem } from './task';

interface Streams {
  tokens: Rng;
  task: Rng;
  minibatch: Rng;
}

function taskOf(cfg: ChatGrpoConfig): ArithmeticTask {
  return new ArithmeticTask({
    maxOperand: cfg.task.maxOperand,
    instruction: cfg.task.instruction,
    evalSeed: cfg.task.evalSeed,
    heldoutFraction: cfg.task.heldoutFraction,
  });
}

/** How a question reaches the model: through its chat template, or as raw text for a base model. */
class Prompter {
  constructor(
    readonly tokenizer: HfTokenizer,
    private readonly real: Pick<RealModel, 'encoder' | 'stopTokens'>,
  ) {}

  get stopTokens(): number[] {
    return this.real.stopTokens;
  }

  ids(question: string): number[] {
    if (this.real.encoder) return this.real.encoder.prompt([{ role: 'user', content: question }]).ids;
    return this.tokenizer.encodeForModel(`Question: ${question}\nAnswer:`);
  }

  /** A reply's text, as scored: its tokens without the end token it stopped on, and without special tokens. */
  reply(tokens: number[], finish: string): string {
    return this.tokenizer.decode(finish === 'stop' ? tokens.slice(0, -1) : tokens, { skipSpecial: true });
  }

  /** A reply as the model wrote it: every token, special ones (the end token it stopped on) as their text. */
  raw(tokens: number[]): string {
    return this.tokenizer.decode(tokens);
  }
}

/**
 * Rows sampled at once; larger batches go in chunks of this many rows, one after another, drawing from the same stream
 * (so a seed's replies depend on it: kept at 16 for runs made before). It was a memory bound, and the cause was not the
 * KV cache (decoding never grew the heap) but the prefill holding every layer's intermediates until it ended: 2.4 GB
 * for 16 prompts of SmolLM2-135M. Freed layer by layer now (model/llama.ts, issue 30), 64 prompts of 44 tokens peak
 * at +427 MiB of tensors with LoRA under MARS_LAB_NATIVE=0 and +319 MiB with the native kernels.
 */
export const SAMPLE_ROWS = 16;

async function sampleReplies(
  model: LlamaModel,
  prompter: Prompter,
  prompts: number[][],
  maxNewTokens: number,
  temperature: number,
  topP: number,
  rng: Rng,
): Promise<Generation[]> {
  const out: Generation[] = [];
  for (let i = 0; i < prompts.length; i += SAMPLE_ROWS) {
    const chunk = prompts.slice(i, i + SAMPLE_ROWS);
    out.push(
      ...(await generate(model, chunk, { maxNewTokens, temperature, topP, stopTokens: prompter.stopTokens, rng })),
    );
  }
  return out;
}

class ChatGrpoTrainer implements Trainer {
  step: number;

  constructor(
    private readonly cfg: ChatGrpoConfig,
    private readonly task: ArithmeticTask,
    private readonly model: LlamaModel,
    private readonly prompter: Prompter,
    private readonly optimizer: Adam,
    private readonly streams: Streams,
    step: number,
    /** The KL term's reference (rl.klCoef > 0): the base under LoRA, else a frozen copy of the base's weights. */
    private readonly reference: LlamaModel | 'adapters-off' | undefined,
  ) {
    this.step = step;
  }

  async trainStep(): Promise<StepOutput> {
    const { task, cfg, prompter } = this;
    const G = cfg.task.groupSize;
    const items = Array.from({ length: cfg.task.promptsPerStep }, () => task.sampleTrain(this.streams.task));
    const questionIds = items.map((it) => prompter.ids(task.question(it)));
    const prompts = questionIds.flatMap((ids) => Array.from({ length: G }, () => ids));
    const t0 = performance.now();
    const gens = await sampleReplies(
      this.model,
      prompter,
      prompts,
      cfg.task.maxNewTokens,
      cfg.sampler.temperature,
      cfg.sampler.topP,
      this.streams.tokens,
    );
    const samples: Sample[] = [];
    const trajectories: SeqgrpoGroupRecord[] = [];
    const sums = { reward: 0, exact: 0, correct: 0, zeroAdv: 0, replyTokens: 0, truncated: 0 };
    items.forEach((item, q) => {
      const group = gens.slice(q * G, (q + 1) * G);
      const texts = group.map((g) => prompter.reply(g.tokens, g.finish));
      const scores = texts.map((t) => task.score(item, t));
      const rewards = scores.map((s) => s.reward);
      const adv = groupZScore(rewards, { eps: cfg.rl.zscoreEps, singleton: cfg.rl.singleton, stdMode: cfg.rl.stdMode });
      const prompt = questionIds[q]!;
      group.forEach((g, k) => {
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
        sums.reward += rewards[k]!;
        sums.exact += scores[k]!.exact ? 1 : 0;
        sums.correct += scores[k]!.correct ? 1 : 0;
        sums.zeroAdv += adv[k] === 0 ? 1 : 0;
        sums.replyTokens += g.tokens.length;
        sums.truncated += g.finish === 'stop' ? 0 : 1;
      });
      trajectories.push({
        kind: 'seqgrpo.group',
        version: RECORD_VERSION,
        input: task.question(item),
        target: task.answer(item),
        rollouts: group.map((g, k) => ({
          output: texts[k]!,
          reward: rewards[k]!,
          advantage: adv[k]!,
          logProbs: g.logProbs,
          raw: prompter.raw(g.tokens),
        })),
      });
    });
    const t1 = performance.now();
    const st = await policyUpdate(this.model, this.optimizer, samples, {
      ...configuredUpdate(cfg, this.streams.minibatch, this.step),
      reference: this.reference,
    });
    const t2 = performance.now();
    this.step++;
    const n = samples.length;
    return {
      metrics: {
        reward: sums.reward / n,
        exact: sums.exact / n,
        correct: sums.correct / n,
        zeroAdvantageShare: sums.zeroAdv / n,
        replyTokens: sums.replyTokens / n,
        truncatedShare: sums.truncated / n,
        ...updateMetrics(st),
        'timing.rolloutMs': t1 - t0,
        'timing.updateMs': t2 - t1,
      },
      trajectories,
      tokens: samples.reduce((s, x) => s + x.tokens.length, 0),
    };
  }

  evaluate(): Promise<EvalResult> {
    return evaluateChat(this.cfg, this.task, this.model, this.prompter);
  }

  async snapshot(): Promise<TrainerSnapshot> {
    const lora = this.model.lora;
    return {
      model: this.model,
      optimizer: await this.optimizer.exportState(),
      state: {
        step: this.step,
        rng: saveStreams(this.streams),
        ...(lora ? { loraDropout: { seed: lora.dropoutSeed, calls: lora.dropoutCalls } } : {}),
      },
      files: lora ? await peftAdapterFiles(lora, this.cfg.model.path) : {},
    };
  }

  dispose(): void {
    this.model.lora?.dispose();
    this.model.lora = null;
    this.model.dispose();
    this.optimizer.dispose();
  }
}

function evalIdentity(cfg: ChatGrpoConfig): EvalResult['identity'] {
  return {
    algorithm: 'chatgrpo',
    split: 'heldout',
    // the tokenizer and chat template come from the model named here, and the adapters apply only under LoRA
    model: cfg.model.path,
    lora: cfg.model.lora !== null,
    kind: cfg.task.kind,
    maxOperand: cfg.task.maxOperand,
    instruction: cfg.task.instruction,
    maxNewTokens: cfg.task.maxNewTokens,
    evalSeed: cfg.task.evalSeed,
    heldoutFraction: cfg.task.heldoutFraction,
    items: cfg.eval.items,
    temperature: cfg.eval.temperature,
    ...(cfg.eval.drawSeed ? { drawSeed: cfg.eval.drawSeed } : {}),
  };
}

async function evaluateChat(
  cfg: ChatGrpoConfig,
  task: ArithmeticTask,
  model: LlamaModel,
  prompter: Prompter,
): Promise<EvalResult> {
  const items: ArithmeticItem[] = task.evalItems(cfg.eval.items);
  const root = new Rng(cfg.task.evalSeed).split('eval-tokens');
  const gens = await sampleReplies(
    model,
    prompter,
    items.map((it) => prompter.ids(task.question(it))),
    cfg.task.maxNewTokens,
    cfg.eval.temperature,
    1,
    cfg.eval.drawSeed ? root.split(`draws-${cfg.eval.drawSeed}`) : root,
  );
  const replies = items.map((_, i) => prompter.reply(gens[i]!.tokens, gens[i]!.finish));
  const scores = items.map((it, i) => task.score(it, replies[i]!));
  const outcomes = items.map((it, i) => ({
    id: `${it.a}+${it.b}`,
    correct: scores[i]!.exact,
    score: scores[i]!.reward,
    output: replies[i]!,
    target: task.answer(it),
  }));
  const n = outcomes.length;
  return {
    identity: evalIdentity(cfg),
    metrics: {
      accuracy: outcomes.filter((o) => o.correct).length / n,
      answerCorrect: scores.filter((s) => s.correct).length / n,
      reward: outcomes.reduce((s, o) => s + o.score, 0) / n,
    },
    items: outcomes,
  };
}

/** The real model, with fresh adapters when the config asks for LoRA (drawn from the run seed's 'lora' stream). */
async function initialModel(cfg: ChatGrpoConfig): Promise<{ real: RealModel; prompter: Prompter }> {
  await checkMemory(cfg);
  const where = await realModelPath(cfg.model.path, 'model.path');
  const real = await loadRealModel(where);
  if (cfg.model.lora) {
    real.model.lora = LoraAdapters.create(real.model.config, cfg.model.lora, new Rng(cfg.seed).split('lora'));
  }
  return { real, prompter: new Prompter(real.tokenizer, real) };
}

/**
 * The KL term's reference policy when rl.klCoef > 0: under LoRA the policy's own base with its adapters switched off
 * (no second copy); training every weight, the base loaded once more and kept frozen.
 */
async function referenceOf(cfg: ChatGrpoConfig): Promise<LlamaModel | 'adapters-off' | undefined> {
  if (cfg.rl.klCoef <= 0) return undefined;
  if (cfg.model.lora) return 'adapters-off';
  return (await loadRealModel(await realModelPath(cfg.model.path, 'model.path'))).model;
}

/** The run's memory plan here, from the model's header alone (nothing is allocated); null for an architecture this
 * engine cannot build (loading then says why). */
export async function chatgrpoMemoryPlan(cfg: ChatGrpoConfig): Promise<RealModelMemoryPlan | null> {
  const config = await modelHeaderConfig(await realModelPath(cfg.model.path, 'model.path'));
  if (!config) return null;
  return realModelMemoryPlan(config, {
    backend: cfg.backend,
    ignoreMemoryCheck: cfg.budget.ignoreMemoryCheck,
    rows: cfg.task.groupSize * cfg.task.promptsPerStep,
    replyTokens: cfg.task.maxNewTokens,
    loraRank: cfg.model.lora?.rank ?? null,
    rowsField: 'task.groupSize × task.promptsPerStep',
    fewerRows: (maxRows) => {
      const group = Math.floor(maxRows / cfg.task.promptsPerStep);
      if (group >= 2) return `task.groupSize ${group} (at task.promptsPerStep ${cfg.task.promptsPerStep})`;
      const prompts = Math.floor(maxRows / cfg.task.groupSize);
      return prompts >= 1 ? `task.promptsPerStep ${prompts} (at task.groupSize ${cfg.task.groupSize})` : null;
    },
  });
}

/** Refuses a step that would not fit here, before the model is loaded. */
async function checkMemory(cfg: ChatGrpoConfig): Promise<void> {
  const problem = (await chatgrpoMemoryPlan(cfg))?.problem;
  if (problem) throw new UserError(problem);
}

/** The prompter of the config's model, from its tokenizer and template alone (the weights come from a checkpoint). */
async function prompterOf(cfg: ChatGrpoConfig): Promise<Prompter> {
  const { tokenizer, chat } = await loadRealTokenizer(await realModelPath(cfg.model.path, 'model.path'));
  return new Prompter(tokenizer, chatParts(tokenizer, chat));
}

/** The adapters a checkpoint carries, onto its base, with the dropout counter where the run left it. */
async function restoreAdapters(cfg: ChatGrpoConfig, from: CheckpointContents, state: unknown): Promise<void> {
  if (!cfg.model.lora) return;
  const adapter = await readPeftAdapter(from.dir);
  const lora = adaptersFromPeft(from.model.config, adapter);
  const d = (state as { loraDropout?: { seed?: unknown; calls?: unknown } }).loraDropout;
  if (typeof d?.seed !== 'number' || typeof d.calls !== 'number') {
    lora.dispose();
    throw new UserError(
      `${from.dir}/trainer_state.json: loraDropout is missing; the checkpoint cannot be resumed exactly`,
    );
  }
  lora.dropoutSeed = d.seed;
  lora.dropoutCalls = d.calls;
  from.model.lora = lora;
}

export const chatgrpo: Algorithm<ChatGrpoConfig> = {
  name: 'chatgrpo',
  async createTrainer(cfg, from) {
    const task = taskOf(cfg);
    const root = new Rng(cfg.seed);
    if (!from) {
      const { real, prompter } = await initialModel(cfg);
      const streams = {
        tokens: root.split('tokens'),
        task: new Rng(cfg.task.trainSeed).split('train-items'),
        minibatch: root.split('minibatch'),
      };
      const reference = await referenceOf(cfg);
      return new ChatGrpoTrainer(
        cfg,
        task,
        real.model,
        prompter,
        configuredAdam(cfg, real.model),
        streams,
        0,
        reference,
      );
    }
    try {
      const { state, optimizer: saved } = resumePoint(from);
      await restoreAdapters(cfg, from, state);
      const prompter = await prompterOf(cfg);
      const optimizer = configuredAdam(cfg, from.model);
      optimizer.importState(saved);
      const streams = restoreStreams(state, ['tokens', 'task', 'minibatch'] as const);
      const reference = await referenceOf(cfg);
      return new ChatGrpoTrainer(cfg, task, from.model, prompter, optimizer, streams, state.step, reference);
    } catch (err) {
      from.model.lora?.dispose();
      from.model.lora = null;
      throw err;
    }
  },
  evalIdentity,
  async initialModel(cfg) {
    return (await initialModel(cfg)).real.model;
  },
  checkpointFiles() {
    return {};
  },
  async evaluate(cfg, model, checkpointDir) {
    const prompter = await prompterOf(cfg);
    if (cfg.model.lora && checkpointDir && !model.lora) {
      model.lora = adaptersFromPeft(model.config, await readPeftAdapter(checkpointDir));
    }
    return evaluateChat(cfg, taskOf(cfg), model, prompter);
  },
};
