/**
 * The measured probe of a step's time (issue 33, item 3): for a chatgrpo config, the real model is loaded as the run
 * loads it (LoRA adapters included), one chunk of the run's rows is sampled for a few tokens at the run's temperature
 * and top-p (two lengths, after a warm-up), and the policy update is run on one row and on a few rows of the run's length
 * (after a warm-up pass); stepTimeEstimate.ts extrapolates to one step of the config. It runs in the process that
 * calls it: `mars-lab probe` (a terminal, or the host's worker: the host never computes), never in a host.
 *
 * Bounded: a few seconds of sampling and three passes of at most ~1024 tokens (rows of at most PROBE_ROW_TOKENS tokens (a longer row is measured at
 * that length and scaled by its tokens); the signal is checked between phases.
 */
import { UserError } from '../../base/userError';
import type { ChatGrpoConfig } from '../../chatgrpo/configSchema';
import { ArithmeticTask } from '../../chatgrpo/task';
import { chatgrpoMemoryPlan, SAMPLE_ROWS } from '../../chatgrpo/trainer';
import { LoraAdapters } from '../../model/lora/loraAdapters';
import { loadRealModel, realModelPath, type RealModel } from '../../model/realModel';
import { generate } from '../../model/sampler';
import { Rng } from '../../random/prng';
import { policyUpdate } from '../../rl/policyUpdate';
import type { Sample } from '../../rl/sample';
import { backendReport } from '../../tensor/backend';
import { configuredAdam, configuredUpdate } from '../../training/configuredTraining';
import type { RunConfig } from '../config/configSchema';
import { estimateStepTime, type ProbeMeasurements, type StepShape, type StepTimeEstimate } from './stepTimeEstimate';

/** The longest training row the probe runs; a longer one is timed at this length and scaled by its tokens. */
export const PROBE_ROW_TOKENS = 512;
/** Tokens of the probe's larger update pass at most (the step's batch when it is smaller). */
const PROBE_UPDATE_TOKENS = 1024;
/** New tokens of the probe's longer sample (fewer when the run's replies are shorter; never fewer than 2). */
const PROBE_NEW_TOKENS = 8;

export type ProbePhase = 'loading' | 'sampling' | 'update' | 'done';

export interface StepTimeProbeResult extends StepTimeEstimate {
  algorithm: string;
  step: StepShape & { promptTokens: number };
  measured: ProbeMeasurements & { loadSeconds: number };
  basis: { backend: string; kernel: string; threads: number; model: string };
  /** Seconds the probe took, loading included. */
  probeSeconds: number;
  /** What the figures are, in a sentence or two. */
  note: string;
}

export interface ProbeOptions {
  onProgress?: (phase: ProbePhase, message: string) => void;
  signal?: AbortSignal;
}

const now = (): number => performance.now() / 1000;

function checkSignal(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new UserError('probe: cancelled');
}

/** The step's time of a run config, measured here; only chatgrpo (a real model) is probed. */
export async function probeStepTime(config: RunConfig, opts: ProbeOptions = {}): Promise<StepTimeProbeResult> {
  if (config.algorithm !== 'chatgrpo') {
    throw new UserError(
      `probe: the time probe measures chatgrpo runs (a real model); ${config.algorithm}'s presets state their measured runtime`,
    );
  }
  return probeChatgrpo(config, opts);
}

/** The longest question of the task: both operands at their largest. */
function longestPrompt(cfg: ChatGrpoConfig, real: RealModel): number[] {
  const task = new ArithmeticTask({
    maxOperand: cfg.task.maxOperand,
    instruction: cfg.task.instruction,
    evalSeed: cfg.task.evalSeed,
    heldoutFraction: cfg.task.heldoutFraction,
  });
  const q = task.question({ a: cfg.task.maxOperand, b: cfg.task.maxOperand });
  if (real.encoder) return real.encoder.prompt([{ role: 'user', content: q }]).ids;
  return real.tokenizer.encodeForModel(`Question: ${q}\nAnswer:`);
}

