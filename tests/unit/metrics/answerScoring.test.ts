import { describe, expect, it } from 'vitest';
import { exactMatch, f1, normalizeAnswer } from '../../../engine/scoring/answerScoring';

describe('normalizeAnswer (SQuAD)', () => {
  it('lower-cases, drops punctuation and articles, collapses spaces', () => {
    expect(normalizeAnswer('The City of  Tessel.')).toBe('city of tessel');
    expect(normalizeAnswer('  an  Apple, a pear!  ')).toBe('apple pear');
    expect(normalizeAnswer('theatre')).toBe('theatre');
    expect(normalizeAnswer('rock-n-roll')).toBe('rocknroll');
    expect(normalizeAnswer('“quoted”…')).toBe('quoted');
    expect(normalizeAnswer('')).toBe('');
    expect(normalizeAnswer('the . a')).toBe('');
  });

  it('joins a run of single spaced digits into one number, as the word tokenizer writes years', () => {
    expect(normalizeAnswer('1 9 5 2')).toBe('1952');
    expect(normalizeAnswer('the year 1 9 5 2 .')).toBe('year 1952');
    expect(normalizeAnswer('1952')).toBe('1952');
    expect(normalizeAnswer('12 34')).toBe('12 34');
    expect(normalizeAnswer('a1 2')).toBe('a1 2');
  });
});

describe('exactMatch', () => {
  it('matches any gold after normalisation', () => {
    expect(exactMatch('Tessel', ['tessel', 'the city of tessel'])).toBe(true);
    expect(exactMatch('the city of tessel', ['tessel', 'the city of tessel'])).toBe(true);
    expect(exactMatch('city of tessel.', ['tessel', 'the city of tessel'])).toBe(true);
    expect(exactMatch('tessel city', ['tessel', 'the city of tessel'])).toBe(false);
    expect(exactMatch('1952', ['1 9 5 2', 'the year 1 9 5 2'])).toBe(true);
    expect(exactMatch('1953', ['1 9 5 2'])).toBe(false);
    expect(exactMatch('', ['tessel'])).toBe(false);
  });

  it('refuses an empty gold list', () => {
    expect(() => exactMatch('x', [])).toThrow(RangeError);
    expect(() => f1('x', [])).toThrow(RangeError);
  });
});

describe('f1', () => {
  it('is token F1 against the best gold', () => {
    expect(f1('tessel', ['tessel'])).toBe(1);
    // pred {city, tessel}, gold {city, of, tessel}: P = 1, R = 2/3, F1 = 0.8.
    expect(f1('city tessel', ['the city of tessel'])).toBeCloseTo(0.8, 12);
    expect(f1('city tessel', ['vorana', 'the city of tessel'])).toBeCloseTo(0.8, 12);
    expect(f1('vorana', ['tessel'])).toBe(0);
    // A repeated token counts only as often as the gold has it: pred "x x y", gold "x y": P = 2/3, R = 1.
    expect(f1('x x y', ['x y'])).toBeCloseTo(0.8, 12);
    expect(f1('the year 1 9 5 2', ['1952'])).toBeCloseTo(2 / 3, 12);
  });

  it('scores empty against empty as 1 and empty against text as 0', () => {
    expect(f1('', [''])).toBe(1);
    expect(f1('the', ['a'])).toBe(1);
    expect(f1('', ['tessel'])).toBe(0);
    expect(f1('tessel', [''])).toBe(0);
  });
});
