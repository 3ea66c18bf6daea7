/**
 * What a MARTI task op is (OpSpec: program piece, statement phrase, value types) and the helpers the op tables
 * (numberOps.ts, textOps.ts) are written with; ops.ts joins the tables into the catalogue.
 *
 * Value types seen by the generator: `numbers` (list of integers), `number`, `bool` (terminal), `text` (words
 * separated by single spaces) and `words` (list of texts).
 */
export type TaskType = 'numbers' | 'number' | 'bool' | 'text' | 'words';

/** The words that make up text inputs: lengths 2–5 so that "longer than k letters" splits them. */
export const TEXT_WORDS = ['ox', 'cat', 'dog', 'bee', 'bird', 'fish', 'frog', 'lion', 'horse', 'mouse'] as const;

export interface OpSpec {
  /** Family name; with the parameter it forms the op's id ("above3"). */
  name: string;
  from: TaskType;
  to: TaskType;
  /** Parameter values, one drawn uniformly; empty for parameterless ops. */
  params: readonly (number | string)[];
  code: (p: number | string) => string;
  phrase: (p: number | string) => string;
  /** The phrase with the parameter left out ("add some number to each"), for ops that have one: the public examples
   * then carry what the statement does not say, which is what makes feedback worth reading (tests/study/repairProbe.ts). */
  vague?: string;
}

export const range = (lo: number, hi: number): number[] => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
export const none: readonly (number | string)[] = [];

export function op(
  name: string,
  from: TaskType,
  to: TaskType,
  params: readonly (number | string)[],
  code: OpSpec['code'],
  phrase: OpSpec['phrase'],
  vague?: string,
): OpSpec {
  return vague === undefined
    ? { name, from, to, params, code, phrase }
    : { name, from, to, params, code, phrase, vague };
}
