/**
 * The shared sections of every run configuration (see engine/runs/config/configSchema.ts for the union and its validation):
 * one zod schema gives the TypeScript types, the validation (messages that name the field, what it accepts and what it
 * got) and, through engine/runs/config/configJsonSchema.ts, the JSON Schema the launch form is drawn from. They live on the
 * training floor, below the algorithms, which build their config members from them.
 *
 * A config is a discriminated union on `algorithm`. Each algorithm's member is the shared sections below plus its own
 * (`task` for seqgrpo); MARS and MARTI add their members the same way: `z.strictObject({ algorithm: …,
 * ...commonFields, <own sections> })` with `checkCommon` as a refinement, then one more entry in `runConfigSchema`.
 *
 * Every object is strict, so a misspelt key is an error instead of a silently ignored setting, and every field has a
 * default, so a preset or a config file may be partial. Sections use `.prefault({})` rather than `.default({})`: zod v4
 * returns a default as is, while a prefault is parsed, so a missing section still gets its fields' defaults.
 */
import { z } from 'zod';
import { ConfigError, MODEL_SIZES, sizedConfig, type ModelSize } from '../model/config';
import type { ZScoreOptions } from '../rl/advantages';
import type { PolicyLossKind } from '../rl/losses';
import type { LrSchedule } from '../rl/schedule';
import type { BackendName } from '../tensor/backend';

// The choices are listed here rather than imported, so that loading the schema (in the app's main process, in the
// form) never loads TensorFlow.js; the type checks below fail the build if a list drifts from the module that owns it
// (SEQ_TASK_KINDS is checked in seqgrpo/configSchema.ts: this floor does not import an algorithm, even for a type).
export const BACKEND_CHOICES = ['auto', 'tensorflow', 'webgpu', 'wasm', 'cpu'] as const;
export const MODEL_SIZE_NAMES = ['micro', 'tiny', 'small', 'medium'] as const;
export const LOSS_KINDS = ['ppoToken', 'gspo'] as const;
export const SEQ_TASK_KINDS = ['copy', 'reverse', 'sort', 'increment'] as const;

/** True when A and B are the same union (the checks below, and seqgrpo/configSchema.ts's for SEQ_TASK_KINDS). */
export type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
true satisfies Same<(typeof BACKEND_CHOICES)[number], 'auto' | BackendName>;
true satisfies Same<(typeof MODEL_SIZE_NAMES)[number], ModelSize>;
true satisfies Same<(typeof LOSS_KINDS)[number], PolicyLossKind>;
true satisfies Same<'zero' | 'verl', NonNullable<ZScoreOptions['singleton']>>;
true satisfies Same<'unbiased' | 'population', NonNullable<ZScoreOptions['stdMode']>>;
true satisfies Same<'constant' | 'linearWarmup' | 'cosine', LrSchedule['kind']>;

export const UINT32_MAX = 2 ** 32 - 1;
export const MAX_STEPS = 10_000_000;

/** Title and one-sentence description: the launch form's label and help text. */
export function field<T extends z.ZodType>(schema: T, title: string, description: string): T {
  return schema.meta({ title, description });
}

export const seedNumber = () => z.int().min(0).max(UINT32_MAX);

// ---- model ----------------------------------------------------------------------------------------------------------

export const modelSourceSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: field(z.literal('random'), 'Random', 'Start from randomly initialised weights.'),
  }),
  z.strictObject({
    kind: field(z.literal('checkpoint'), 'Checkpoint', 'Start from the weights of a saved checkpoint.'),
    path: field(
      z.string().min(1),
      'Checkpoint folder',
      'The checkpoint folder, holding config.json and model.safetensors.',
    ),
  }),
]);

