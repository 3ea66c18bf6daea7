/** The `seqgrpo` member of the run configuration: the shared sections plus the sequence task. */
import { z } from 'zod';
import { checkCommon, commonFields, field, SEQ_TASK_KINDS, seedNumber, type Same } from '../training/configSections';
import type { SeqTaskKind } from './task';

true satisfies Same<(typeof SEQ_TASK_KINDS)[number], SeqTaskKind>;

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
      z.int().min(2, { error: 'a group of one has no baseline; docs/algorithms.md §2.9' }).max(1024).default(16),
      'Group size (G)',
      'Rollouts sampled per prompt; their rewards are normalised within the group (GRPO).',
    ),
    promptsPerStep: field(
      z.int().min(1).max(1024).default(1),
      'Prompts per step',
      'Distinct prompts per training step, each with its own group.',
    ),
    trainSeed: field(seedNumber().default(1), 'Training-item seed', 'Seed of the stream that draws training inputs.'),
    evalSeed: field(
      seedNumber().default(2),
      'Evaluation seed',
      'Seed that chooses the held-out inputs and the evaluation items.',
    ),
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

export type SeqGrpoConfig = z.output<typeof seqgrpoConfigSchema>;
export type SeqGrpoTaskConfig = z.output<typeof seqgrpoTaskSchema>;
