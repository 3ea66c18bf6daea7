/**
 * The MARTI language's evaluator (docs/algorithms.md §3.3: mars-lab replaces the released code's 6 s per test with an
 * interpreter step limit [D]). It is a tree walker over values that are plain JSON; it reaches nothing of the host (no
 * eval, no Function, no I/O, no clock), so a run depends only on the program, the input and the limits.
 *
 * Bounds, each a typed error rather than an exception:
 *   - steps (`timeout`): one per expression node evaluated, per stage, per loop iteration, and per element a built-in
 *     touches (sort counts n·⌈log2 n⌉), so a `while` that never ends stops after `maxSteps`;
 *   - memory (`memory`): any list longer than `maxListLength`, text longer than `maxTextLength`, integer beyond
 *     ±`maxInt`, lists nested deeper than `maxNesting`, or more than `maxCells` list elements and characters allocated
 *     over the whole run (so exponential growth ends even when each value is small enough);
 *   - type and domain errors (`runtime`): `sum "cat"`, division by zero, `max []`.
 */
import type { Expr, Program, Stage } from './ast';
import { LangFailure, fail, type LangError } from './errors';
import { DEFAULT_PARSE_LIMITS, parse, type ParseLimits } from './parser';
import { valueEquals, valueKey, type Value } from './values';

export interface RunLimits {
  maxSteps: number;
  maxListLength: number;
  maxTextLength: number;
  maxInt: number;
  maxNesting: number;
  maxCells: number;
  parse: ParseLimits;
}

/** Generous for the world's programs (a 5-stage pipeline on 8 elements takes about 100 steps) and small enough that
 * a runaway program costs well under a millisecond's worth of work per test. */
export const DEFAULT_RUN_LIMITS: Readonly<RunLimits> = Object.freeze({
  maxSteps: 10_000,
  maxListLength: 1_000,
  maxTextLength: 1_000,
  maxInt: 1_000_000_000,
  maxNesting: 16,
  maxCells: 50_000,
  parse: DEFAULT_PARSE_LIMITS,
});

export type RunResult = { ok: true; value: Value; steps: number } | { ok: false; error: LangError; steps: number };

class Evaluator {
  steps = 0;
  private cells = 0;
  private readonly shapes = new WeakMap<Value[], { flat: number; depth: number }>();

  constructor(private readonly limits: RunLimits) {}

  private tick(n: number, pos: number): void {
    this.steps += n;
    if (this.steps > this.limits.maxSteps) fail('timeout', 'step budget used up', pos);
  }

  private num(n: number, pos: number): number {
    if (!Number.isFinite(n) || Math.abs(n) > this.limits.maxInt) fail('memory', 'number too large', pos);
    return n === 0 ? 0 : n; // no −0: outputs compare and print as plain integers
  }

  private list(items: Value[], pos: number): Value[] {
    if (items.length > this.limits.maxListLength) fail('memory', 'list too long', pos);
    // A list is charged its flattened size, shared sublists counted each time, so `[x, x]` repeated doubles the
    // charge: the bound then also covers equality, printing and JSON of the result, which walk the flattened value.
    let flat = items.length;
    let depth = 1;
    for (const item of items) {
      if (!Array.isArray(item)) continue;
      const shape = this.shapeOf(item);
      flat += shape.flat;
      depth = Math.max(depth, shape.depth + 1);
    }
    if (depth > this.limits.maxNesting) fail('memory', 'nesting too deep', pos);
    this.allocate(flat, pos);
    this.shapes.set(items, { flat, depth });
    return items;
  }

  /** Work to walk a value: its flattened size. */
  private weight(v: Value): number {
    return Array.isArray(v) ? this.shapeOf(v).flat : typeof v === 'string' ? v.length : 1;
  }

