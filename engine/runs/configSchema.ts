/**
 * The run configuration: one zod schema gives the TypeScript types, the validation (messages that name the field, what
 * it accepts and what it got) and, through configJsonSchema.ts, the JSON Schema the launch form is drawn from.
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
import type { SeqTaskKind } from '../seqgrpo/task';
import type { BackendName } from '../tensor/backend';
import { UserError } from '../userError';

// The choices are listed here rather than imported, so that loading the schema (in the app's main process, in the
// form) never loads TensorFlow.js; the type checks below fail the build if a list drifts from the module that owns it.
export const BACKEND_CHOICES = ['auto', 'tensorflow', 'webgpu', 'wasm', 'cpu'] as const;
export const MODEL_SIZE_NAMES = ['micro', 'tiny', 'small', 'medium'] as const;
export const LOSS_KINDS = ['ppoToken', 'gspo'] as const;
export const SEQ_TASK_KINDS = ['copy', 'reverse', 'sort', 'increment'] as const;

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
true satisfies Same<(typeof BACKEND_CHOICES)[number], 'auto' | BackendName>;
true satisfies Same<(typeof MODEL_SIZE_NAMES)[number], ModelSize>;
true satisfies Same<(typeof LOSS_KINDS)[number], PolicyLossKind>;
true satisfies Same<(typeof SEQ_TASK_KINDS)[number], SeqTaskKind>;
true satisfies Same<'zero' | 'verl', NonNullable<ZScoreOptions['singleton']>>;
true satisfies Same<'unbiased' | 'population', NonNullable<ZScoreOptions['stdMode']>>;
true satisfies Same<'constant' | 'linearWarmup' | 'cosine', LrSchedule['kind']>;

const UINT32_MAX = 2 ** 32 - 1;
const MAX_STEPS = 10_000_000;

/** Title and one-sentence description: the launch form's label and help text. */
function field<T extends z.ZodType>(schema: T, title: string, description: string): T {
  return schema.meta({ title, description });
}

const seedNumber = () => z.int().min(0).max(UINT32_MAX);

// ---- model ----------------------------------------------------------------------------------------------------------

export const modelSourceSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: field(z.literal('random'), 'Random', 'Start from randomly initialised weights.'),
  }),
  z.strictObject({
    kind: field(z.literal('checkpoint'), 'Checkpoint', 'Start from the weights of a saved checkpoint.'),
    path: field(z.string().min(1), 'Checkpoint folder', 'The checkpoint folder, holding config.json and model.safetensors.'),
  }),
]);

export const modelSchema = z
  .strictObject({
    size: field(
      z.enum(MODEL_SIZE_NAMES).default('tiny'),
      'Model size',
      'Named architecture: micro (about 20k parameters, trains in seconds), tiny (~0.5M), small (~10M) or medium (~50M).',
    ),
    hidden_size: field(z.int().min(2).max(8192).optional(), 'Hidden size', 'Overrides the width of the residual stream of the chosen size.'),
    intermediate_size: field(z.int().min(1).max(32768).optional(), 'MLP size', 'Overrides the inner width of each SwiGLU feed-forward block.'),
    num_hidden_layers: field(z.int().min(1).max(64).optional(), 'Layers', 'Overrides the number of transformer layers.'),
    num_attention_heads: field(z.int().min(1).max(128).optional(), 'Attention heads', 'Overrides the number of query heads per layer.'),
    num_key_value_heads: field(
      z.int().min(1).max(128).optional(),
      'Key/value heads',
      'Overrides the number of key/value heads (grouped-query attention); must divide the attention heads.',
    ),
    tie_word_embeddings: field(z.boolean().optional(), 'Tie embeddings', 'Use the input embedding matrix as the output projection too.'),
    rope_theta: field(z.number().gt(0).max(1e9).optional(), 'RoPE base', 'Overrides the base frequency of the rotary position embedding.'),
    max_position_embeddings: field(
      z.int().min(8).max(1 << 20).optional(),
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
      "Where the initial weights come from; a checkpoint brings its own architecture, so size and the overrides are then ignored.",
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
      ctx.addIssue({ code: 'custom', path: [], message: `inconsistent architecture: ${err.message.replace(/^[^:]*: /, '')}` });
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
    'Reweight each token by the (capped) ratio between the current and the sampling policy (ALGORITHMS.md §1.3).',
  ),
  cap: field(z.number().gt(0).max(100).default(2), 'Cap', 'Upper bound on the truncated importance weight.'),
});

