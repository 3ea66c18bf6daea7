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
  /** The phrase with the parameter left out ("add some number to each"), for ops that have one: the public examples
   * then carry what the statement does not say, which is what makes feedback worth reading (tests/study/repairProbe.ts). */
  vague?: string;
}

const range = (lo: number, hi: number): number[] => Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
const none: readonly (number | string)[] = [];

function op(
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

export const OPS: readonly OpSpec[] = [
  // numbers → numbers
  op(
    'evens',
    'numbers',
    'numbers',
    none,
    () => 'filter (x mod 2 = 0)',
    () => 'keep the even numbers',
  ),
  op(
    'odds',
    'numbers',
    'numbers',
    none,
    () => 'filter (x mod 2 = 1)',
    () => 'keep the odd numbers',
  ),
  op(
    'above',
    'numbers',
    'numbers',
    range(1, 8),
    (k) => `filter (x > ${k})`,
    (k) => `keep the numbers above ${k}`,
    'keep the numbers above some number',
  ),
  op(
    'below',
    'numbers',
    'numbers',
    range(2, 9),
    (k) => `filter (x < ${k})`,
    (k) => `keep the numbers below ${k}`,
    'keep the numbers below some number',
  ),
  op(
    'without',
    'numbers',
    'numbers',
    range(0, 9),
    (k) => `filter (not x = ${k})`,
    (k) => `remove every ${k}`,
    'remove every copy of some number',
  ),
  op(
    'times',
    'numbers',
    'numbers',
    range(2, 5),
    (k) => `map (x * ${k})`,
    (k) => `multiply each by ${k}`,
    'multiply each by some number',
  ),
  op(
    'plus',
    'numbers',
    'numbers',
    range(1, 9),
    (k) => `map (x + ${k})`,
    (k) => `add ${k} to each`,
    'add some number to each',
  ),
  op(
    'minus',
    'numbers',
    'numbers',
    range(1, 9),
    (k) => `map (x - ${k})`,
    (k) => `subtract ${k} from each`,
    'subtract some number from each',
  ),
  op(
    'remainder',
    'numbers',
    'numbers',
    range(2, 5),
    (k) => `map (x mod ${k})`,
    (k) => `replace each by its remainder mod ${k}`,
    'replace each by its remainder mod some number',
  ),
  op(
    'divide',
    'numbers',
    'numbers',
    range(2, 4),
    (k) => `map (x div ${k})`,
    (k) => `divide each by ${k}`,
    'divide each by some number',
  ),
  op(
    'square',
    'numbers',
    'numbers',
    none,
    () => 'map (x * x)',
    () => 'square each',
  ),
  op(
    'cap',
    'numbers',
    'numbers',
    range(2, 8),
    (k) => `map (if x > ${k} then ${k} else x)`,
    (k) => `cap each at ${k}`,
    'cap each at some number',
  ),
  op(
    'sort',
    'numbers',
    'numbers',
    none,
    () => 'sort',
    () => 'sort them',
  ),
  op(
    'reverse',
    'numbers',
    'numbers',
    none,
    () => 'reverse',
    () => 'reverse the order',
  ),
  op(
    'take',
    'numbers',
    'numbers',
    range(1, 4),
    (k) => `take ${k}`,
    (k) => `keep the first ${k}`,
    'keep the first few',
  ),
  op(
    'drop',
    'numbers',
    'numbers',
    range(1, 3),
    (k) => `drop ${k}`,
    (k) => `drop the first ${k}`,
    'drop the first few',
  ),
  op(
    'unique',
    'numbers',
    'numbers',
    none,
    () => 'unique',
    () => 'remove duplicates',
  ),
  // numbers → number
  op(
    'sum',
    'numbers',
    'number',
    none,
    () => 'sum',
    () => 'add them up',
  ),
  op(
    'count',
    'numbers',
    'number',
    none,
    () => 'len',
    () => 'count them',
  ),
  op(
    'max',
    'numbers',
    'number',
    none,
    () => 'max',
    () => 'take the largest',
  ),
  op(
    'min',
    'numbers',
    'number',
    none,
    () => 'min',
    () => 'take the smallest',
  ),
  op(
    'first',
    'numbers',
    'number',
    none,
    () => 'first',
    () => 'take the first one',
  ),
  op(
    'last',
    'numbers',
    'number',
    none,
    () => 'last',
    () => 'take the last one',
  ),
  // number → number, number → bool
  op(
    'add',
    'number',
    'number',
    range(1, 9),
    (k) => `apply (x + ${k})`,
    (k) => `add ${k}`,
    'add some number',
  ),
  op(
    'multiply',
    'number',
    'number',
    range(2, 5),
    (k) => `apply (x * ${k})`,
    (k) => `multiply by ${k}`,
    'multiply by some number',
  ),
  op(
    'mod',
    'number',
    'number',
    range(2, 5),
    (k) => `apply (x mod ${k})`,
    (k) => `take the remainder mod ${k}`,
    'take the remainder mod some number',
  ),
  op(
    'isAbove',
    'number',
    'bool',
    range(1, 20),
    (k) => `apply (x > ${k})`,
    (k) => `check if it is above ${k}`,
    'check if it is above some number',
  ),
  op(
    'isEven',
    'number',
    'bool',
    none,
    () => 'apply (x mod 2 = 0)',
    () => 'check if it is even',
  ),
  // text → …
  op(
    'split',
    'text',
    'words',
    none,
    () => 'split',
    () => 'split into words',
  ),
  op(
    'upper',
    'text',
    'text',
    none,
    () => 'upper',
    () => 'make it upper case',
  ),
  op(
    'letters',
    'text',
    'number',
    none,
    () => 'len',
    () => 'count the letters',
  ),
  // words → …
  op(
    'sortWords',
    'words',
    'words',
    none,
    () => 'sort',
    () => 'sort them',
  ),
  op(
    'reverseWords',
    'words',
    'words',
    none,
    () => 'reverse',
    () => 'reverse the order',
  ),
  op(
    'takeWords',
    'words',
    'words',
    range(1, 4),
    (k) => `take ${k}`,
    (k) => `keep the first ${k}`,
    'keep the first few',
  ),
  op(
    'dropWords',
    'words',
    'words',
    range(1, 3),
    (k) => `drop ${k}`,
    (k) => `drop the first ${k}`,
    'drop the first few',
  ),
  op(
    'uniqueWords',
    'words',
    'words',
    none,
    () => 'unique',
    () => 'remove duplicates',
  ),
  op(
    'keepWord',
    'words',
    'words',
    TEXT_WORDS,
    (w) => `filter (x = "${w}")`,
    (w) => `keep only the word ${w}`,
    'keep only some word',
  ),
  op(
    'dropWord',
    'words',
    'words',
    TEXT_WORDS,
    (w) => `filter (not x = "${w}")`,
    (w) => `remove the word ${w}`,
    'remove some word',
  ),
  op(
    'longer',
    'words',
    'words',
    range(2, 4),
    (k) => `filter (len x > ${k})`,
    (k) => `keep the words longer than ${k} letters`,
    'keep the words longer than some length',
  ),
  op(
    'shorter',
    'words',
    'words',
    range(3, 5),
    (k) => `filter (len x < ${k})`,
    (k) => `keep the words shorter than ${k} letters`,
    'keep the words shorter than some length',
  ),
  op(
    'upperEach',
    'words',
    'words',
    none,
    () => 'map (upper x)',
    () => 'make each word upper case',
  ),
  op(
    'lengths',
    'words',
    'numbers',
    none,
    () => 'map (len x)',
    () => 'replace each word by its length',
  ),
  op(
    'join',
    'words',
    'text',
    none,
    () => 'join',
    () => 'join the words',
  ),
  op(
    'countWords',
    'words',
    'number',
    none,
    () => 'len',
    () => 'count the words',
  ),
  op(
    'firstWord',
    'words',
    'text',
    none,
    () => 'first',
    () => 'take the first word',
  ),
  op(
    'lastWord',
    'words',
    'text',
    none,
    () => 'last',
    () => 'take the last word',
  ),
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
    for (const w of o.vague?.split(' ') ?? []) words.add(w);
  }
  return [...words];
}

let byId: Map<string, OpInstance> | null = null;

/** The op instance an id names ("above3" → above with 3); inverse of opId. */
export function opById(id: string): OpInstance {
  if (byId === null) {
    byId = new Map();
    for (const spec of OPS) {
      for (const param of spec.params.length === 0 ? [0] : spec.params) {
        const o = { spec, param };
        if (byId.has(opId(o))) throw new Error(`MARTI op catalogue has two ops with id ${opId(o)}`);
        byId.set(opId(o), o);
      }
    }
  }
  const o = byId.get(id);
  if (o === undefined) throw new Error(`unknown MARTI op id ${JSON.stringify(id)}`);
  return o;
}
