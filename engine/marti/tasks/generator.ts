/**
 * Seeded MARTI coding tasks (docs/algorithms.md §3.2–3.3): a hidden target program of 2–5 operations (ops.ts), a statement
 * describing the operations in order ("keep the even numbers then multiply each by 2 then add them up"), public tests
 * shown to agents and private tests used only for metrics.
 *
 * With probability `vagueShare` an op's parameter is left out of the statement ("add some number to each"); the
 * public examples show it. This is what makes feedback worth reading: a program with the right operations and a wrong
 * constant is one edit from the target, and "correct for k of M" says when a constant is right (tests/study/repairProbe.ts).
 *
 * A target is rejected and redrawn when it is degenerate on its own tests:
 *   - its output is the same for every test, or the public tests show fewer than two distinct outputs;
 *   - some proper sub-pipeline (ops removed, order kept; the empty one is the identity) gives the same outputs on every
 *     test, so an op would be invisible (e.g. "sort" before "sum");
 *   - it errors on the inputs: inputs it fails on are redrawn, and the target is dropped when too few inputs work.
 *
 * Splits: a task seed belongs to one split (taskSeeds, mirroring worldSplits.ts), and the target's canonical text is
 * hashed to a side, so no held-out target text can ever be a training target (nor a pretraining-corpus program) at any
 * sizes. Within a split, `generateTasks` skips repeated targets.
 */
import { Rng } from '../../random/prng';
import { UserError } from '../../base/userError';
import { run } from '../../marti/lang/interpreter';
import { parse } from '../../marti/lang/parser';
import { printProgram } from '../../marti/lang/printer';
import { joinTokens, textTokens } from '../../marti/lang/text';
import { valueEquals, valueKey, valueTokens, type Value } from '../../marti/lang/values';
import { TEXT_WORDS, drawOp, opId, opsFrom, type OpInstance, type TaskType } from './ops';

export const TASK_SPLITS = ['train', 'heldout'] as const;
export type TaskSplit = (typeof TASK_SPLITS)[number];

export interface TestCase {
  input: Value;
  expected: Value;
}

export interface MartiTask {
  /** `${split}-${index}` from generateTasks, or `task-${seed}`. */
  id: string;
  split: TaskSplit;
  seed: number;
  inputKind: 'numbers' | 'text';
  statement: string;
  /** The hidden target's canonical text (printer.ts). */
  target: string;
  /** The target's ops in order, e.g. ["evens", "times2", "sum"]. */
  ops: string[];
  /** Per op: whether the statement leaves its parameter out ("add some number to each"). */
  vague: boolean[];
  publicTests: TestCase[];
  privateTests: TestCase[];
}

export interface TaskSpec {
  minOps: number;
  maxOps: number;
  publicTests: number;
  privateTests: number;
  /** Share of tasks whose input is a list of numbers (the rest take a text). */
  numbersShare: number;
  /** Input list length [min, max] and values 0…maxValue. */
  listLength: [number, number];
  maxValue: number;
  /** Words in a text input [min, max]. */
  textWords: [number, number];
  /** Apply the degeneracy checks (the pretraining corpus turns them off). */
  rejectDegenerate: boolean;
  /** Longest displayed output, in tokens; longer targets are redrawn so prompts stay short. */
  maxOutputTokens: number;
  /** Chance that an op's parameter is left out of the statement, to be read off the public examples. */
  vagueShare: number;
}

export const DEFAULT_TASK_SPEC: Readonly<TaskSpec> = Object.freeze({
  minOps: 2,
  maxOps: 5,
  publicTests: 3,
  privateTests: 10,
  numbersShare: 0.7,
  listLength: [3, 7] as [number, number],
  maxValue: 9,
  textWords: [3, 6] as [number, number],
  rejectDegenerate: true,
  maxOutputTokens: 24,
  vagueShare: 0.3,
});

const MAX_PROGRAM_DRAWS = 10_000;

