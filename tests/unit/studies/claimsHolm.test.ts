/**
 * Holm–Bonferroni as tests/study/claimsHolm.ts applies it to the claims tables (issue 32), against examples checked by
 * hand, and the reading of both table layouts. (statsmodels is not installed here, so there is no peer run; the first
 * example is worked below step by step.)
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  comparisonP,
  correct,
  holm,
  holmMarked,
  insertInCell,
  parseGeneratedTest,
  parseHandCell,
  parseTables,
} from '../../study/claimsHolm';

describe('holm', () => {
  it('rejects step-down at α/(m−k) and stops at the first failure (hand-checked)', () => {
    // sorted: 0.005 ≤ 0.05/4 = 0.0125 reject; 0.010 ≤ 0.05/3 = 0.0167 reject; 0.030 > 0.05/2 = 0.025 stop,
    // so 0.040 (≤ 0.05/1 on its own) is not rejected either.
    const { reject, adjusted } = holm([0.01, 0.04, 0.03, 0.005]);
    expect(reject).toEqual([true, false, false, true]);
    // adjusted: 4·0.005 = 0.02; max(0.02, 3·0.01) = 0.03; max(0.03, 2·0.03) = 0.06; max(0.06, 1·0.04) = 0.06
    expect(adjusted.map((p) => Number(p.toFixed(10)))).toEqual([0.03, 0.06, 0.06, 0.02]);
  });

  it('equals Bonferroni on the smallest p, caps adjusted p at 1, and rejects exactly where adjusted p ≤ α', () => {
    const ps = [0.031, 0.004, 0.5, 0.004, 0.9, 1e-5];
    const { reject, adjusted } = holm(ps);
    expect(adjusted[5]).toBeCloseTo(6e-5, 12);
    expect(Math.max(...adjusted)).toBeLessThanOrEqual(1);
    // 1e-5 ≤ 0.05/6 reject; 0.004 ≤ 0.05/5 = 0.01 reject; 0.004 ≤ 0.05/4 reject; 0.031 > 0.05/3 stop
    expect(reject).toEqual([false, true, false, true, false, true]);
    reject.forEach((r, i) => expect(r).toBe(adjusted[i]! <= 0.05));
  });

  it('with one p is the unadjusted test, and refuses a p outside [0, 1]', () => {
    expect(holm([0.05]).reject).toEqual([true]);
    expect(holm([]).reject).toEqual([]);
    expect(() => holm([1.2])).toThrow(/not in \[0, 1\]/);
  });
});

describe('the rule for a comparison of two tests', () => {
  it('takes the larger p in the verdict’s direction; an inconclusive one the smaller direction’s larger p', () => {
    const tests = [
      { forP: 0.004, againstP: 1 },
      { forP: 0.031, againstP: 0.98 },
    ];
    expect(comparisonP('holds', tests)).toBe(0.031);
    expect(
      comparisonP('does not hold', [
        { forP: 0.99, againstP: 0.008 },
        { forP: 0.98, againstP: 0.047 },
      ]),
    ).toBe(0.047);
    expect(
      comparisonP('inconclusive', [
        { forP: 0.056, againstP: 0.968 },
        { forP: 0.047, againstP: 0.984 },
      ]),
    ).toBe(0.056);
  });
});

describe('reading the tables', () => {
  it('splits a generated ordering row into its comparisons', () => {
    const cell =
      'homo > single (inconclusive): seeds: exact permutation test over seeds (5 vs 5), one-sided p = 0.099 for the claim (0.929 against it), α = 0.05; problems: Monte Carlo sign-flip test, one-sided p = 0.159 for the claim (0.871 against it), α = 0.05; hetero > homo (does not hold): seeds: exact permutation test, one-sided p = 1.000 for the claim (0.004 against it), α = 0.05; problems: one-sided p = 1.000 for the claim (3.5e-4 against it), α = 0.05';
    const subs = parseGeneratedTest(cell, 'does not hold');
    expect(subs.map((s) => [s.label, s.verdict, s.tests.length])).toEqual([
      ['homo > single', 'inconclusive', 2],
      ['hetero > homo', 'does not hold', 2],
    ]);
    expect(subs[1]!.tests[1]).toEqual({ forP: 1, againstP: 3.5e-4 });
  });

  it('reads hand cells: pairs, directions, several verdicts, and refuses ranges', () => {
    expect(parseHandCell('16: 0.996 / 0.008; 32: 0.999 / 0.003', ['does not hold'])).toEqual([
      { label: '16', tests: [{ forP: 0.996, againstP: 0.008 }] },
      { label: '32', tests: [{ forP: 0.999, againstP: 0.003 }] },
    ]);
    expect(
      parseHandCell('0.094 / 0.031 / 0.063 / 0.094 (for)', ['inconclusive', 'holds', 'inconclusive', 'inconclusive']),
    ).toHaveLength(4);
    expect(parseHandCell('0.031–0.625', ['holds'])).toBe('summary');
    expect(parseHandCell('– (one checkpoint)', ['holds'])).toBe('none');
  });

  it('counts a table’s comparisons, its rejections and the Holm survivors; marked rows read the same', () => {
    const md = [
      '| claim | where | verdict | figures | seeds p | worlds p |',
      '|---|---|---|---|---|---|',
      '| A beats B | x | **does not hold** | 1 vs 2 | 1.000 / 0.004 | 1.000 / 0.016 |',
      '| | y | **holds** (not after Holm) | 2 vs 1 | 0.004 / 1.000 | 0.001 / 1.000 |',
      '| C beats D | x | **inconclusive** | 1 vs 1 | 0.5 / 0.5 | 0.4 / 0.6 |',
      '| T+ beats plain | z | **does not hold** | – | – | 1.000 / 2.0e-4 |',
      '| Each arm beats its base | all | **holds** | – | 0.031–0.625 | ≤ 0.047 |',
    ].join('\n');
    const [t] = parseTables('x.md', md);
    const r = correct(t!);
    expect(r.m).toBe(4);
    expect(r.rejected).toHaveLength(3);
    // sorted p: 2.0e-4 ≤ 0.0125, 0.004 ≤ 0.0167, 0.016 ≤ 0.025 all reject; 0.5 does not
    expect(r.survive.map((c) => c.row)).toEqual([1, 2, 4]);
    expect(t!.summarised.map((s) => s.row)).toEqual([5]);
    expect(t!.comparisons[1]!.claim).toBe('A beats B');
  });

  it('marks a row in place, leaving the rest of it byte for byte', () => {
    expect(insertInCell('| | a \\| b | **holds** | x |', 2, ' (not after Holm)')).toBe(
      '| | a \\| b | **holds** (not after Holm) | x |',
    );
  });
});

describe('the committed reports', () => {
  it('carry each claims table’s Holm line and marks as the script writes them (a regenerated report keeps them)', () => {
    const dir = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../../docs/results');
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.md'));
    let tables = 0;
    for (const f of files) {
      const text = fs.readFileSync(path.join(dir, f), 'utf8');
      tables += parseTables(f, text).length;
      expect(holmMarked(f, text), f).toBe(text);
    }
    expect(tables).toBeGreaterThanOrEqual(7);
  });
});
