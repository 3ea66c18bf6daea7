import { describe, expect, it } from 'vitest';
import { run } from '../../../engine/marti/lang/interpreter';
import { DIGITS, SYMBOLS, languageKeywords } from '../../../engine/marti/lang/syntax';
import { textTokens } from '../../../engine/marti/lang/text';
import { martiVocabulary } from '../../../engine/marti/tasks/vocabulary';
import { Rng } from '../../../engine/random/prng';

const PIECES = [...languageKeywords(), ...SYMBOLS, ...DIGITS, 'cat', 'zz', '%', '"cat"', '"', '(', '(', ')'];
const INPUTS = [[1, 2, 3], 'red cat', 5, [], ['ox', 'cat'], true];

describe('fuzzing run with random token strings', () => {
  it('never lets an exception escape, and every error is typed with an in-vocabulary message', () => {
    const rng = new Rng(2024).split('marti-fuzz');
    const vocab = new Set(martiVocabulary());
    const kinds = new Map<string, number>();
    for (let i = 0; i < 3000; i++) {
      const n = 1 + rng.int(14);
      const src = Array.from({ length: n }, () => PIECES[rng.int(PIECES.length)]!).join(rng.next() < 0.5 ? ' ' : '');
      const input = INPUTS[rng.int(INPUTS.length)]!;
      let r;
      expect(() => (r = run(src, input)), src).not.toThrow();
      const res = r!;
      if (!res.ok) {
        expect(['parse', 'timeout', 'memory', 'runtime']).toContain(res.error.kind);
        expect(res.error.message).not.toBe('internal');
        for (const w of textTokens(res.error.message)) {
          expect(vocab.has(w), `${w} in "${res.error.message}"`).toBe(true);
        }
        kinds.set(res.error.kind, (kinds.get(res.error.kind) ?? 0) + 1);
      } else {
        kinds.set('ok', (kinds.get('ok') ?? 0) + 1);
      }
    }
    // The fuzz reaches past the parser: some strings run, some fail at run time.
    expect(kinds.get('parse')).toBeGreaterThan(0);
    expect(kinds.get('ok') ?? 0).toBeGreaterThan(0);
    expect(kinds.get('runtime') ?? 0).toBeGreaterThan(0);
  });

  it('is deterministic over the same fuzz stream', () => {
    const go = (): string[] => {
      const rng = new Rng(7).split('marti-fuzz');
      return Array.from({ length: 200 }, () => {
        const src = Array.from({ length: 1 + rng.int(10) }, () => PIECES[rng.int(PIECES.length)]!).join(' ');
        return JSON.stringify(run(src, [3, 1, 2]));
      });
    };
    expect(go()).toEqual(go());
  });
});
