/**
 * What every tokenizer offers, and loading / saving tokenizer files (format: tokenizerFile.ts).
 *
 * Special tokens are declared in the tokenizer file and reached through `specials` (pad, bos, eos, unk, and any
 * declared tag by its role) or `idOf('<search>')`; trainers never hard-code ids or texts.
 * Implementations: WordTokenizer (wordTokenizer.ts; vocabularies from buildWordVocab in wordVocab.ts) and
 * ByteTokenizer (byteTokenizer.ts). Each documents its round-trip guarantee.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { ByteTokenizer } from './byteTokenizer';
import type { SpecialTokens } from './specialTokens';
import {
  TOKENIZER_TYPES,
  TokenizerFileError,
  isPlainObject,
  type ByteTokenizerFile,
  type TokenizerFile,
  type WordTokenizerFile,
} from './tokenizerFile';
import { WordTokenizer } from './wordTokenizer';
import { jsonParseProblem } from '../../base/boundedText';

export type { SpecialTokens } from './specialTokens';
export type { TokenizerFile, WordTokenizerFile, ByteTokenizerFile } from './tokenizerFile';
export { TokenizerFileError, UnknownTokenError } from './tokenizerFile';
export { WordTokenizer } from './wordTokenizer';
export { ByteTokenizer } from './byteTokenizer';
export { buildWordVocab, type BuildWordVocabOptions } from './wordVocab';

export interface DecodeOptions {
  /** Leave out every special token (tags, bos/eos, pad and unk). */
  skipSpecial?: boolean;
}

export interface Tokenizer {
  readonly vocabSize: number;
  readonly specials: SpecialTokens;
  /** Text to ids. A special's literal text inside `text` becomes that single token. Adds no bos/eos. */
  encode(text: string): number[];
  /** Ids to text; throws a RangeError on an id outside [0, vocabSize). */
  decode(ids: ArrayLike<number>, opts?: DecodeOptions): string;
  /** The id of a token by its exact text (a special's text, a word, or `<0xNN>`); throws UnknownTokenError naming it. */
  idOf(token: string): number;
  tokenOf(id: number): string;
  /** Whether `id` is a declared special (tags, pad, bos, eos, unk). */
  isSpecial(id: number): boolean;
  /** The tokenizer file that recreates this tokenizer. */
  toJSON(): TokenizerFile;
}

/** Builds a tokenizer from a parsed tokenizer file; `source` (the path) is named in every error. */
export function tokenizerFromJSON(obj: unknown, source = '(tokenizer JSON)'): Tokenizer {
  if (!isPlainObject(obj)) {
    throw new TokenizerFileError(
      source,
      '(root)',
      `must be a JSON object with a "type" of ${TOKENIZER_TYPES.map((t) => `"${t}"`).join(' or ')}`,
    );
  }
  switch (obj.type) {
    case 'word':
      return new WordTokenizer(obj as unknown as WordTokenizerFile, source);
    case 'byte':
      return new ByteTokenizer(obj as unknown as ByteTokenizerFile, source);
    default:
      throw new TokenizerFileError(
        source,
        'type',
        `is ${JSON.stringify(obj.type)}; it must be ${TOKENIZER_TYPES.map((t) => `"${t}"`).join(' or ')}`,
      );
  }
}

export async function loadTokenizer(path: string): Promise<Tokenizer> {
  const text = await readFile(path, 'utf8');
  let obj: unknown;
  try {
    obj = JSON.parse(text);
  } catch (err) {
    throw new TokenizerFileError(
      path,
      '(root)',
      `is not valid JSON (${jsonParseProblem(err)}); fix the file or regenerate it with saveTokenizer`,
    );
  }
  return tokenizerFromJSON(obj, path);
}

/** Writes the tokenizer file (pretty-printed; one token per line keeps diffs readable). Plain write, not atomic. */
export async function saveTokenizer(path: string, tokenizer: Tokenizer): Promise<void> {
  await writeFile(path, formatTokenizerFile(tokenizer.toJSON()));
}

function formatTokenizerFile(file: TokenizerFile): string {
  const { tokens, ...rest } = file as TokenizerFile & { tokens?: string[] };
  const head = JSON.stringify(rest, null, 2);
  if (tokens === undefined) return head + '\n';
  const body = tokens.map((t) => '    ' + JSON.stringify(t)).join(',\n');
  return `${head.slice(0, -2)},\n  "tokens": [\n${body}\n  ]\n}\n`;
}