  /** Flattened size and nesting of a list: cached for lists built here, computed once for the input's lists. */
  private shapeOf(xs: Value[]): { flat: number; depth: number } {
    const known = this.shapes.get(xs);
    if (known !== undefined) return known;
    let flat = xs.length;
    let depth = 1;
    for (const item of xs) {
      if (!Array.isArray(item)) continue;
      const shape = this.shapeOf(item);
      flat += shape.flat;
      depth = Math.max(depth, shape.depth + 1);
    }
    const shape = { flat, depth };
    this.shapes.set(xs, shape);
    return shape;
  }

  private text(s: string, pos: number): string {
    if (s.length > this.limits.maxTextLength) fail('memory', 'text too long', pos);
    this.allocate(s.length, pos);
    return s;
  }

  private allocate(n: number, pos: number): void {
    this.cells += n;
    if (this.cells > this.limits.maxCells) fail('memory', 'too many cells', pos);
  }

  program(p: Program, input: Value): Value {
    let v = input;
    for (const s of p.stages) v = this.stage(s, v);
    return v;
  }

  private stage(s: Stage, v: Value): Value {
    this.tick(1, s.pos);
    switch (s.k) {
      case 'fn':
        return this.call(s.fn, v, s.pos);
      case 'map': {
        const xs = this.needList('map', v, s.pos);
        const out: Value[] = [];
        for (const x of xs) out.push(this.expr(s.arg, x));
        return this.list(out, s.pos);
      }
      case 'filter': {
        const xs = this.needList('filter', v, s.pos);
        const out: Value[] = [];
        for (const x of xs) if (this.needBool('filter', this.expr(s.arg, x), s.pos)) out.push(x);
        return this.list(out, s.pos);
      }
      case 'apply':
        return this.expr(s.arg, v);
      case 'take':
      case 'drop': {
        const n = Math.max(0, this.needNumber(s.k, this.expr(s.arg, v), s.pos));
        if (typeof v === 'string') return this.text(s.k === 'take' ? v.slice(0, n) : v.slice(n), s.pos);
        const xs = this.needListOrText(s.k, v, s.pos);
        this.tick(xs.length, s.pos);
        return this.list(s.k === 'take' ? xs.slice(0, n) : xs.slice(n), s.pos);
      }
      case 'while': {
        let cur = v;
        while (this.needBool('while', this.expr(s.cond, cur), s.pos)) {
          this.tick(1, s.pos);
          cur = this.expr(s.body, cur);
        }
        return cur;
      }
    }
  }

  private expr(e: Expr, x: Value): Value {
    this.tick(1, e.pos);
    switch (e.k) {
      case 'num':
        return this.num(e.value, e.pos);
      case 'bool':
        return e.value;
      case 'text':
        return this.text(e.value, e.pos);
      case 'var':
        return x;
      case 'list':
        return this.list(
          e.items.map((item) => this.expr(item, x)),
          e.pos,
        );
      case 'neg':
        return this.num(-this.needNumber('-', this.expr(e.arg, x), e.pos), e.pos);
      case 'not':
        return !this.needBool('not', this.expr(e.arg, x), e.pos);
      case 'if':
        return this.needBool('if', this.expr(e.cond, x), e.pos) ? this.expr(e.then, x) : this.expr(e.else, x);
      case 'call':
        return this.call(e.fn, this.expr(e.arg, x), e.pos);
      case 'bin':
        return this.binary(e, x);
    }
  }

