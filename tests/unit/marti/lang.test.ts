import { describe, expect, it } from 'vitest';
import { DEFAULT_RUN_LIMITS, run, type RunResult } from '../../../engine/marti/lang/interpreter';
import { parse } from '../../../engine/marti/lang/parser';
import { printProgram } from '../../../engine/marti/lang/printer';
import type { Value } from '../../../engine/marti/lang/values';

function value(program: string, input: Value): Value {
  const r = run(program, input);
  if (!r.ok) throw new Error(`${program}: ${r.error.kind} ${r.error.message}`);
  return r.value;
}

function error(program: string, input: Value): Extract<RunResult, { ok: false }> {
  const r = run(program, input);
  if (r.ok) throw new Error(`${program} ran to ${JSON.stringify(r.value)}`);
  return r;
}

describe('built-ins', () => {
  it.each<[string, Value, Value]>([
    ['map (x * 2)', [1, 2, 3], [2, 4, 6]],
    ['map (x-1)', [0, 5], [-1, 4]],
    ['filter (x mod 2 = 0)', [1, 2, 3, 4], [2, 4]],
    ['filter (not x = 3)', [3, 1, 3], [1]],
    ['sort', [3, 1, 2, 1], [1, 1, 2, 3]],
    ['sort', ['dog', 'cat', 'ox'], ['cat', 'dog', 'ox']],
    ['reverse', [1, 2, 3], [3, 2, 1]],
    ['reverse', 'abc', 'cba'],
    ['take 2', [5, 6, 7], [5, 6]],
    ['take 9', [5], [5]],
    ['drop 2', [5, 6, 7], [7]],
    ['take 2', 'lion', 'li'],
    ['sum', [1, 2, 3], 6],
    ['sum', [], 0],
    ['len', [1, 2, 3], 3],
    ['len', 'lion', 4],
    ['max', [3, 9, 2], 9],
    ['min', [3, 9, 2], 2],
    ['max', ['cat', 'ox', 'dog'], 'ox'],
    ['first', [4, 5], 4],
    ['last', [4, 5], 5],
    ['unique', [2, 1, 2, 3, 1], [2, 1, 3]],
    ['split', 'red  cat dog', ['red', 'cat', 'dog']],
    ['join', ['red', 'cat'], 'red cat'],
    ['upper', 'red cat', 'RED CAT'],
    ['lower', 'RED', 'red'],
    ['map (abs x)', [-2, 3], [2, 3]],
    ['apply (range x)', 3, [0, 1, 2]],
    ['apply (x div 2)', -7, -4],
    ['apply (x mod 3)', -7, 2],
    ['map (if x > 5 then x else 0)', [3, 7], [0, 7]],
    ['apply (x < 3 and not x = 1 or false)', 2, true],
    ['apply (x + [1])', [0], [0, 1]],
    ['apply (x + "s")', 'cat', 'cats'],
    ['apply (- len x)', [1, 2], -2],
    ['while (x < 100) (x * 2)', 3, 192],
    ['split | map (upper x) | join', 'red cat', 'RED CAT'],
    ['filter (x mod 2 = 0) | map (x * 2) | sum', [1, 2, 3, 4], 12],
    ['map (len x) | max', ['ox', 'horse'], 5],
    ['apply ["a", "b"] | map (x = "a")', 0, [true, false]],
  ])('%s on %j gives %j', (program, input, expected) => {
    expect(value(program, input)).toEqual(expected);
  });

  it('gives typed runtime errors with the failing position', () => {
    expect(error('sum', 'cat').error).toEqual({ kind: 'runtime', message: 'sum needs a list', position: 0 });
    expect(error('map (x * 2) | max', []).error).toMatchObject({
      kind: 'runtime',
      message: 'max needs a nonempty list',
      position: 14,
    });
    expect(error('apply (x div 0)', 3).error).toMatchObject({ kind: 'runtime', message: 'division by zero' });
    expect(error('filter (x + 1)', [1]).error).toMatchObject({ kind: 'runtime', message: 'filter needs a bool' });
    expect(error('sort', [1, 'a']).error.kind).toBe('runtime');
    expect(error('apply (x < "a")', 1).error.kind).toBe('runtime');
    expect(error('join', [1]).error.kind).toBe('runtime');
  });
});

