/**
 * The operations a MARTI task's hidden target is built from: each is a piece of program, the words that describe it
 * in the statement, and the value types it maps between. A target is a chain of 2–5 of them whose types line up.
 *
 * Value types seen by the generator: `numbers` (list of integers), `number`, `bool` (terminal), `text` (words
 * separated by single spaces) and `words` (list of texts). Every phrase uses only lowercase words, digits and the
 * TEXT_WORDS, so statements stay inside the world's vocabulary.
 */
import type { Rng } from '../../random/prng';

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
}

const range = (lo: number, hi: number): number[] => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
const none: readonly (number | string)[] = [];

function op(name: string, from: TaskType, to: TaskType, params: readonly (number | string)[], code: OpSpec['code'], phrase: OpSpec['phrase']): OpSpec {
  return { name, from, to, params, code, phrase };
}

export const OPS: readonly OpSpec[] = [
  // numbers → numbers
  op('evens', 'numbers', 'numbers', none, () => 'filter (x mod 2 = 0)', () => 'keep the even numbers'),
  op('odds', 'numbers', 'numbers', none, () => 'filter (x mod 2 = 1)', () => 'keep the odd numbers'),
  op('above', 'numbers', 'numbers', range(1, 8), (k) => `filter (x > ${k})`, (k) => `keep the numbers above ${k}`),
  op('below', 'numbers', 'numbers', range(2, 9), (k) => `filter (x < ${k})`, (k) => `keep the numbers below ${k}`),
  op('without', 'numbers', 'numbers', range(0, 9), (k) => `filter (not x = ${k})`, (k) => `remove every ${k}`),
  op('times', 'numbers', 'numbers', range(2, 5), (k) => `map (x * ${k})`, (k) => `multiply each by ${k}`),
  op('plus', 'numbers', 'numbers', range(1, 9), (k) => `map (x + ${k})`, (k) => `add ${k} to each`),
  op('minus', 'numbers', 'numbers', range(1, 9), (k) => `map (x - ${k})`, (k) => `subtract ${k} from each`),
  op('remainder', 'numbers', 'numbers', range(2, 5), (k) => `map (x mod ${k})`, (k) => `replace each by its remainder mod ${k}`),
  op('divide', 'numbers', 'numbers', range(2, 4), (k) => `map (x div ${k})`, (k) => `divide each by ${k}`),
  op('square', 'numbers', 'numbers', none, () => 'map (x * x)', () => 'square each'),
  op('cap', 'numbers', 'numbers', range(2, 8), (k) => `map (if x > ${k} then ${k} else x)`, (k) => `cap each at ${k}`),
  op('sort', 'numbers', 'numbers', none, () => 'sort', () => 'sort them'),
  op('reverse', 'numbers', 'numbers', none, () => 'reverse', () => 'reverse the order'),
  op('take', 'numbers', 'numbers', range(1, 4), (k) => `take ${k}`, (k) => `keep the first ${k}`),
  op('drop', 'numbers', 'numbers', range(1, 3), (k) => `drop ${k}`, (k) => `drop the first ${k}`),
  op('unique', 'numbers', 'numbers', none, () => 'unique', () => 'remove duplicates'),
  // numbers → number
  op('sum', 'numbers', 'number', none, () => 'sum', () => 'add them up'),
  op('count', 'numbers', 'number', none, () => 'len', () => 'count them'),
  op('max', 'numbers', 'number', none, () => 'max', () => 'take the largest'),
  op('min', 'numbers', 'number', none, () => 'min', () => 'take the smallest'),
  op('first', 'numbers', 'number', none, () => 'first', () => 'take the first one'),
  op('last', 'numbers', 'number', none, () => 'last', () => 'take the last one'),
  // number → number, number → bool
  op('add', 'number', 'number', range(1, 9), (k) => `apply (x + ${k})`, (k) => `add ${k}`),
  op('multiply', 'number', 'number', range(2, 5), (k) => `apply (x * ${k})`, (k) => `multiply by ${k}`),
  op('mod', 'number', 'number', range(2, 5), (k) => `apply (x mod ${k})`, (k) => `take the remainder mod ${k}`),
  op('isAbove', 'number', 'bool', range(1, 20), (k) => `apply (x > ${k})`, (k) => `check if it is above ${k}`),
  op('isEven', 'number', 'bool', none, () => 'apply (x mod 2 = 0)', () => 'check if it is even'),
  // text → …
  op('split', 'text', 'words', none, () => 'split', () => 'split into words'),
  op('upper', 'text', 'text', none, () => 'upper', () => 'make it upper case'),
  op('letters', 'text', 'number', none, () => 'len', () => 'count the letters'),
  // words → …
  op('sortWords', 'words', 'words', none, () => 'sort', () => 'sort them'),
  op('reverseWords', 'words', 'words', none, () => 'reverse', () => 'reverse the order'),
  op('takeWords', 'words', 'words', range(1, 4), (k) => `take ${k}`, (k) => `keep the first ${k}`),
  op('dropWords', 'words', 'words', range(1, 3), (k) => `drop ${k}`, (k) => `drop the first ${k}`),
  op('uniqueWords', 'words', 'words', none, () => 'unique', () => 'remove duplicates'),
  op('keepWord', 'words', 'words', TEXT_WORDS, (w) => `filter (x = "${w}")`, (w) => `keep only the word ${w}`),
  op('dropWord', 'words', 'words', TEXT_WORDS, (w) => `filter (not x = "${w}")`, (w) => `remove the word ${w}`),
  op('longer', 'words', 'words', range(2, 4), (k) => `filter (len x > ${k})`, (k) => `keep the words longer than ${k} letters`),
  op('shorter', 'words', 'words', range(3, 5), (k) => `filter (len x < ${k})`, (k) => `keep the words shorter than ${k} letters`),
  op('upperEach', 'words', 'words', none, () => 'map (upper x)', () => 'make each word upper case'),
  op('lengths', 'words', 'numbers', none, () => 'map (len x)', () => 'replace each word by its length'),
  op('join', 'words', 'text', none, () => 'join', () => 'join the words'),
  op('countWords', 'words', 'number', none, () => 'len', () => 'count the words'),
  op('firstWord', 'words', 'text', none, () => 'first', () => 'take the first word'),
  op('lastWord', 'words', 'text', none, () => 'last', () => 'take the last word'),
];

/** One chosen op with its parameter. */
export interface OpInstance {
  spec: OpSpec;
  param: number | string;
}

export function opId(o: OpInstance): string {
  return o.spec.params.length === 0 ? o.spec.name : `${o.spec.name}${o.param}`;
}

export function opsFrom(type: TaskType): OpSpec[] {
  return OPS.filter((o) => o.from === type);
}

export function drawOp(rng: Rng, from: TaskType, avoid: string | null): OpInstance | null {
  const choices = opsFrom(from).filter((o) => o.name !== avoid);
  if (choices.length === 0) return null;
  const spec = choices[rng.int(choices.length)]!;
  const param = spec.params.length === 0 ? 0 : spec.params[rng.int(spec.params.length)]!;
  return { spec, param };
}

/** The words the statements can use (the numbers 0–20 as digits are covered by the vocabulary's digits). */
export function statementWords(): string[] {
  const words = new Set<string>(['then']);
  for (const o of OPS) {
    for (const p of o.params.length === 0 ? [0] : o.params) {
      for (const w of o.phrase(p).split(' ')) if (!/^[0-9]+$/.test(w)) words.add(w);
    }
  }
  return [...words];
}
