/**
 * The closed syntax of the MARTI coding world's language (docs/algorithms.md §3: nodes are whole programs). One place lists
 * every keyword, built-in and symbol, so that the lexer, the printer and the tokenizer vocabulary agree.
 *
 * The surface is chosen for a word-level tokenizer (engine/model/tokenizers/wordNormalForm.ts): every token is a lowercase letter
 * run, a single digit, or a single punctuation mark, so a program is spelt with a few dozen vocabulary entries. Integer
 * division and remainder are the words `div` and `mod` because `/` and `%` are glued to their neighbours by the
 * tokenizer's joining rules; comparisons are single characters (`<`, `>`, `=`) because a two-character operator would
 * be two tokens that decoding might space apart.
 */

/** Built-ins taking one value; each is both a pipeline stage (`| sum`) and an expression function (`sum x`). */
export const UNARY_FUNCTIONS = [
  'sort',
  'reverse',
  'sum',
  'len',
  'max',
  'min',
  'first',
  'last',
  'unique',
  'split',
  'join',
  'upper',
  'lower',
  'abs',
  'range',
] as const;
export type UnaryFunction = (typeof UNARY_FUNCTIONS)[number];

/** Stages that take an argument expression: `map (x * 2)`, `take 3`, `while (x > 0) (x - 1)`. */
export const ARG_STAGES = ['map', 'filter', 'apply', 'take', 'drop', 'while'] as const;
export type ArgStage = (typeof ARG_STAGES)[number];

export const EXPRESSION_KEYWORDS = [
  'x',
  'if',
  'then',
  'else',
  'and',
  'or',
  'not',
  'div',
  'mod',
  'true',
  'false',
] as const;

/** Single-character symbols. `"` delimits text literals, `|` separates stages. */
export const SYMBOLS = ['(', ')', '[', ']', ',', '"', '|', '+', '-', '*', '<', '>', '='] as const;
export type SymbolToken = (typeof SYMBOLS)[number];

export const DIGITS = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'] as const;

/** Every letter-run keyword of the language. */
export function languageKeywords(): string[] {
  return [...ARG_STAGES, ...UNARY_FUNCTIONS, ...EXPRESSION_KEYWORDS];
}

const UNARY_SET: ReadonlySet<string> = new Set(UNARY_FUNCTIONS);
export function isUnaryFunction(word: string): word is UnaryFunction {
  return UNARY_SET.has(word);
}

const ARG_STAGE_SET: ReadonlySet<string> = new Set(ARG_STAGES);
export function isArgStage(word: string): word is ArgStage {
  return ARG_STAGE_SET.has(word);
}
