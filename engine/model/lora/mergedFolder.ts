/**
 * `mars-lab model merge` (issue 30, item 7): a PEFT adapter folded into its base model and written as a Hugging Face
 * model folder that transformers, vLLM and mars-lab load as a plain model:
 *
 *   config.json, model.safetensors   the merged weights in HF's names (float32; formats/checkpoint.ts)
 *   tokenizer.json, tokenizer_config.json (with the chat template), special_tokens_map.json, generation_config.json
 *                                    copied from an HF base folder; from a GGUF base, the tokenizer rebuilt from its
 *                                    metadata (tokenizers/hf/ggufTokenizer.ts), the template from
 *                                    tokenizer.chat_template, bos/eos ids into generation_config.json
 *
 * The folder is written whole or not at all (a temporary folder renamed into place), and an existing `out` is refused.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../base/userError';
import { saveCheckpoint } from '../formats/checkpoint';
import { loadRealModel, type RealModel } from '../realModel';
import { mergeLora } from './loraAdapters';
import { adaptersFromPeft, readPeftAdapter } from './peftAdapter';

const COPIED = ['tokenizer.json', 'tokenizer_config.json', 'special_tokens_map.json', 'generation_config.json'];

/** The tokenizer and generation files of the merged folder, from the base model `real`. */
function tokenizerFiles(real: RealModel): Record<string, string | Uint8Array> {
  if (fs.statSync(real.path).isDirectory()) {
    const files: Record<string, Uint8Array> = {};
    for (const name of COPIED) {
      const file = path.join(real.path, name);
      if (fs.existsSync(file)) files[name] = fs.readFileSync(file);
    }
    return files;
  }
  const { tokenizer, config } = real.tokenizer.hfFiles();
  const id = (text: string | null | undefined) => (text ? real.tokenizer.idOf(text) : undefined);
  const tokenizerConfig = {
    ...config,
    chat_template: real.chat?.template.source,
    model_max_length: real.model.config.max_position_embeddings,
  };
  return {
    'tokenizer.json': JSON.stringify(tokenizer) + '\n',
    'tokenizer_config.json': JSON.stringify(tokenizerConfig, null, 2) + '\n',
    'generation_config.json':
      JSON.stringify({ bos_token_id: id(config.bos_token), eos_token_id: real.stopTokens }, null, 2) + '\n',
  };
}

/**
 * Merges the PEFT adapter folder `adapterDir` into the base model at `basePath` and writes the HF folder `out`.
 * Returns what was merged, for the command's report.
 */
export async function mergeAdapterIntoFolder(
  adapterDir: string,
  basePath: string,
  out: string,
): Promise<{ rank: number; targets: string[]; parameters: number }> {
  if (fs.existsSync(out)) {
    throw new UserError(`--out ${out}: already exists; give a new folder (nothing is overwritten)`);
  }
  const adapter = await readPeftAdapter(adapterDir);
  const real = await loadRealModel(basePath);
  try {
    real.model.lora = adaptersFromPeft(real.model.config, adapter);
    const parameters = real.model.lora.parameterCount();
    mergeLora(real.model);
    await saveCheckpoint(out, real.model, { files: tokenizerFiles(real) });
    return { rank: adapter.spec.rank, targets: adapter.spec.targets, parameters };
  } finally {
    real.model.dispose();
  }
}