  private binary(e: Extract<Expr, { k: 'bin' }>, x: Value): Value {
    if (e.op === 'and' || e.op === 'or') {
      const a = this.needBool(e.op, this.expr(e.left, x), e.pos);
      if (e.op === 'and' ? !a : a) return a;
      return this.needBool(e.op, this.expr(e.right, x), e.pos);
    }
    const a = this.expr(e.left, x);
    const b = this.expr(e.right, x);
    switch (e.op) {
      case '=':
        this.tick(this.weight(a) + this.weight(b), e.pos);
        return valueEquals(a, b);
      case '<':
      case '>': {
        if (typeof a === 'number' && typeof b === 'number') return e.op === '<' ? a < b : a > b;
        if (typeof a === 'string' && typeof b === 'string') {
          return e.op === '<' ? compareText(a, b) < 0 : compareText(a, b) > 0;
        }
        fail('runtime', `${e.op} needs two numbers or two texts`, e.pos);
      }
      case '+':
        if (typeof a === 'number' && typeof b === 'number') return this.num(a + b, e.pos);
        if (Array.isArray(a) && Array.isArray(b)) {
          if (a.length + b.length > this.limits.maxListLength) fail('memory', 'list too long', e.pos);
          this.tick(a.length + b.length, e.pos);
          return this.list([...a, ...b], e.pos);
        }
        if (typeof a === 'string' && typeof b === 'string') {
          if (a.length + b.length > this.limits.maxTextLength) fail('memory', 'text too long', e.pos);
          return this.text(a + b, e.pos);
        }
        fail('runtime', '+ needs two numbers, two lists or two texts', e.pos);
      case '-':
      case '*':
      case 'div':
      case 'mod': {
        const p = this.needNumber(e.op, a, e.pos);
        const q = this.needNumber(e.op, b, e.pos);
        if (e.op === '-') return this.num(p - q, e.pos);
        if (e.op === '*') return this.num(p * q, e.pos);
        if (q === 0) fail('runtime', 'division by zero', e.pos);
        // Floor division and a remainder with the divisor's sign (Python's), so `x mod 2` is 0 or 1 for any x.
        return this.num(e.op === 'div' ? Math.floor(p / q) : p - q * Math.floor(p / q), e.pos);
      }
    }
  }

  private call(fn: string, v: Value, pos: number): Value {
    switch (fn) {
      case 'sort': {
        const xs = this.needList('sort', v, pos);
        this.tick(xs.length * Math.max(1, Math.ceil(Math.log2(xs.length + 1))), pos);
        if (xs.every((y) => typeof y === 'number')) {
          return this.list(
            [...xs].sort((a, b) => a - b),
            pos,
          );
        }
        if (xs.every((y) => typeof y === 'string')) return this.list([...xs].sort(compareText), pos);
        fail('runtime', 'sort needs a list of numbers or words', pos);
      }
      case 'reverse':
        if (typeof v === 'string') return this.text([...v].reverse().join(''), pos);
        this.tick(this.weight(v), pos);
        return this.list([...this.needListOrText('reverse', v, pos)].reverse(), pos);
      case 'sum': {
        const xs = this.needList('sum', v, pos);
        this.tick(xs.length, pos);
        let total = 0;
        for (const y of xs) total = this.num(total + this.needNumber('sum', y, pos), pos);
        return total;
      }
      case 'len':
        if (typeof v === 'string') return v.length;
        return this.needListOrText('len', v, pos).length;
      case 'max':
      case 'min': {
        const xs = this.needList(fn, v, pos);
        if (xs.length === 0) fail('runtime', `${fn} needs a nonempty list`, pos);
        this.tick(xs.length, pos);
        const sign = fn === 'max' ? 1 : -1;
        if (xs.every((y) => typeof y === 'number')) {
          return xs.reduce((m, y) => (sign * (y - m) > 0 ? y : m));
        }
        if (xs.every((y) => typeof y === 'string')) {
          return xs.reduce((m, y) => (sign * compareText(y, m) > 0 ? y : m));
        }
        fail('runtime', `${fn} needs a list of numbers or words`, pos);
      }
      case 'first':
      case 'last': {
        if (typeof v === 'string') {
          if (v.length === 0) fail('runtime', `${fn} needs a nonempty list or text`, pos);
          return this.text(fn === 'first' ? v[0]! : v[v.length - 1]!, pos);
        }
        const xs = this.needListOrText(fn, v, pos);
        if (xs.length === 0) fail('runtime', `${fn} needs a nonempty list or text`, pos);
        return fn === 'first' ? xs[0]! : xs[xs.length - 1]!;
      }
      case 'unique': {
        const xs = this.needList('unique', v, pos);
        this.tick(xs.length, pos);
        const seen = new Set<string>();
        const out: Value[] = [];
        for (const y of xs) {
          const key = valueKey(y);
          if (!seen.has(key)) {
            seen.add(key);
            out.push(y);
          }
        }
        return this.list(out, pos);
      }
      case 'split': {
        const s = this.needText('split', v, pos);
        this.tick(s.length, pos);
        const words = s.split(' ').filter((w) => w !== '');
        this.allocate(s.length, pos);
        return this.list(words, pos);
      }
      case 'join': {
        const xs = this.needList('join', v, pos);
        this.tick(xs.length, pos);
        if (!xs.every((y) => typeof y === 'string')) fail('runtime', 'join needs a list of words', pos);
        const s = xs.join(' ');
        if (s.length > this.limits.maxTextLength) fail('memory', 'text too long', pos);
        return this.text(s, pos);
      }
      case 'upper':
        return this.text(this.needText('upper', v, pos).toUpperCase(), pos);
      case 'lower':
        return this.text(this.needText('lower', v, pos).toLowerCase(), pos);
      case 'abs':
        return this.num(Math.abs(this.needNumber('abs', v, pos)), pos);
      case 'range': {
        const n = this.needNumber('range', v, pos);
        if (n < 0) fail('runtime', 'range needs a number at least 0', pos);
        if (n > this.limits.maxListLength) fail('memory', 'list too long', pos);
        this.tick(n, pos);
        return this.list(
          Array.from({ length: n }, (_, i) => i),
          pos,
        );
      }
    }
    fail('runtime', 'internal', pos);
  }