export const scheduleSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: field(z.literal('constant'), 'Constant', 'Keep the learning rate fixed.'),
  }),
  z.strictObject({
    kind: field(z.literal('linearWarmup'), 'Linear warm-up', 'Ramp the learning rate up linearly, then keep it fixed.'),
    warmupSteps: field(z.int().min(0).max(MAX_STEPS), 'Warm-up steps', 'Steps over which the learning rate ramps up to rl.lr.'),
  }),
  z.strictObject({
    kind: field(z.literal('cosine'), 'Cosine', 'Warm up linearly, then decay along a half cosine to minLr at the last step.'),
    warmupSteps: field(z.int().min(0).max(MAX_STEPS).default(0), 'Warm-up steps', 'Steps over which the learning rate ramps up to rl.lr.'),
    minLr: field(z.number().min(0).max(1).default(0), 'Final learning rate', 'The learning rate the cosine decays to by the last step.'),
  }),
]);

export const rlSchema = z
  .strictObject({
    loss: field(
      z.enum(LOSS_KINDS).default('ppoToken'),
      'Policy loss',
      'ppoToken clips each token ratio (GRPO form); gspo clips the sequence-level ratio (ALGORITHMS.md §1.3).',
    ),
    clipLow: field(z.number().min(0).lt(1).default(0.2), 'Clip low', 'ε_lo: how far below 1 the ratio may fall before its gradient is cut.'),
    clipHigh: field(z.number().min(0).max(10).default(0.2), 'Clip high', 'ε_hi: how far above 1 the ratio may rise before its gradient is cut.'),
    klCoef: field(
      z.number().min(0).max(10).default(0),
      'KL coefficient',
      'Weight of the k3 KL penalty towards the initial policy (0 = no penalty and no reference copy).',
    ),
    entCoef: field(z.number().min(0).max(10).default(0), 'Entropy bonus', 'Weight of the entropy bonus that rewards keeping the policy spread out.'),
    tis: field(
      tisSchema.prefault({}),
      'Truncated importance sampling',
      'Corrects for a mismatch between the policy that sampled and the one being trained (off by default).',
    ),
    lr: field(z.number().gt(0).max(1).default(1e-4), 'Learning rate', 'Adam learning rate (the peak, when a schedule warms up or decays).'),
    schedule: field(
      scheduleSchema.default(() => ({ kind: 'constant' as const })),
      'Learning-rate schedule',
      'How the learning rate changes over the run: constant, linear warm-up, or warm-up then cosine decay.',
    ),
    gradClip: field(z.number().gt(0).max(1e6).default(1), 'Gradient clip', 'Largest global norm of the gradient; larger gradients are scaled down to it.'),
    epochs: field(z.int().min(1).max(100).default(1), 'Epochs', 'Passes over each step’s rollouts (more than 1 makes later passes off-policy).'),
    miniBatches: field(z.int().min(1).max(4096).default(1), 'Minibatches', 'Parameter updates per epoch: each step’s rollouts are split into this many parts.'),
    zscoreEps: field(z.number().min(0).max(1).default(1e-6), 'z-score epsilon', 'Added to the group’s standard deviation before dividing (ALGORITHMS.md §1.2).'),
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
  steps: field(z.int().min(1).max(MAX_STEPS).default(200), 'Training steps', 'How many training steps (policy updates on fresh rollouts) the run makes.'),
});

export const pretrainSchema = z.strictObject({
  steps: field(z.int().min(1).max(MAX_STEPS).default(300), 'Pretraining steps', 'Supervised steps of `mars-lab pretrain`, which writes a base checkpoint for RL to start from.'),
  lr: field(z.number().gt(0).max(1).default(1e-3), 'Pretraining learning rate', 'Adam learning rate of the supervised pretraining.'),
  batch: field(z.int().min(1).max(4096).default(32), 'Pretraining batch', 'Sequences per supervised pretraining step.'),
});

