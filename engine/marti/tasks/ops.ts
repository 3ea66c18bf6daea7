/**
 * The operations a MARTI task's hidden target is built from: each is a piece of program, the words that describe it
 * in the statement, and the value types it maps between. A target is a chain of 2–5 of them whose types line up.
 *
 * Value types seen by the generator: `numbers` (list of integers), `number`, `bool` (terminal), `text` (words
 * separated by single spaces) and `words` (list of texts). Every phrase uses only lowercase words, digits and the
 * TEXT_WORDS, so statements stay inside the world's vocabulary.
 *
 * The op tables live by family (numberOps.ts, textOps.ts, written with opSpec.ts); this file joins them, in that
 * order, into the catalogue OPS and answers lookups on it.
 */
import type { Rng } from '../../random/prng';
import { NUMBER_OPS } from './numberOps';
import type { OpSpec, TaskType } from './opSpec';
import { TEXT_OPS } from './textOps';

export { TEXT_WORDS, type OpSpec, type TaskType } from './opSpec';

export const OPS: readonly OpSpec[] = [...NUMBER_OPS, ...TEXT_OPS];

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