/** FNV-1a of the target text: its lowest bit is the side (0 train, 1 held-out). */
export function targetSide(target: string): 0 | 1 {
  let h = 0x811c9dc5;
  for (let i = 0; i < target.length; i++) {
    h ^= target.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  h ^= h >>> 16;
  return (h & 1) as 0 | 1;
}

export function sideOfSplit(split: TaskSplit): 0 | 1 {
  return split === 'train' ? 0 : 1;
}

function drawChain(rng: Rng, start: TaskType, n: number): OpInstance[] | null {
  const chain: OpInstance[] = [];
  let type = start;
  for (let i = 0; i < n; i++) {
    const o = drawOp(rng, type, chain.length > 0 ? chain[chain.length - 1]!.spec.name : null);
    if (o === null) return null;
    chain.push(o);
    type = o.spec.to;
  }
  return chain;
}

function drawInput(rng: Rng, kind: 'numbers' | 'text', spec: TaskSpec): Value {
  if (kind === 'numbers') {
    const [lo, hi] = spec.listLength;
    const n = lo + rng.int(hi - lo + 1);
    return Array.from({ length: n }, () => rng.int(spec.maxValue + 1));
  }
  const [lo, hi] = spec.textWords;
  const n = lo + rng.int(hi - lo + 1);
  return Array.from({ length: n }, () => TEXT_WORDS[rng.int(TEXT_WORDS.length)]!).join(' ');
}

/** Canonical program text of an op chain. */
export function programText(chain: readonly OpInstance[]): string {
  const p = parse(chain.map((o) => o.spec.code(o.param)).join(' | '));
  if (!p.ok) throw new Error(`MARTI op catalogue writes a program that does not parse: ${p.error.message}`);
  return printProgram(p.program);
}

/** Draws distinct inputs on which `target` runs without error; null when too few inputs work. */
function drawTests(
  rng: Rng,
  target: string,
  kind: 'numbers' | 'text',
  count: number,
  spec: TaskSpec,
): TestCase[] | null {
  const tests: TestCase[] = [];
  const seen = new Set<string>();
  for (let tries = 0; tries < count * 6 && tests.length < count; tries++) {
    const input = drawInput(rng, kind, spec);
    const key = valueKey(input);
    if (seen.has(key)) continue;
    seen.add(key);
    const r = run(target, input);
    if (!r.ok || valueTokens(r.value).length > spec.maxOutputTokens) continue;
    tests.push({ input, expected: r.value });
  }
  return tests.length === count ? tests : null;
}

function isDegenerate(chain: readonly OpInstance[], tests: readonly TestCase[], publicCount: number): boolean {
  const outs = tests.map((t) => valueKey(t.expected));
  if (new Set(outs).size < 2) return true;
  if (new Set(outs.slice(0, publicCount)).size < 2) return true;
  const n = chain.length;
  for (let mask = 0; mask < (1 << n) - 1; mask++) {
    const sub = chain.filter((_, i) => (mask >> i) & 1);
    const text = sub.length === 0 ? null : programText(sub);
    const same = tests.every((t) => {
      if (text === null) return valueEquals(t.input, t.expected);
      const r = run(text, t.input);
      return r.ok && valueEquals(r.value, t.expected);
    });
    if (same) return true;
  }
  return false;
}

/** One task from one seed, on the side of `split`. Deterministic in (seed, split, spec). */
export function generateTask(
  seed: number,
  split: TaskSplit,
  spec: TaskSpec = DEFAULT_TASK_SPEC,
  id = `task-${seed}`,
): MartiTask {
  const rng = new Rng(seed).split('marti-task');
  const side = sideOfSplit(split);
  const total = spec.publicTests + spec.privateTests;
  // Input kind and length are drawn once, so rejection does not tilt the mix toward short targets and numbers.
  const kind = rng.next() < spec.numbersShare ? 'numbers' : 'text';
  const n = spec.minOps + rng.int(spec.maxOps - spec.minOps + 1);
  for (let draw = 0; draw < MAX_PROGRAM_DRAWS; draw++) {
    const chain = drawChain(rng, kind, n);
    if (chain === null) continue;
    const target = programText(chain);
    if (targetSide(target) !== side) continue;
    const tests = drawTests(rng, target, kind, total, spec);
    if (tests === null) continue;
    if (spec.rejectDegenerate && isDegenerate(chain, tests, spec.publicTests)) continue;
    const vague = chain.map((o) => o.spec.vague !== undefined && rng.next() < spec.vagueShare);
    return {
      id,
      split,
      seed,
      inputKind: kind,
      statement: joinTokens(
        textTokens(chain.map((o, i) => (vague[i] ? o.spec.vague! : o.spec.phrase(o.param))).join(' then ')),
      ),
      target,
      ops: chain.map(opId),
      vague,
      publicTests: tests.slice(0, spec.publicTests),
      privateTests: tests.slice(spec.publicTests),
    };
  }
  throw new Error(
    `MARTI task seed ${seed}: no acceptable target in ${MAX_PROGRAM_DRAWS} draws; check the task spec (minOps ${spec.minOps}, maxOps ${spec.maxOps})`,
  );
}

/** Named seed streams per split, disjoint by parity (as worldSplits.ts); a list is a prefix of any longer one. */
function* seedStream(baseSeed: number, stream: string, parity: 0 | 1): Generator<number> {
  const rng = new Rng(baseSeed).split(stream);
  const seen = new Set<number>();
  for (;;) {
    const seed = ((rng.nextUint32() & ~1) >>> 0) + parity;
    if (seen.has(seed)) continue;
    seen.add(seed);
    yield seed;
  }
}

export function taskSeedStream(baseSeed: number, split: TaskSplit): Generator<number> {
  return split === 'train'
    ? seedStream(baseSeed, 'marti-train-tasks', 0)
    : seedStream(baseSeed, 'marti-heldout-tasks', 1);
}

/**
 * Seeds in a row that gave only targets already taken, after which generateTasks decides the spec's pool of targets is
 * used up. Collecting 2,300 of the ~2,400 training targets of 1–2 operations needs gaps of up to ~2,600 (seed 11).
 */
export const POOL_EXHAUSTED_AFTER = 50_000;

/** Fewer distinct targets exist for a task spec than were asked for (e.g. 1-operation tasks have about 40 per split). */
export class TaskPoolExhaustedError extends UserError {
  constructor(
    readonly split: TaskSplit,
    readonly found: number,
    readonly asked: number,
    spec: TaskSpec,
  ) {
    super(
      `only ${found} distinct ${split} targets of ${spec.minOps}–${spec.maxOps} operations exist (${asked} asked for; ` +
        `${POOL_EXHAUSTED_AFTER} seeds in a row gave no new one): ask for at most ${found}, or allow more operations`,
    );
  }
}

/**
 * The first `n` tasks of a split, with distinct targets. Asking for more never changes the first ones. Training and
 * held-out tasks never share a target text (targetSide). Throws TaskPoolExhaustedError when the spec has fewer than
 * `n` distinct targets on the split's side, rather than drawing for ever.
 */
export function generateTasks(
  split: TaskSplit,
  baseSeed: number,
  n: number,
  spec: TaskSpec = DEFAULT_TASK_SPEC,
): MartiTask[] {
  if (!(Number.isInteger(n) && n >= 0)) throw new RangeError(`MARTI task count must be an integer ≥ 0, got ${n}`);
  const out: MartiTask[] = [];
  const targets = new Set<string>();
  let sinceNew = 0;
  for (const seed of taskSeedStream(baseSeed, split)) {
    if (out.length >= n) break;
    const task = generateTask(seed, split, spec, `${split}-${out.length}`);
    if (targets.has(task.target)) {
      if (++sinceNew >= POOL_EXHAUSTED_AFTER) throw new TaskPoolExhaustedError(split, out.length, n, spec);
      continue;
    }
    sinceNew = 0;
    targets.add(task.target);
    out.push(task);
  }
  return out;
}

/** Every op instance (each family with each of its parameters). */
function opInstancesFrom(type: TaskType): OpInstance[] {
  return opsFrom(type).flatMap((spec) =>
    spec.params.length === 0 ? [{ spec, param: 0 }] : spec.params.map((param) => ({ spec, param })),
  );
}

/** Op chains of exactly `n` ops counted without building them; beyond this many, enumerating texts is not worth it. */
function chainCount(n: number): number {
  // ways[type][lastFamily] after k ops
  let ways = new Map<string, number>([
    ['numbers|', 1],
    ['text|', 1],
  ]);
  for (let k = 0; k < n; k++) {
    const next = new Map<string, number>();
    for (const [key, w] of ways) {
      const [type, last] = key.split('|') as [TaskType, string];
      for (const o of opInstancesFrom(type)) {
        if (o.spec.name === last) continue;
        const nk = `${o.spec.to}|${o.spec.name}`;
        next.set(nk, (next.get(nk) ?? 0) + w);
      }
    }
    ways = next;
  }
  return [...ways.values()].reduce((a, b) => a + b, 0);
}

const ENUMERATE_UP_TO = 20_000;
const poolBounds = new Map<string, number>();

/** Distinct chain texts of exactly `n` ops on `split`'s side (or the plain chain count when there are too many). */
function textsOfLength(split: TaskSplit, n: number): number {
  const key = `${split}:${n}`;
  const known = poolBounds.get(key);
  if (known !== undefined) return known;
  const chains = chainCount(n);
  let bound = chains;
  if (chains <= ENUMERATE_UP_TO) {
    const texts = new Set<string>();
    const side = sideOfSplit(split);
    const grow = (chain: OpInstance[], type: TaskType): void => {
      if (chain.length === n) {
        const text = programText(chain);
        if (targetSide(text) === side) texts.add(text);
        return;
      }
      const last = chain.length ? chain[chain.length - 1]!.spec.name : null;
      for (const o of opInstancesFrom(type)) if (o.spec.name !== last) grow([...chain, o], o.spec.to);
    };
    grow([], 'numbers');
    grow([], 'text');
    bound = texts.size;
  }
  poolBounds.set(key, bound);
  return bound;
}

/**
 * An upper bound on the distinct targets of `minOps`–`maxOps` operations on `split`'s side: generateTasks can never
 * return more. The degeneracy checks make the true pool smaller (2,415 training targets of 1–2 operations, found in
 * ~24 s by generateTasks, under this bound's 2,983); the bound is what a config check can afford. Chain texts are
 * enumerated only while there are few chains (about 6,000 of 2 ops: ~0.1–0.3 s once, then cached); past
 * ENUMERATE_UP_TO chains (3 or more ops, hundreds of thousands) the plain chain count is the bound.
 */
export function targetPoolBound(split: TaskSplit, minOps: number, maxOps: number): number {
  let bound = 0;
  for (let n = minOps; n <= maxOps; n++) bound += textsOfLength(split, n);
  return bound;
}
