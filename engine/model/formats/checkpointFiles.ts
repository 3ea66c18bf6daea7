/** File names of a checkpoint folder; a module of its own so hosts that must not load TensorFlow.js can use them. */
import fs from 'node:fs';
import path from 'node:path';

export const CONFIG_FILE = 'config.json';
export const WEIGHTS_FILE = 'model.safetensors';
export const OPTIMIZER_FILE = 'optimizer.safetensors';
export const TRAINER_STATE_FILE = 'trainer_state.json';
/**
 * The checkpoint's tokenizer in mars-lab's own format (tokenizerFile.ts), named for what it is: Hugging Face's
 * loaders look for `tokenizer.json` in their `tokenizers` format, which this is not (the word tokenizer's splitting
 * and byte fallback have no exact equivalent there), so a file of that name made them fail on it.
 */
export const TOKENIZER_FILE = 'mars-lab-tokenizer.json';
/** The name checkpoints written before the rename (and resources/…/base-tiny) give the same file; still read. */
export const LEGACY_TOKENIZER_FILE = 'tokenizer.json';
/** What makes a checkpoint folder complete enough to load. */
export const CHECKPOINT_REQUIRED_FILES = [CONFIG_FILE, WEIGHTS_FILE] as const;

/** mars-lab's own tokenizer files are well under this; a larger tokenizer.json is an HF one (Qwen's is 7 MB). */
const OWN_TOKENIZER_MAX_BYTES = 4 << 20;

/**
 * Whether `file` is a tokenizer in mars-lab's format (a JSON object whose "type" is "word" or "byte"), not a Hugging
 * Face tokenizer.json of the same name (an HF folder's, which has a "model" instead).
 */
function isOwnTokenizer(file: string): boolean {
  try {
    if (fs.statSync(file).size > OWN_TOKENIZER_MAX_BYTES) return false;
    const type = (JSON.parse(fs.readFileSync(file, 'utf8')) as { type?: unknown } | null)?.type;
    return type === 'word' || type === 'byte';
  } catch {
    return false;
  }
}

/**
 * The tokenizer file of the checkpoint folder `dir`: mars-lab-tokenizer.json, else an older checkpoint's
 * tokenizer.json when only that is there and it is in mars-lab's format; otherwise (none, or an HF folder's
 * tokenizer.json) the new name, which does not exist, for the caller's message.
 */
export function checkpointTokenizerFile(dir: string): string {
  const current = path.join(dir, TOKENIZER_FILE);
  if (fs.existsSync(current)) return current;
  const legacy = path.join(dir, LEGACY_TOKENIZER_FILE);
  return isOwnTokenizer(legacy) ? legacy : current;
}