describe('bounds', () => {
  it('ends an infinite loop with a timeout inside its step budget', () => {
    const r = error('while (x > 0) (x + 1)', 1);
    expect(r.error.kind).toBe('timeout');
    expect(r.steps).toBeLessThanOrEqual(DEFAULT_RUN_LIMITS.maxSteps + 1);
    const small = run('while true x', 1, { ...DEFAULT_RUN_LIMITS, maxSteps: 50 });
    expect(small).toMatchObject({ ok: false, error: { kind: 'timeout' } });
    expect(small.steps).toBeLessThanOrEqual(51);
  });

  it('ends exponential growth with a memory error', () => {
    expect(error('while (len x > 0) (x + x)', [1]).error).toMatchObject({ kind: 'memory', message: 'list too long' });
    // Shared sublists: each step doubles the flattened size while allocating only two cells.
    expect(error('while true ([x, x])', 1).error.kind).toBe('memory');
    expect(error('while true (x * x + 2)', 2).error).toMatchObject({ kind: 'memory', message: 'number too large' });
    expect(error('apply (range 100000)', 0).error).toMatchObject({ kind: 'memory', message: 'list too long' });
    expect(error('while (len x < 2000) (x + x)', 'ab').error).toMatchObject({
      kind: 'memory',
      message: 'text too long',
    });
    expect(error('while true [x]', 1).error).toMatchObject({ kind: 'memory', message: 'nesting too deep' });
  });

  it('rejects deep nesting and long programs at parse time, without touching the JS stack', () => {
    const deep = parse(`apply ${'('.repeat(5000)}1${')'.repeat(5000)}`);
    expect(deep).toMatchObject({ ok: false, error: { kind: 'parse' } });
    const notNot = parse(`apply (${'not '.repeat(100)}true)`);
    expect(notNot).toMatchObject({ ok: false, error: { kind: 'parse', message: 'nesting too deep' } });
    const long = parse(`apply (${'1 + '.repeat(1000)}1)`);
    expect(long).toMatchObject({ ok: false, error: { kind: 'parse', message: 'program too long' } });
  });
});

describe('parser', () => {
  it('reports typed parse errors with their position', () => {
    expect(parse('map (x')).toEqual({
      ok: false,
      error: { kind: 'parse', message: 'expected ) found end of program', position: 6 },
    });
    expect(parse('sum sum')).toEqual({
      ok: false,
      error: { kind: 'parse', message: 'expected | or end of program found sum', position: 4 },
    });
    expect(parse('frobnicate')).toEqual({
      ok: false,
      error: { kind: 'parse', message: 'expected stage found unknown word', position: 0 },
    });
    expect(parse('map (x % 2)')).toEqual({
      ok: false,
      error: { kind: 'parse', message: 'unknown character', position: 7 },
    });
    expect(parse('apply "ab')).toMatchObject({
      ok: false,
      error: { kind: 'parse', message: 'expected closing quote', position: 6 },
    });
    expect(parse('')).toMatchObject({ ok: false, error: { kind: 'parse', position: 0 } });
    expect(parse('map (if x then 1)')).toMatchObject({
      ok: false,
      error: { message: 'expected else found )', position: 16 },
    });
  });

  it('prints a canonical form that parses back to the same program, whatever the spacing', () => {
    for (const src of [
      'filter ( x mod 2 = 0 )|map(x*2)   | sum',
      'map (if x > 5 then x - 1 else - x)',
      'apply ((1 + 2) * 3 - (4 - 5))',
      'apply (not (x and true) or x = [1, "a b"])',
      'while (x > 0) (x - 1) | apply (x - -1)',
      'map (upper x) | filter (len x > 2)',
    ]) {
      const p = parse(src);
      expect(p.ok, src).toBe(true);
      if (!p.ok) continue;
      const text = printProgram(p.program);
      const again = parse(text);
      expect(again.ok).toBe(true);
      if (again.ok) expect(printProgram(again.program)).toBe(text);
      expect(run(text, 3)).toEqual(run(src, 3));
    }
    const p = parse('apply ((1 + 2) * 3 - (4 - 5))');
    expect(p.ok && printProgram(p.program)).toBe('apply ((1 + 2) * 3-(4-5))');
    expect(value('apply ((1 + 2) * 3 - (4 - 5))', 0)).toBe(10);
  });

  it('is deterministic and reports the same error for the same input', () => {
    expect(JSON.stringify(run('sort | take 2 | sum', [5, 1, 3]))).toBe(
      JSON.stringify(run('sort | take 2 | sum', [5, 1, 3])),
    );
  });
});
