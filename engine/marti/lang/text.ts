/**
 * Spelling of the MARTI world's text in the word tokenizer's normal form (engine/model/tokenizers/wordTokenizer.ts): every text
 * this world writes (programs, statements, examples, feedback) is built as a list of pre-tokens and joined here by the
 * tokenizer's own joiner, so that `decode(encode(text)) === text` and a model's decoded output reads back exactly.
 */
import { SpecialTokenMatcher } from '../../model/tokenizers/specialTokens';
import { WordJoiner, pretokenise } from '../../model/tokenizers/wordNormalForm';

const NO_SPECIALS = new SpecialTokenMatcher([]);

/** Joins pre-tokens (letter runs, single digits, single marks) the way the word tokenizer's decode does. */
export function joinTokens(tokens: readonly string[]): string {
  const joiner = new WordJoiner(NO_SPECIALS);
  for (const t of tokens) joiner.append(t, 'text');
  return joiner.text();
}

/** The pre-tokens of a text, as the word tokenizer cuts it (digits one per token). */
export function textTokens(text: string): string[] {
  return pretokenise(text.normalize('NFC'));
}

/** An integer as pre-tokens: an optional `-`, then one token per digit. */
export function numberTokens(n: number): string[] {
  const digits = [...String(Math.abs(n))];
  return n < 0 ? ['-', ...digits] : digits;
}
