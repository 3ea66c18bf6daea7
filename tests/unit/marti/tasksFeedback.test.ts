import { describe, expect, it } from 'vitest';
import type { MartiTask } from '../../../engine/marti/tasks/generator';
import { evaluateProgram, feedbackText } from '../../../engine/marti/tasks/scoring';

const task: MartiTask = {
  id: 'hand-0',
  split: 'train',
  seed: 0,
  inputKind: 'numbers',
  statement: 'keep the even numbers then add them up',
  target: 'filter (x mod 2 = 0) | sum',
  ops: ['evens', 'sum'],
  vague: [false, false],
  publicTests: [
    { input: [1, 2, 4], expected: 6 },
    { input: [3, 5], expected: 0 },
    { input: [2, 3], expected: 2 },
  ],
  privateTests: [
    { input: [8], expected: 8 },
    { input: [1, 1], expected: 0 },
  ],
};

describe('node scores (§3.3)', () => {
  it('scores all-pass by default and the fraction on request; private tests only in privateScore', () => {
    const right = evaluateProgram('filter (x mod 2 = 0)|sum', task);
    expect(right).toMatchObject({
      program: 'filter (x mod 2 = 0) | sum',
      publicPassed: 3,
      publicScore: 1,
      privateScore: 1,
    });
    const odd = evaluateProgram('filter (x mod 2 = 1) | sum', task);
    expect(odd.publicTests.map((t) => t.passed)).toEqual([false, false, false]);
    const partial = evaluateProgram('sum | apply (x - 1)', task);
    expect(partial.publicTests.map((t) => t.passed)).toEqual([true, false, false]); // 7 − 1 = 6 by luck
    const half = evaluateProgram('filter (x > 1) | sum', task);
    expect(half.publicTests.map((t) => t.passed)).toEqual([true, false, false]);
    expect(half.publicScore).toBe(0);
    expect(evaluateProgram('filter (x > 1) | sum', task, { rewardMode: 'fraction' }).publicScore).toBeCloseTo(1 / 3);
    expect(evaluateProgram('filter (x > 1) | sum', task, { rewardMode: 'fraction' }).privateScore).toBe(1);
    expect(evaluateProgram('filter (x > 8) | sum', task, { rewardMode: 'fraction' }).privateScore).toBeCloseTo(1 / 2);
  });

  it('scores a non-parsing or missing program 0 with no program', () => {
    for (const text of ['filter (x', null]) {
      const ev = evaluateProgram(text, task);
      expect(ev).toMatchObject({ program: null, publicScore: 0, privateScore: 0, publicPassed: 0 });
      expect(ev.parseError?.kind).toBe('parse');
    }
  });
});

describe('feedback (§3.2, §3.10 a)', () => {
  const half = evaluateProgram('filter (x > 1) | sum', task);
  const maxed = evaluateProgram('filter (x > 2) | max', task);

  it('perTest: one line per public test, then the count', () => {
    expect(feedbackText(half, 'perTest')).toBe(
      'example 1: correct. example 2: wrong. example 3: wrong. correct for 1 of 3.',
    );
    expect(feedbackText(evaluateProgram(task.target, task))).toBe(
      'example 1: correct. example 2: correct. example 3: correct. correct for 3 of 3.',
    );
  });

  it('binary: a single verdict', () => {
    expect(feedbackText(half, 'binary')).toBe('some examples wrong.');
    expect(feedbackText(evaluateProgram(task.target, task), 'binary')).toBe('all examples correct.');
  });

  it('rich: failing input, expected and actual output, or the error type and message', () => {
    expect(feedbackText(half, 'rich')).toBe(
      'example 1: correct. example 2: wrong. input [3,5] expected 0 got 8. example 3: wrong. input [2,3] expected 2 got 5. correct for 1 of 3.',
    );
    expect(feedbackText(maxed, 'rich')).toBe(
      'example 1: wrong. input [1,2,4] expected 6 got 4. example 2: wrong. input [3,5] expected 0 got 5. example 3: wrong. input [2,3] expected 2 got 3. correct for 0 of 3.',
    );
    const err = evaluateProgram('filter (x > 9) | max', task);
    expect(feedbackText(err, 'rich')).toContain(
      'example 1: wrong. input [1,2,4] expected 6 got error runtime: max needs a nonempty list.',
    );
    const loop = evaluateProgram('while true x', task);
    expect(feedbackText(loop, 'rich')).toContain('got error timeout: step budget used up.');
  });

  it('says "no valid program" for a program that does not parse; rich adds the parse error', () => {
    const bad = evaluateProgram('filter (x', task);
    expect(feedbackText(bad, 'perTest')).toBe('no valid program.');
    expect(feedbackText(bad, 'binary')).toBe('no valid program.');
    expect(feedbackText(bad, 'rich')).toBe('no valid program. error parse: expected) found end of program.');
  });
});
