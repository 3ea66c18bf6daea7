/**
 * A tokenizer.json whose regular expression backtracks catastrophically (issue 30, "Bad input") is refused when it is
 * loaded, in one line naming the field, before tokenizers.js could run it on a prompt: `(a+)+$` on 'a'·26 + 'b' takes
 * the raw library 14 s (each further 'a' doubles it), on a 10,000-character input forever. The rule
 * (engine/model/tokenizers/hf/regexSafety.ts) is checked on the real models' own patterns too, which must pass.
 */
import { describe, expect, it } from 'vitest';
import { HfTokenizer } from '../../../engine/model/tokenizers/hf/hfTokenizer';
import { HfTokenizerError, librarySourceOf } from '../../../engine/model/tokenizers/hf/libraryCompat';
import { GGUF_PRE_TOKENIZERS } from '../../../engine/model/tokenizers/hf/ggufPreTokenizers';
import { catastrophicBacktrackingReason } from '../../../engine/model/tokenizers/hf/regexSafety';
import { tinyByteLevel } from '../../fixtures/tokenizer/tokenizerKit';

const ADDED = [{ content: '<|end|>', special: true }];

function withRegex(where: 'pre_tokenizer' | 'normalizer' | 'decoder', regex: string): Record<string, unknown> {
  const json = tinyByteLevel({ added: ADDED });
  const pattern = { Regex: regex };
  if (where === 'pre_tokenizer') {
    json.pre_tokenizer = {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Split', pattern, behavior: 'Isolated', invert: false },
        { type: 'ByteLevel', add_prefix_space: false, use_regex: false },
      ],
    };
  } else {
    json[where] = { type: 'Replace', pattern, content: ' ' };
  }
  return json;
}

function load(json: Record<string, unknown>): HfTokenizer {
  return new HfTokenizer({ tokenizer: json, config: { eos_token: '<|end|>' } }, 'bad/tokenizer.json');
}

const CATASTROPHIC = [
  '(a+)+$',
  '(a*)*b',
  '(?:a|a)*$',
  '(a|aa)+$',
  '(\\w+\\s?)+$',
  '(.*a){12}',
  '(?:(?:a+)b?)+c',
  '([a-z]+\\d*)*!',
  '\\s*\\s*\\s*x',
  '(a*)\\1',
];

describe('tokenizer.json regexes that backtrack catastrophically', () => {
  it('(a+)+$ is refused on load, in one line naming the field, so encode never meets a long "aaaa…b"', () => {
    const json = withRegex('pre_tokenizer', '(a+)+$');
    let err: unknown;
    try {
      load(json).encode('a'.repeat(10_000) + 'b');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(HfTokenizerError);
    const msg = (err as Error).message;
    expect(msg).toBe(
      'bad/tokenizer.json: pre_tokenizer.pretokenizers[0].pattern.Regex "(a+)+$" can backtrack catastrophically ' +
        '(a repeated group that itself repeats, like (a+)+); it would hang on some inputs, so it is refused',
    );
  });

  it('refuses nested and alternating repetition, three unbounded repeats in a branch, and backreferences', () => {
    for (const regex of CATASTROPHIC) {
      for (const where of ['pre_tokenizer', 'normalizer', 'decoder'] as const) {
        expect(() => load(withRegex(where, regex)), `${where} ${regex}`).toThrow(/can backtrack catastrophically/);
      }
    }
    expect(catastrophicBacktrackingReason(librarySourceOf('(a|b)*c'))).toMatch(/repeated alternation/);
    expect(catastrophicBacktrackingReason(librarySourceOf('a*b*c*d'))).toMatch(/3 unbounded repetitions/);
    expect(catastrophicBacktrackingReason(librarySourceOf('(?<x>a*)\\k<x>'))).toMatch(/backreference/);
  });

  it("passes the real models' patterns (GPT-2, Llama 3, Qwen2, SmolLM's digits) and ordinary syntax", () => {
    for (const [pre, def] of GGUF_PRE_TOKENIZERS) {
      const json = tinyByteLevel({ added: ADDED, preTokenizer: def.pre_tokenizer, normalizer: def.normalizer });
      expect(load(json).encode("It's 123  x\r\n"), pre).not.toHaveLength(0);
    }
    const fine = [
      "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
      '[\\p{P}\\$\\+<=>\\^~\\|`]+',
      '[0-9][0-9][0-9]',
      '\\s?[!-/:-~！-／：-～‘-‟　-。]+',
      '(?i:[a-f])+',
      '[++]{2}+a',
      '(?:ab){2,5}',
      '^\\s+|\\s+$',
      '\\b\\w+\\b',
      '[\\]\\[(]+?x',
    ];
    for (const regex of fine) expect(catastrophicBacktrackingReason(librarySourceOf(regex)), regex).toBeNull();
  });
});