export const evalSchema = z.strictObject({
  every: field(
    z.int().min(0).max(MAX_STEPS).default(50),
    'Evaluate every',
    'Evaluate on the held-out items every this many steps, and always at the end (0 = only at the end).',
  ),
  items: field(z.int().min(1).max(100_000).default(64), 'Evaluation items', 'How many held-out items each evaluation scores.'),
  temperature: field(
    z.number().min(0).max(10).default(0),
    'Evaluation temperature',
    'Sampling temperature during evaluation: 0 is greedy, so an evaluation is deterministic.',
  ),
});

export const checkpointSchema = z.strictObject({
  every: field(
    z.int().min(1).max(MAX_STEPS).default(50),
    'Checkpoint every',
    'Save a checkpoint every this many steps, and always at the end.',
  ),
  keep: field(
    z.union([z.literal('all'), z.int().min(1).max(1_000_000)], { error: 'expected "all" or an integer ≥ 1' }).default('all'),
    'Checkpoints kept',
    'How many of the most recent checkpoints to keep on disk, or "all".',
  ),
});

/** The fields and sections every algorithm's member has. */
export const commonFields = {
  seed: field(seedNumber().default(0), 'Seed', 'Seed of the run’s random generator: the same config and seed give the same run.'),
  backend: field(
    z.enum(BACKEND_CHOICES).default('auto'),
    'Backend',
    'TensorFlow.js backend: auto takes the first that loads (tensorflow, webgpu, wasm, cpu); the others force one.',
  ),
  tags: field(
    z.array(z.string().min(1).max(64)).max(32).default(() => []),
    'Tags',
    'Free labels for finding the run later in the run list.',
  ),
  notes: field(z.string().max(10_000).default(''), 'Notes', 'Free text kept with the run, such as the question it is meant to answer.'),
  model: field(modelSchema.prefault({}), 'Model', 'The policy’s architecture and where its initial weights come from.'),
  sampler: field(samplerSchema.prefault({}), 'Sampler', 'How training rollouts are sampled from the policy.'),
  rl: field(rlSchema.prefault({}), 'Reinforcement learning', 'Loss, advantage normalisation and optimiser settings (ALGORITHMS.md §1, §4).'),
  budget: field(budgetSchema.prefault({}), 'Budget', 'How long the run trains.'),
  pretrain: field(pretrainSchema.prefault({}), 'Pretraining', 'The supervised stage that makes a base checkpoint (`mars-lab pretrain`).'),
  eval: field(evalSchema.prefault({}), 'Evaluation', 'When and on how many held-out items the policy is evaluated.'),
  checkpoint: field(checkpointSchema.prefault({}), 'Checkpoints', 'When checkpoints are written and how many are kept.'),
};

type CommonConfig = z.output<z.ZodObject<typeof commonFields>>;

/** Checks across the shared sections; each algorithm's member runs it as a refinement. */
export function checkCommon(c: CommonConfig, ctx: z.RefinementCtx): void {
  // Refinements can run while other fields still have issues, so every value is checked before it is used.
  const s = c.rl?.schedule;
  const steps = c.budget?.steps;
  if (s && s.kind !== 'constant' && typeof s.warmupSteps === 'number' && typeof steps === 'number' && s.warmupSteps > steps) {
    ctx.addIssue({
      code: 'custom',
      path: ['rl', 'schedule', 'warmupSteps'],
      message: `must be ≤ budget.steps (${steps}): a longer warm-up never reaches rl.lr`,
    });
  }
}

// ---- seqgrpo --------------------------------------------------------------------------------------------------------

