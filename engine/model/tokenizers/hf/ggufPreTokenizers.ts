/**
 * What a GGUF file's `tokenizer.ggml.pre` name stands for, as the tokenizer.json pieces Hugging Face's own files for
 * that model family declare (the file holds only the name; llama.cpp maps names to regexes in src/llama-vocab.cpp,
 * llama_vocab::impl::load and llm_tokenizer_bpe, and convert_hf_to_gguf.py chose the name from the HF tokenizer).
 *
 *   gpt2 (llama.cpp: gpt-2)      ByteLevel with GPT-2's pattern (HF gpt2/tokenizer.json)
 *   smollm, starcoder            \p{N} isolated first, then GPT-2's pattern (HF SmolLM/SmolLM2, StarCoder:
 *                                Digits individual_digits, then ByteLevel; llama.cpp's first regex is "\p{N}")
 *   llama-bpe (llama3, llama-v3) Llama 3's Split pattern, ByteLevel without its own regex, ignore_merges (HF
 *                                Meta-Llama-3/tokenizer.json; llama.cpp sets ignore_merges and add_bos for these)
 *   qwen2                        Qwen2's Split pattern (digits one by one) and the NFC normalizer (HF Qwen2/Qwen2.5
 *                                tokenizer.json: llama.cpp does not normalise, HF does)
 *
 * Any other name is refused by ggufTokenizer.ts in one line naming it: guessing a pre-tokenizer gives a model ids
 * it was never trained on, which no error would reveal later.
 */

/** A Hugging Face tokenizer.json component (normalizer, pre_tokenizer); plain JSON. */
export type JsonComponent = Record<string, unknown>;

export interface PreTokenizerDefinition {
  pre_tokenizer: JsonComponent;
  normalizer: JsonComponent | null;
  /** BPE `ignore_merges`: a whole pre-token found in the vocabulary is one token (Llama 3). */
  ignoreMerges: boolean;
  /** Whether bos is added when the file has no tokenizer.ggml.add_bos_token (llama.cpp's default for the name). */
  addBosByDefault: boolean;
}

const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const QWEN2_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

const byteLevel = (useRegex: boolean): JsonComponent => ({
  type: 'ByteLevel',
  add_prefix_space: false,
  trim_offsets: true,
  use_regex: useRegex,
});

const splitThenBytes = (pattern: string): JsonComponent => ({
  type: 'Sequence',
  pretokenizers: [
    { type: 'Split', pattern: { Regex: pattern }, behavior: 'Isolated', invert: false },
    byteLevel(false),
  ],
});

const GPT2: PreTokenizerDefinition = {
  pre_tokenizer: byteLevel(true),
  normalizer: null,
  ignoreMerges: false,
  addBosByDefault: false,
};
const SMOLLM: PreTokenizerDefinition = {
  pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Digits', individual_digits: true }, byteLevel(true)] },
  normalizer: null,
  ignoreMerges: false,
  addBosByDefault: false,
};
const LLAMA3: PreTokenizerDefinition = {
  pre_tokenizer: splitThenBytes(LLAMA3_PATTERN),
  normalizer: null,
  ignoreMerges: true,
  addBosByDefault: true,
};
const QWEN2: PreTokenizerDefinition = {
  pre_tokenizer: splitThenBytes(QWEN2_PATTERN),
  normalizer: { type: 'NFC' },
  ignoreMerges: false,
  addBosByDefault: false,
};

/** `tokenizer.ggml.pre` names (llama.cpp's spellings and the aliases it accepts) → their definition. */
export const GGUF_PRE_TOKENIZERS: ReadonlyMap<string, PreTokenizerDefinition> = new Map([
  ['gpt-2', GPT2],
  ['gpt2', GPT2],
  ['smollm', SMOLLM],
  ['starcoder', SMOLLM],
  ['llama-bpe', LLAMA3],
  ['llama3', LLAMA3],
  ['llama-v3', LLAMA3],
  ['qwen2', QWEN2],
]);

/** A deep copy, so a rebuilt tokenizer.json never shares objects with the table (or with another tokenizer). */
export function definitionOf(pre: string): PreTokenizerDefinition | undefined {
  const d = GGUF_PRE_TOKENIZERS.get(pre);
  return d === undefined ? undefined : structuredClone<PreTokenizerDefinition>(d);
}