export const modelSchema = z
  .strictObject({
    size: field(
      z.enum(MODEL_SIZE_NAMES).default('tiny'),
      'Model size',
      'Named architecture: micro (about 20k parameters, trains in seconds), tiny (~0.5M), small (~10M) or medium (~50M).',
    ),
    hidden_size: field(
      z.int().min(2).max(8192).optional(),
      'Hidden size',
      'Overrides the width of the residual stream of the chosen size.',
    ),
    intermediate_size: field(
      z.int().min(1).max(32768).optional(),
      'MLP size',
      'Overrides the inner width of each SwiGLU feed-forward block.',
    ),
    num_hidden_layers: field(
      z.int().min(1).max(64).optional(),
      'Layers',
      'Overrides the number of transformer layers.',
    ),
    num_attention_heads: field(
      z.int().min(1).max(128).optional(),
      'Attention heads',
      'Overrides the number of query heads per layer.',
    ),
    num_key_value_heads: field(
      z.int().min(1).max(128).optional(),
      'Key/value heads',
      'Overrides the number of key/value heads (grouped-query attention); must divide the attention heads.',
    ),
    tie_word_embeddings: field(
      z.boolean().optional(),
      'Tie embeddings',
      'Use the input embedding matrix as the output projection too.',
    ),
    rope_theta: field(
      z.number().gt(0).max(1e9).optional(),
      'RoPE base',
      'Overrides the base frequency of the rotary position embedding.',
    ),
    max_position_embeddings: field(
      z
        .int()
        .min(8)
        .max(1 << 20)
        .optional(),
      'Context length',
      'Overrides the longest sequence (prompt plus response, in tokens) the model accepts.',
    ),
    initStd: field(
      z.number().gt(0).max(1).default(0.02),
      'Initial weight std',
      'Standard deviation of the random initial weights (Hugging Face initializer_range).',
    ),
    from: field(
      modelSourceSchema.default(() => ({ kind: 'random' as const })),
      'Initial weights',
      'Where the initial weights come from; a checkpoint brings its own architecture, so size and the overrides are then ignored.',
    ),
  })
  .superRefine((m, ctx) => {
    // Catch an inconsistent architecture (heads that do not divide the width, …) here, where the form can show it,
    // instead of when the trainer builds the model. The vocabulary is the task's, and does not affect these checks.
    if (m.from?.kind !== 'random' || !(m.size in MODEL_SIZES)) return;
    const { size, initStd: _std, from: _from, ...overrides } = m;
    try {
      sizedConfig(size, overrides);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      ctx.addIssue({
        code: 'custom',
        path: [],
        message: `inconsistent architecture: ${err.message.replace(/^[^:]*: /, '')}`,
      });
    }
  });

// ---- sampler, rl, budget, eval, checkpoint ------------------------------------------------------------------------------

export const samplerSchema = z.strictObject({
  temperature: field(
    z.number().min(0).max(10).default(1),
    'Temperature',
    'Sampling temperature of training rollouts: 1 samples the policy as it is, 0 is greedy.',
  ),
  topP: field(
    z.number().gt(0).max(1).default(1),
    'Top-p',
    'Nucleus sampling: draw only from the most likely tokens whose probabilities add up to this share (1 = off).',
  ),
});

export const tisSchema = z.strictObject({
  enabled: field(
    z.boolean().default(false),
    'Enabled',
    'Reweight each token by the (capped) ratio between the current and the sampling policy (docs/algorithms.md §1.3).',
  ),
  cap: field(z.number().gt(0).max(100).default(2), 'Cap', 'Upper bound on the truncated importance weight.'),
});

export const scheduleSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: field(z.literal('constant'), 'Constant', 'Keep the learning rate fixed.'),
  }),
  z.strictObject({
    kind: field(z.literal('linearWarmup'), 'Linear warm-up', 'Ramp the learning rate up linearly, then keep it fixed.'),
    warmupSteps: field(
      z.int().min(0).max(MAX_STEPS),
      'Warm-up steps',
      'Steps over which the learning rate ramps up to rl.lr.',
    ),
  }),
  z.strictObject({
    kind: field(
      z.literal('cosine'),
      'Cosine',
      'Warm up linearly, then decay along a half cosine to minLr at the last step.',
    ),
    warmupSteps: field(
      z.int().min(0).max(MAX_STEPS).default(0),
      'Warm-up steps',
      'Steps over which the learning rate ramps up to rl.lr.',
    ),
    minLr: field(
      z.number().min(0).max(1).default(0),
      'Final learning rate',
      'The learning rate the cosine decays to by the last step.',
    ),
  }),
]);