export const seqgrpoTaskSchema = z
  .strictObject({
    kind: field(
      z.enum(SEQ_TASK_KINDS).default('copy'),
      'Task',
      'The transformation to learn: copy, reverse or sort the input, or increment each symbol (wrapping around).',
    ),
    pretrainKind: field(
      z.enum(SEQ_TASK_KINDS).default('copy'),
      'Pretraining task',
      'The transformation a base model learns by supervised pretraining; RL then has to learn the task above from it.',
    ),
    symbols: field(z.int().min(2).max(64).default(6), 'Symbols', 'Size of the alphabet the sequences are made of.'),
    length: field(z.int().min(1).max(16).default(3), 'Length', 'Number of symbols in each input sequence.'),
    groupSize: field(
      z.int().min(2, { error: 'a group of one has no baseline; ALGORITHMS.md §2.9' }).max(1024).default(16),
      'Group size (G)',
      'Rollouts sampled per prompt; their rewards are normalised within the group (GRPO).',
    ),
    promptsPerStep: field(z.int().min(1).max(1024).default(1), 'Prompts per step', 'Distinct prompts per training step, each with its own group.'),
    trainSeed: field(seedNumber().default(1), 'Training-item seed', 'Seed of the stream that draws training inputs.'),
    evalSeed: field(seedNumber().default(2), 'Evaluation seed', 'Seed that chooses the held-out inputs and the evaluation items.'),
    heldoutFraction: field(
      z.number().gt(0).lt(1).default(0.2),
      'Held-out share',
      'Share of the input space reserved for evaluation and never trained on.',
    ),
  })
  .superRefine((t, ctx) => {
    if (t.trainSeed === t.evalSeed) {
      ctx.addIssue({
        code: 'custom',
        path: ['evalSeed'],
        message: `must differ from task.trainSeed (${t.trainSeed}) so evaluation items are never trained on`,
      });
    }
  });

export const seqgrpoConfigSchema = z
  .strictObject({
    algorithm: field(
      z.literal('seqgrpo'),
      'Algorithm',
      'seqgrpo: one policy learns a token-sequence transformation from reward alone, by GRPO.',
    ),
    ...commonFields,
    task: field(seqgrpoTaskSchema.prefault({}), 'Task', 'The sequence task the policy learns and is evaluated on.'),
  })
  .superRefine(checkCommon)
  .superRefine((c, ctx) => {
    const t = c.task;
    const mb = c.rl?.miniBatches;
    if (t && typeof mb === 'number' && typeof t.groupSize === 'number' && typeof t.promptsPerStep === 'number') {
      const batch = t.groupSize * t.promptsPerStep;
      if (mb > batch) {
        ctx.addIssue({
          code: 'custom',
          path: ['rl', 'miniBatches'],
          message: `must be ≤ task.groupSize × task.promptsPerStep (${batch}): every minibatch needs at least one rollout`,
        });
      }
    }
  });

// ---- the union --------------------------------------------------------------------------------------------------------

export const runConfigSchema = z
  .discriminatedUnion('algorithm', [seqgrpoConfigSchema])
  .meta({ title: 'mars-lab run configuration', description: 'Everything a training run needs; fields left out take their defaults.' });

export type RunConfig = z.output<typeof runConfigSchema>;
/** What a config file, a preset or the form may give: every field with a default is optional. */
export type RunConfigInput = z.input<typeof runConfigSchema>;
export type Algorithm = RunConfig['algorithm'];
export type SeqGrpoConfig = z.output<typeof seqgrpoConfigSchema>;
export type ModelSectionConfig = z.output<typeof modelSchema>;
export type ModelSource = z.output<typeof modelSourceSchema>;
export type SamplerConfig = z.output<typeof samplerSchema>;
export type RlConfig = z.output<typeof rlSchema>;
export type LrScheduleConfig = z.output<typeof scheduleSchema>;
export type BudgetConfig = z.output<typeof budgetSchema>;
export type PretrainConfig = z.output<typeof pretrainSchema>;
export type EvalConfig = z.output<typeof evalSchema>;
export type CheckpointConfig = z.output<typeof checkpointSchema>;
export type SeqGrpoTaskConfig = z.output<typeof seqgrpoTaskSchema>;

// ---- validation with messages a user can act on ------------------------------------------------------------------------

export interface ConfigIssue {
  /** Dotted field path, as `--set` takes it (`rl.lr`, `tags.1`); '' for the whole config. */
  path: string;
  /** What was expected and what was received, without the source and path (for inline display next to the field). */
  message: string;
}

export class ConfigValidationError extends UserError {
  readonly issues: ConfigIssue[];

  /** `source` names where the config came from; a function can name a different source per field path. */
  constructor(issues: ConfigIssue[], source: string | ((path: string) => string)) {
    const sourceOf = typeof source === 'string' ? () => source : source;
    super(issues.map((i) => `${sourceOf(i.path)}: ${i.path ? `${i.path}: ` : ''}${i.message}`).join('\n'));
    this.issues = issues;
  }
}