  private needList(name: string, v: Value, pos: number): Value[] {
    if (!Array.isArray(v)) fail('runtime', `${name} needs a list`, pos);
    return v;
  }

  private needListOrText(name: string, v: Value, pos: number): Value[] {
    if (!Array.isArray(v)) fail('runtime', `${name} needs a list or text`, pos);
    return v;
  }

  private needNumber(name: string, v: Value, pos: number): number {
    if (typeof v !== 'number') fail('runtime', `${name} needs a number`, pos);
    return v;
  }

  private needBool(name: string, v: Value, pos: number): boolean {
    if (typeof v !== 'boolean') fail('runtime', `${name} needs a bool`, pos);
    return v;
  }

  private needText(name: string, v: Value, pos: number): string {
    if (typeof v !== 'string') fail('runtime', `${name} needs text`, pos);
    return v;
  }
}

/** Code-point order, the same on every machine (no locale). */
function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Runs a program (text or parsed) on one input. Never throws: parse errors, step and memory bounds and runtime type
 * errors all come back as `{ ok: false, error }`. Deterministic.
 */
export function run(program: string | Program, input: Value, limits: RunLimits = DEFAULT_RUN_LIMITS): RunResult {
  let parsed: Program;
  if (typeof program === 'string') {
    const p = parse(program, limits.parse);
    if (!p.ok) return { ok: false, error: p.error, steps: 0 };
    parsed = p.program;
  } else {
    parsed = program;
  }
  const ev = new Evaluator(limits);
  try {
    return { ok: true, value: ev.program(parsed, input), steps: ev.steps };
  } catch (e) {
    if (e instanceof LangFailure) return { ok: false, error: e.error, steps: ev.steps };
    // Only a bug gets here (the bounds above keep the stack and heap small); it is still a value, never a crash.
    if (e instanceof RangeError) {
      return { ok: false, error: { kind: 'memory', message: 'stack too deep' }, steps: ev.steps };
    }
    return { ok: false, error: { kind: 'runtime', message: 'internal' }, steps: ev.steps };
  }
}