async function probeChatgrpo(cfg: ChatGrpoConfig, opts: ProbeOptions): Promise<StepTimeProbeResult> {
  const say = opts.onProgress ?? (() => {});
  // a step that would not fit is refused as the run's start refuses it, before the model loads
  const problem = (await chatgrpoMemoryPlan(cfg))?.problem;
  if (problem) throw new UserError(problem);
  const started = now();
  say('loading', `loading ${cfg.model.path}`);
  const real = await loadRealModel(await realModelPath(cfg.model.path, 'model.path'));
  const model = real.model;
  if (cfg.model.lora) model.lora = LoraAdapters.create(model.config, cfg.model.lora, new Rng(cfg.seed).split('lora'));
  const adam = configuredAdam(cfg, model);
  const loadSeconds = now() - started;
  try {
    checkSignal(opts.signal);
    const prompt = longestPrompt(cfg, real);
    const rows = cfg.task.groupSize * cfg.task.promptsPerStep;
    const chunkRows = Math.min(rows, SAMPLE_ROWS);
    const replyTokens = cfg.task.maxNewTokens;
    const rng = new Rng(cfg.seed).split('probe');
    const prompts = Array.from({ length: chunkRows }, () => prompt);
    // no stop tokens: every row runs the whole length, so the two lengths differ by exactly their tokens
    const sample = async (tokens: number): Promise<{ seconds: number; tokens: number[][] }> => {
      const t0 = now();
      const gens = await generate(model, prompts, {
        maxNewTokens: tokens,
        temperature: cfg.sampler.temperature,
        topP: cfg.sampler.topP,
        stopTokens: [],
        rng,
      });
      return { seconds: now() - t0, tokens: gens.map((g) => g.tokens) };
    };
    const t2 = Math.max(2, Math.min(replyTokens, PROBE_NEW_TOKENS));
    say('sampling', `sampling ${chunkRows} rows: a warm-up, then 1 and ${t2} new tokens`);
    await sample(2); // the prefill and a cached decoding step, each once before it is timed
    checkSignal(opts.signal);
    const s1 = await sample(1);
    checkSignal(opts.signal);
    const s2 = await sample(t2);
    checkSignal(opts.signal);

    const rowTokens = prompt.length + replyTokens;
    const probeTokens = Math.min(rowTokens, PROBE_ROW_TOKENS);
    const reply = Array.from({ length: probeTokens - Math.min(prompt.length, probeTokens - 1) }, (_, i) => {
      const drawn = s2.tokens[0]!;
      return drawn[i % drawn.length]!;
    });
    const head = prompt.slice(0, probeTokens - reply.length);
    const row = (): Sample => ({
      role: 'node',
      groupId: 'probe',
      paramId: 'policy',
      tokens: [...head, ...reply],
      lossMask: [...head.map(() => 0), ...reply.map(() => 1)],
      behaviourLogProbs: [...head.map(() => 0), ...reply.map(() => -1)],
      reward: 1,
      advantage: 1,
    });
    const minibatch = new Rng(cfg.seed).split('probe-minibatch');
    const pass = async (n: number): Promise<number> => {
      const t0 = now();
      await policyUpdate(model, adam, Array.from({ length: n }, row), {
        ...configuredUpdate({ ...cfg, rl: { ...cfg.rl, epochs: 1, miniBatches: 1 } }, minibatch, 0),
        reference: cfg.rl.klCoef > 0 && cfg.model.lora ? 'adapters-off' : undefined,
      });
      return now() - t0;
    };
    // the larger pass is the step's own batch where it holds at most PROBE_UPDATE_TOKENS: a matrix product of many
    // rows costs less a row than one of few (measured: 4 rows at 0.77 s a row, the preset's 16 at ~0.3 s)
    const hi = Math.max(2, Math.min(rows, Math.floor(PROBE_UPDATE_TOKENS / probeTokens)));
    say('update', `policy update: a warm-up, then passes of 1 and ${hi} rows of ${probeTokens} tokens`);
    await pass(hi); // the larger pass first: the heap grows once, before anything is timed
    checkSignal(opts.signal);
    const u1 = await pass(1);
    checkSignal(opts.signal);
    const u2 = await pass(hi);

    const measured: ProbeMeasurements = {
      sampling: { rows: chunkRows, tokens: [1, t2], seconds: [s1.seconds, s2.seconds] },
      update: { rows: [1, hi], tokens: probeTokens, seconds: [u1, u2] },
    };
    const step: StepShape = {
      rows,
      chunkRows,
      replyTokens,
      rowTokens,
      epochs: cfg.rl.epochs,
      miniBatches: Math.min(cfg.rl.miniBatches, rows),
    };
    const estimate = estimateStepTime(measured, step);
    const report = backendReport();
    const result: StepTimeProbeResult = {
      algorithm: 'chatgrpo',
      ...estimate,
      step: { ...step, promptTokens: prompt.length },
      measured: { ...measured, loadSeconds },
      basis: {
        backend: report?.chosen ?? 'unknown',
        kernel: report ? (report.native.active ? report.native.kernel : `${report.chosen}'s own`) : 'unknown',
        threads: report ? (report.native.active ? report.native.threads : report.threads) : 1,
        model: real.path,
      },
      probeSeconds: now() - started,
      note: probeNote(cfg, step),
    };
    say('done', `about ${result.totalSeconds.toFixed(1)} s a step`);
    return result;
  } finally {
    model.lora?.dispose();
    model.lora = null;
    adam.dispose();
    model.dispose();
  }
}

function probeNote(cfg: ChatGrpoConfig, step: StepShape): string {
  return (
    `An extrapolation from a short measurement, not a run: ${step.rows} rows in ${Math.ceil(step.rows / step.chunkRows)} ` +
    `chunk(s) of ${step.chunkRows}, every reply taken to run all ${step.replyTokens} tokens (replies that end ` +
    `earlier make sampling faster), and ${step.epochs} pass(es) of the update over rows of ${step.rowTokens} tokens` +
    (cfg.rl.klCoef > 0 && !cfg.model.lora ? '; the KL reference model of full training is not timed' : '') +
    '. Evaluation and checkpoints come on top, on their steps.'
  );
}