/** Marks messages zod made up itself, so that a message given in the schema (a reason) can be told apart. */
const DEFAULT_MESSAGE = '\u0000default';

const TYPE_NAMES: Record<string, string> = {
  object: 'an object',
  array: 'a list',
  string: 'a string',
  number: 'a number',
  int: 'an integer',
  boolean: 'true or false',
  null: 'null',
};

function jsonOf(value: unknown, max = 80): string {
  let s: string;
  try {
    s = JSON.stringify(value) ?? String(value);
  } catch {
    s = String(value);
  }
  return s.length > max ? `${s.slice(0, max - 1)}…` : s;
}

function oneOf(values: readonly unknown[]): string {
  return values.length === 1 ? `expected ${jsonOf(values[0])}` : `expected one of ${values.map((v) => jsonOf(v)).join(' | ')}`;
}

function valueAt(input: unknown, path: readonly PropertyKey[]): unknown {
  let v = input;
  for (const key of path) {
    if (typeof v !== 'object' || v === null || typeof key === 'symbol') return undefined;
    v = (v as Record<string | number, unknown>)[key];
  }
  return v;
}

function stripWrappers(s: z.ZodType): z.ZodType {
  while (s instanceof z.ZodDefault || s instanceof z.ZodPrefault || s instanceof z.ZodOptional || s instanceof z.ZodNullable) {
    s = s.unwrap() as z.ZodType;
  }
  return s;
}

/** The schema that applies at `path` of `input`, following discriminated unions by the input's tag. */
function schemaAt(schema: z.ZodType, input: unknown, path: readonly PropertyKey[]): z.ZodType | undefined {
  let s = stripWrappers(schema);
  if (s instanceof z.ZodUnion) {
    const tag = s instanceof z.ZodDiscriminatedUnion ? (s.def.discriminator as string) : undefined;
    const tagValue = tag === undefined ? undefined : valueAt(input, [tag]);
    const options = (s.options as readonly z.ZodType[]).map(stripWrappers);
    const chosen =
      tag === undefined
        ? // A plain union: the member that can hold the next key (for `keep`, the number when at a leaf).
          options.find((o) => (path.length === 0 ? o instanceof z.ZodNumber : o instanceof z.ZodObject && String(path[0]) in o.shape))
        : options.find((o) => {
            if (!(o instanceof z.ZodObject)) return false;
            const lit = stripWrappers(o.shape[tag] as z.ZodType);
            return lit instanceof z.ZodLiteral && lit.values.has(tagValue as z.core.util.Literal);
          });
    if (!chosen) return undefined;
    s = chosen;
  }
  if (path.length === 0) return s;
  if (!(s instanceof z.ZodObject)) return undefined;
  const [key, ...rest] = path;
  const child = (s.shape as Record<string, z.ZodType | undefined>)[String(key)];
  return child ? schemaAt(child, valueAt(input, [key!]), rest) : undefined;
}

/** "an integer from 1 to 64": the whole range, so a wrong type is answered with everything the field accepts. */
function integerRange(s: z.ZodType | undefined): string | undefined {
  if (!(s instanceof z.ZodNumber) || !s.isInt) return undefined;
  const lo = s.minValue !== null && s.minValue > Number.MIN_SAFE_INTEGER ? s.minValue : undefined;
  const hi = s.maxValue !== null && s.maxValue < Number.MAX_SAFE_INTEGER ? s.maxValue : undefined;
  if (lo !== undefined && hi !== undefined) return `an integer from ${lo} to ${hi}`;
  if (lo !== undefined) return `an integer ≥ ${lo}`;
  if (hi !== undefined) return `an integer ≤ ${hi}`;
  return 'an integer';
}

function editDistance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diag = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = row[j]!;
      row[j] = Math.min(up + 1, row[j - 1]! + 1, diag + (a[i - 1]!.toLowerCase() === b[j - 1]!.toLowerCase() ? 0 : 1));
      diag = up;
    }
  }
  return row[b.length]!;
}

function unknownFieldMessage(key: string, allowed: readonly string[]): string {
  const near = allowed
    .map((k) => ({ k, d: editDistance(key, k) }))
    .filter(({ k, d }) => d <= Math.max(1, Math.floor(k.length / 3)))
    .sort((x, y) => x.d - y.d)[0];
  const list = allowed.length ? ` (allowed: ${allowed.join(', ')})` : '';
  return `unknown field${list}${near ? `; did you mean "${near.k}"?` : ''}`;
}

