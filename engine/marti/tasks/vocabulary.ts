/**
 * Every word the MARTI world writes, the same for every seed: the language (keywords, symbols, digits), the text
 * words in both cases, statement phrases, prompt and feedback words, error messages, and the marks the layouts use.
 * The trainer builds its word tokenizer from this list (case-sensitive: `lowercase` off, since upper-case words are
 * values) plus its own specials and role prompts. Tests check that statements, programs, prompts and feedback all
 * cut into these words.
 */
import { ERROR_WORDS } from '../lang/errors';
import { DIGITS, SYMBOLS, languageKeywords } from '../lang/syntax';
import { PROMPT_WORDS } from '../prompts';
import { TEXT_WORDS, statementWords } from './ops';
import { FEEDBACK_WORDS } from './scoring';

/** Marks used by prompts, feedback and value display: ':' '.' ';' and '…' (a cut list), '?' (a word shown hidden). */
export const LAYOUT_MARKS = [':', '.', ';', '…', '?'] as const;

export function martiVocabulary(): string[] {
  const words = [
    ...DIGITS,
    ...SYMBOLS,
    ...LAYOUT_MARKS,
    ...languageKeywords(),
    ...TEXT_WORDS,
    ...TEXT_WORDS.map((w) => w.toUpperCase()),
    ...statementWords(),
    ...PROMPT_WORDS,
    ...FEEDBACK_WORDS,
    ...ERROR_WORDS,
  ];
  return [...new Set(words)];
}
