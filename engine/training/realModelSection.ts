/**
 * The model section of a run that trains a real pretrained model (chatgrpo, martipy): the model (a name `model fetch`
 * knows, a .gguf file or an HF folder) and how it is trained (LoRA adapters in PEFT's layout, or every weight). Shared
 * here so that the algorithms that use it stay apart (npm run deps: algorithms-apart).
 */
import { z } from 'zod';
import { loraSpecSchema, LORA_TARGET_NAMES } from '../model/lora/loraAdapters';
import { field } from './configSections';

/** The real model fetched by `npm test` and the presets' default. */
export const DEFAULT_REAL_MODEL = 'smollm2-135m-instruct';

export const chatModelSchema = z.strictObject({
  path: field(
    z.string().min(1).max(4096).default(DEFAULT_REAL_MODEL),
    'Model',
    'A real model: a name `mars-lab model fetch` knows (fetch it first), a .gguf file or a Hugging Face folder (Llama, Qwen2, Qwen3).',
  ),
  lora: field(
    loraSpecSchema.nullable().default(() => ({ rank: 8, alpha: 16, dropout: 0, targets: [...LORA_TARGET_NAMES] })),
    'LoRA',
    'Low-rank adapters on the chosen projections (rank, alpha, dropout, targets), the base frozen; null trains every weight.',
  ),
});
