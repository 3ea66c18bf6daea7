/**
 * What every trainer builds the same way from the shared config sections: the initial model, Adam with its
 * schedule, the policy-update options, and saved random streams. One place, so the algorithms cannot drift apart.
 */
import { loadCheckpoint } from '../model/formats/checkpoint';
import { sizedConfig, type LlamaConfig } from '../model/config';
import { initHfTensors, modelFromHf } from '../model/formats/hfWeights';
import type { LlamaModel } from '../model/llama';
import { Rng } from '../random/prng';
import { Adam } from '../rl/adam';
import { adamVariables, type PolicyUpdateOptions } from '../rl/policyUpdate';
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../base/projectRoot';
import { UserError } from '../base/userError';
import type { CommonConfig } from './configSections';

/**
 * Where `model.from.path` points: as given (absolute, or relative to the working folder), or else, for a relative path
 * that does not exist there, relative to the project folder, so that presets can name the base checkpoints shipped in
 * resources/ whatever folder the command runs from.
 */
export function checkpointPath(p: string): string {
  if (path.isAbsolute(p) || fs.existsSync(p)) return p;
  const shipped = path.join(PROJECT_ROOT, p);
  return fs.existsSync(shipped) ? shipped : p;
}

/**
 * The model a run starts from: a checkpoint (`model.from`), which must fit the task's vocabulary, or random weights
 * of `model.size` with the config's overrides. `vocabWhat` names the vocabulary in errors.
 */
export async function configuredInitialModel(
  cfg: CommonConfig,
  vocab: number,
  defaults: Partial<LlamaConfig>,
  rng: Rng,
  vocabWhat: string,
): Promise<LlamaModel> {
  if (cfg.model.from.kind === 'checkpoint') {
    const { model } = await loadCheckpoint(checkpointPath(cfg.model.from.path));
    if (model.config.vocab_size !== vocab) {
      model.dispose();
      throw new UserError(
        `model.from.path ${cfg.model.from.path}: vocab_size ${model.config.vocab_size} does not match ${vocabWhat} (${vocab} tokens)`,
      );
    }
    return model;
  }
  const { size, initStd, from: _from, ...overrides } = cfg.model;
  const c = sizedConfig(size, { ...defaults, ...overrides, vocab_size: vocab });
  return modelFromHf(
    c,
    initHfTensors(c, () => rng.normal(), initStd),
  );
}

/**
 * Adam with the config's learning rate, schedule and gradient clip. The schedule counts training steps, not
 * parameter updates (issue 17): every update of training step s (0-based; rl.miniBatches × rl.epochs of them, or
 * MARTI's several per agent) uses the rate at s, as verl steps its lr scheduler once per training step. Warm-up takes
 * rl.schedule.warmupSteps training steps, and the cosine reaches minLr at the run's last step, s = budget.steps − 1.
 * The trainer passes s through `configuredUpdate`, so a resumed run, which restores its step, follows the same rates.
 */
export function configuredAdam(cfg: Pick<CommonConfig, 'rl' | 'budget'>, model: LlamaModel): Adam {
  const { rl } = cfg;
  const s = rl.schedule;
  const lr =
    s.kind === 'constant'
      ? rl.lr
      : s.kind === 'linearWarmup'
        ? { kind: 'linearWarmup' as const, lr: rl.lr, warmupSteps: s.warmupSteps }
        : {
            kind: 'cosine' as const,
            lr: rl.lr,
            minLr: s.minLr,
            warmupSteps: s.warmupSteps,
            totalSteps: Math.max(s.warmupSteps, cfg.budget.steps - 1),
          };
  return new Adam(adamVariables(model), { lr, maxGradNorm: rl.gradClip, scheduleUnit: 'trainingStep' });
}

/** policyUpdate's options from the rl and sampler sections, for the update of 0-based training step `trainingStep`. */
export function configuredUpdate(
  cfg: Pick<CommonConfig, 'rl' | 'sampler'>,
  minibatchRng: Rng,
  trainingStep: number,
): PolicyUpdateOptions {
  const { rl } = cfg;
  return {
    trainingStep,
    loss: {
      kind: rl.loss,
      clipLow: rl.clipLow,
      clipHigh: rl.clipHigh,
      klCoef: rl.klCoef,
      entCoef: rl.entCoef,
      tis: rl.tis,
    },
    temperature: cfg.sampler.temperature > 0 ? cfg.sampler.temperature : 1,
    epochs: rl.epochs,
    miniBatches: rl.miniBatches,
    rng: minibatchRng,
  };
}

/** Random streams as trainer_state.json stores them. */
export function saveStreams<K extends string>(streams: Record<K, Rng>): Record<K, number[]> {
  return Object.fromEntries(Object.entries(streams).map(([k, r]) => [k, (r as Rng).state()])) as Record<K, number[]>;
}

/** The streams of a checkpoint's trainer_state.json (`{rng: {name: state}}`), so a resumed run draws the same numbers. */
export function restoreStreams<K extends string>(state: unknown, names: readonly K[]): Record<K, Rng> {
  const saved = (state as { rng?: Record<string, unknown> } | undefined)?.rng;
  return Object.fromEntries(
    names.map((name) => {
      const s = saved?.[name];
      if (!Array.isArray(s)) {
        throw new UserError(`trainer_state.json: rng.${name} is missing; the checkpoint cannot be resumed exactly`);
      }
      return [name, Rng.fromState(s as number[])];
    }),
  ) as Record<K, Rng>;
}