function bound(issue: { origin: string; inclusive?: boolean }, n: number | bigint, side: 'min' | 'max'): string {
  if (issue.origin === 'string' || issue.origin === 'array') {
    const unit = issue.origin === 'string' ? 'characters' : 'items';
    if (side === 'min' && Number(n) === 1) return 'must not be empty';
    return `must have ${side === 'min' ? 'at least' : 'at most'} ${n} ${unit}`;
  }
  const op = side === 'min' ? (issue.inclusive ? '≥' : '>') : issue.inclusive ? '≤' : '<';
  return `must be ${op} ${n}`;
}

/** What the field accepts, from zod's structured issue; a message written in the schema is appended as the reason. */
function expectation(issue: z.core.$ZodIssue, atRoot: boolean, fieldSchema: () => z.ZodType | undefined): string {
  const reason = issue.message !== DEFAULT_MESSAGE ? issue.message : undefined;
  const withReason = (s: string) => (reason ? `${s} (${reason})` : s);
  switch (issue.code) {
    case 'invalid_type':
      if (atRoot && issue.expected === 'object') return withReason('expected a JSON object');
      if (issue.expected === 'number' || issue.expected === 'int') {
        const ints = integerRange(fieldSchema());
        if (ints) return withReason(`expected ${ints}`);
      }
      return withReason(`expected ${TYPE_NAMES[issue.expected] ?? issue.expected}`);
    case 'invalid_value':
      return withReason(oneOf(issue.values));
    case 'too_small':
      return withReason(bound(issue, issue.minimum, 'min'));
    case 'too_big':
      return withReason(bound(issue, issue.maximum, 'max'));
    case 'not_multiple_of':
      return withReason(`must be a multiple of ${issue.divisor}`);
    case 'invalid_format':
      return withReason(`must be a valid ${issue.format}`);
    case 'invalid_union':
      if (reason) return reason;
      if (issue.discriminator !== undefined && 'options' in issue && issue.options) return oneOf(issue.options);
      return 'does not match any allowed form';
    default:
      return reason ?? 'is invalid';
  }
}

/** Turns zod's issues into messages with the path, what is allowed and what was received (read from the input). */
function describeIssues(issues: readonly z.core.$ZodIssue[], input: unknown, schema: z.ZodType): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of issues) {
    if (issue.code === 'unrecognized_keys') {
      const at = schemaAt(schema, input, issue.path);
      const allowed = at instanceof z.ZodObject ? Object.keys(at.shape) : [];
      for (const key of issue.keys) out.push({ path: [...issue.path, key].map(String).join('.'), message: unknownFieldMessage(key, allowed) });
      continue;
    }
    const received = valueAt(input, issue.path);
    const got = received === undefined ? 'missing' : `received ${jsonOf(received)}`;
    out.push({ path: issue.path.map(String).join('.'), message: `${expectation(issue, issue.path.length === 0, () => schemaAt(schema, input, issue.path))} — ${got}` });
  }
  return out;
}

export type Checked<T> = { success: true; data: T } | { success: false; issues: ConfigIssue[] };

/** Validates `input` against any schema with this module's messages (preset files use it too). */
export function checkWith<S extends z.ZodType>(schema: S, input: unknown): Checked<z.output<S>> {
  const r = schema.safeParse(input, { error: () => DEFAULT_MESSAGE });
  return r.success ? { success: true, data: r.data } : { success: false, issues: describeIssues(r.error.issues, input, schema) };
}

/** Validation without throwing, for the form's inline messages. */
export function checkRunConfig(input: unknown): Checked<RunConfig> {
  return checkWith(runConfigSchema, input);
}

/**
 * Validate a raw config (parsed JSON) and fill in the defaults. Throws ConfigValidationError listing every problem as
 * `<source>: <path>: <what is allowed> — received <value>`.
 */
export function parseRunConfig(input: unknown, source = 'config'): RunConfig {
  const r = checkRunConfig(input);
  if (!r.success) throw new ConfigValidationError(r.issues, source);
  return r.data;
}
