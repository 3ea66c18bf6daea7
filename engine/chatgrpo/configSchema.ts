/**
 * The `chatgrpo` member of the run configuration (issue 30, item 7): a real pretrained model (a name `model fetch`
 * knows, a .gguf file or an HF folder) trained by GRPO on a verifiable text task through its own tokenizer and chat
 * template, with LoRA adapters (PEFT's layout in every checkpoint) or every weight. The shared sections, with a model
 * section of its own: the architecture is the file's.
 */
import { z } from 'zod';
import { checkCommon, commonFields, field, seedNumber } from '../training/configSections';
import { chatModelSchema } from '../training/realModelSection';

export const chatTaskSchema = z
  .strictObject({
    kind: field(
      z.literal('addition').default('addition'),
      'Task',
      'addition: "What is a + b?", scored from the reply.',
    ),
    maxOperand: field(z.int().min(3).max(9999).default(50), 'Largest operand', 'Operands are drawn from 0 to this.'),
    instruction: field(
      z.string().max(500).default('Answer with the number only.'),
      'Instruction',
      'The sentence after each question: the format the reward checks.',
    ),
    groupSize: field(
      z.int().min(2, { error: 'a group of one has no baseline; docs/algorithms.md §2.9' }).max(256).default(8),
      'Group size (G)',
      'Replies sampled per question; their rewards are normalised within the group (GRPO).',
    ),
    promptsPerStep: field(z.int().min(1).max(256).default(2), 'Questions per step', 'Distinct questions a step.'),
    maxNewTokens: field(
      z.int().min(1).max(4096).default(16),
      'Reply tokens',
      'Most tokens a reply may have; it ends earlier at the model’s end-of-turn token.',
    ),
    trainSeed: field(
      seedNumber().default(1),
      'Training-item seed',
      'Seed of the stream that draws training questions.',
    ),
    evalSeed: field(seedNumber().default(2), 'Evaluation seed', 'Seed that chooses the held-out questions.'),
    heldoutFraction: field(
      z.number().gt(0).lt(1).default(0.2),
      'Held-out share',
      'Share of the operand pairs reserved for evaluation and never trained on.',
    ),
  })
  .superRefine((t, ctx) => {
    if (t.trainSeed === t.evalSeed) {
      ctx.addIssue({
        code: 'custom',
        path: ['evalSeed'],
        message: `must differ from task.trainSeed (${t.trainSeed})`,
      });
    }
  });

export const chatgrpoConfigSchema = z
  .strictObject({
    algorithm: field(
      z.literal('chatgrpo'),
      'Algorithm',
      'chatgrpo: a real pretrained model learns a verifiable text task by GRPO, through its own tokenizer and chat template.',
    ),
    ...commonFields,
    model: field(chatModelSchema.prefault({}), 'Model', 'The real model trained, and how (LoRA or every weight).'),
    task: field(chatTaskSchema.prefault({}), 'Task', 'The questions asked and how replies are scored.'),
  })
  .superRefine(checkCommon);

export type ChatGrpoConfig = z.output<typeof chatgrpoConfigSchema>;