export const rlSchema = z
  .strictObject({
    loss: field(
      z.enum(LOSS_KINDS).default('ppoToken'),
      'Policy loss',
      'ppoToken clips each token ratio (GRPO form); gspo clips the sequence-level ratio (docs/algorithms.md §1.3).',
    ),
    clipLow: field(
      z.number().min(0).lt(1).default(0.2),
      'Clip low',
      'ε_lo: how far below 1 the ratio may fall before its gradient is cut.',
    ),
    clipHigh: field(
      z.number().min(0).max(10).default(0.2),
      'Clip high',
      'ε_hi: how far above 1 the ratio may rise before its gradient is cut.',
    ),
    klCoef: field(
      z.number().min(0).max(10).default(0),
      'KL coefficient',
      'Weight of the k3 KL penalty towards the initial policy (0 = no penalty and no reference copy).',
    ),
    entCoef: field(
      z.number().min(0).max(10).default(0),
      'Entropy bonus',
      'Weight of the entropy bonus that rewards keeping the policy spread out.',
    ),
    tis: field(
      tisSchema.prefault({}),
      'Truncated importance sampling',
      'Corrects for a mismatch between the policy that sampled and the one being trained (off by default).',
    ),
    lr: field(
      z.number().gt(0).max(1).default(1e-4),
      'Learning rate',
      'Adam learning rate (the peak, when a schedule warms up or decays).',
    ),
    schedule: field(
      scheduleSchema.default(() => ({ kind: 'constant' as const })),
      'Learning-rate schedule',
      'How the learning rate changes over the run: constant, linear warm-up, or warm-up then cosine decay.',
    ),
    gradClip: field(
      z.number().gt(0).max(1e6).default(1),
      'Gradient clip',
      'Largest global norm of the gradient; larger gradients are scaled down to it.',
    ),
    epochs: field(
      z.int().min(1).max(100).default(1),
      'Epochs',
      'Passes over each step’s rollouts (more than 1 makes later passes off-policy).',
    ),
    miniBatches: field(
      z.int().min(1).max(4096).default(1),
      'Minibatches',
      'Parameter updates per epoch: each step’s rollouts are split into this many parts.',
    ),
    zscoreEps: field(
      z.number().min(0).max(1).default(1e-6),
      'z-score epsilon',
      'Added to the group’s standard deviation before dividing (docs/algorithms.md §1.2).',
    ),
    singleton: field(
      z.enum(['zero', 'verl']).default('zero'),
      'Singleton groups',
      'Advantage of a group with one sample: zero (no baseline) or verl (the raw reward).',
    ),
    stdMode: field(
      z.enum(['unbiased', 'population']).default('unbiased'),
      'Standard deviation',
      'unbiased divides by n−1 as torch.std does; population divides by n.',
    ),
  })
  .superRefine((rl, ctx) => {
    if (rl.schedule?.kind === 'cosine' && typeof rl.lr === 'number' && rl.schedule.minLr > rl.lr) {
      ctx.addIssue({
        code: 'custom',
        path: ['schedule', 'minLr'],
        message: `must be ≤ rl.lr (${rl.lr}): the cosine decays from rl.lr down to minLr`,
      });
    }
  });

export const budgetSchema = z.strictObject({
  steps: field(
    z.int().min(1).max(MAX_STEPS).default(200),
    'Training steps',
    'How many training steps (policy updates on fresh rollouts) the run makes.',
  ),
  // Optional without a default, so configs that do not set it stay as they were (run.json, evaluation identities).
  ignoreMemoryCheck: field(
    z.boolean().optional(),
    'Ignore the memory check',
    'Launch even when the estimate of the memory the run needs (weights, Adam state, rollouts, activations) exceeds this machine’s.',
  ),
});

export const pretrainSchema = z.strictObject({
  steps: field(
    z.int().min(1).max(MAX_STEPS).default(300),
    'Pretraining steps',
    'Supervised steps of `mars-lab pretrain`, which writes a base checkpoint for RL to start from.',
  ),
  lr: field(
    z.number().gt(0).max(1).default(1e-3),
    'Pretraining learning rate',
    'Adam learning rate of the supervised pretraining.',
  ),
  batch: field(z.int().min(1).max(4096).default(32), 'Pretraining batch', 'Sequences per supervised pretraining step.'),
});

