/**
 * Typed failures of the MARTI language. `run` returns them as values and never throws (docs/algorithms.md §3.12: a bad
 * program scores 0 and gets feedback; it never stops the trainer). Messages use only vocabulary words (language
 * keywords, digits and a few plain words listed in ERROR_WORDS), so rich feedback (§3.10) can quote them to a model.
 */

export type LangErrorKind = 'parse' | 'timeout' | 'memory' | 'runtime';

export interface LangError {
  kind: LangErrorKind;
  message: string;
  /** Character offset in the program text: where parsing stopped, or the stage or expression that failed. */
  position?: number;
}

/** Thrown inside the lexer, parser and evaluator only; `parse` and `run` turn it into a `LangError` value. */
export class LangFailure extends Error {
  constructor(readonly error: LangError) {
    super(`${error.kind}: ${error.message}`);
  }
}

export function fail(kind: LangErrorKind, message: string, position?: number): never {
  throw new LangFailure(position === undefined ? { kind, message } : { kind, message, position });
}

/** The plain words error messages may use besides language keywords, symbols and digits. */
export const ERROR_WORDS = [
  'expected',
  'found',
  'end',
  'of',
  'program',
  'number',
  'word',
  'text',
  'list',
  'bool',
  'unknown',
  'character',
  'too',
  'long',
  'deep',
  'nesting',
  'stage',
  'expression',
  'needs',
  'a',
  'an',
  'empty',
  'by',
  'zero',
  'division',
  'large',
  'many',
  'cells',
  'step',
  'budget',
  'used',
  'up',
  'letters',
  'in',
  'numbers',
  'words',
  'or',
  'same',
  'type',
  'below',
  'two',
  'lists',
  'texts',
  'nonempty',
  'value',
  'at',
  'least',
  'stack',
  'closing',
  'quote',
  'only',
  'internal',
] as const;