export const evalSchema = z.strictObject({
  every: field(
    z.int().min(0).max(MAX_STEPS).default(50),
    'Evaluate every',
    'Evaluate on the held-out items every this many steps, and always at the end (0 = only at the end).',
  ),
  items: field(
    z.int().min(1).max(100_000).default(64),
    'Evaluation items',
    'How many held-out items each evaluation scores.',
  ),
  temperature: field(
    z.number().min(0).max(10).default(0),
    'Evaluation temperature',
    'Sampling temperature during evaluation: 0 is greedy, so an evaluation is deterministic.',
  ),
  drawSeed: field(
    z
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .default(0),
    'Evaluation draw seed',
    "Seed of the evaluation's own random draws (sampled tokens, MARTI's search), beside the task seed that fixes the items: evaluate under several to see how much a figure moves with the draws alone.",
  ),
});

export const checkpointSchema = z.strictObject({
  every: field(
    z.int().min(1).max(MAX_STEPS).default(50),
    'Checkpoint every',
    'Save a checkpoint every this many steps, and always at the end.',
  ),
  keep: field(
    z
      .union([z.literal('all'), z.int().min(1).max(1_000_000)], { error: 'expected "all" or an integer ≥ 1' })
      .default('all'),
    'Checkpoints kept',
    'How many of the most recent checkpoints to keep on disk, or "all".',
  ),
});

/** The fields and sections every algorithm's member has. */
export const commonFields = {
  seed: field(
    seedNumber().default(0),
    'Seed',
    'Seed of the run’s random generator: the same config and seed give the same run.',
  ),
  backend: field(
    z.enum(BACKEND_CHOICES).default('auto'),
    'Backend',
    'TensorFlow.js backend: auto takes the first that loads (webgpu on a GPU, tensorflow, wasm, cpu); the others force one.',
  ),
  blasThreads: field(
    z.int().min(1).max(256).optional(),
    'BLAS threads',
    'Threads of the native matrix products (OpenBLAS) in the run’s process. Unset: a run alone uses every core; a run the app or a local study starts beside others uses its share (cores / worker slots). MARS_LAB_BLAS_THREADS and --blas-threads override it.',
  ),
  tags: field(
    z
      .array(z.string().min(1).max(64))
      .max(32)
      .default(() => []),
    'Tags',
    'Free labels for finding the run later in the run list.',
  ),
  notes: field(
    z.string().max(10_000).default(''),
    'Notes',
    'Free text kept with the run, such as the question it is meant to answer.',
  ),
  model: field(modelSchema.prefault({}), 'Model', 'The policy’s architecture and where its initial weights come from.'),
  sampler: field(samplerSchema.prefault({}), 'Sampler', 'How training rollouts are sampled from the policy.'),
  rl: field(
    rlSchema.prefault({}),
    'Reinforcement learning',
    'Loss, advantage normalisation and optimiser settings (docs/algorithms.md §1, §4).',
  ),
  budget: field(budgetSchema.prefault({}), 'Budget', 'How long the run trains.'),
  pretrain: field(
    pretrainSchema.prefault({}),
    'Pretraining',
    'The supervised stage that makes a base checkpoint (`mars-lab pretrain`).',
  ),
  eval: field(evalSchema.prefault({}), 'Evaluation', 'When and on how many held-out items the policy is evaluated.'),
  checkpoint: field(
    checkpointSchema.prefault({}),
    'Checkpoints',
    'When checkpoints are written and how many are kept.',
  ),
};

export type CommonConfig = z.output<z.ZodObject<typeof commonFields>>;

/** Checks across the shared sections; each algorithm's member runs it as a refinement. */
export function checkCommon(c: Pick<CommonConfig, 'rl' | 'budget'>, ctx: z.RefinementCtx): void {
  // Refinements can run while other fields still have issues, so every value is checked before it is used.
  const s = c.rl?.schedule;
  const steps = c.budget?.steps;
  if (
    s &&
    s.kind !== 'constant' &&
    typeof s.warmupSteps === 'number' &&
    typeof steps === 'number' &&
    s.warmupSteps > steps
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['rl', 'schedule', 'warmupSteps'],
      message: `must be ≤ budget.steps (${steps}): a longer warm-up never reaches rl.lr`,
    });
  }
}
