import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ByteTokenizer,
  TokenizerFileError,
  UnknownTokenError,
  WordTokenizer,
  buildWordVocab,
  loadTokenizer,
  saveTokenizer,
  tokenizerFromJSON,
  type Tokenizer,
  type WordTokenizerFile,
} from '../../../engine/model/tokenizers/tokenizer';

const SPECIALS = {
  pad: '<pad>',
  bos: '<bos>',
  eos: '<eos>',
  unk: '<unk>',
  think: '<think>',
  thinkEnd: '</think>',
  search: '<search>',
  searchEnd: '</search>',
  answer: '<answer>',
  answerEnd: '</answer>',
  info: '<info>',
  infoEnd: '</info>',
  purpose: '<purpose>',
  purposeEnd: '</purpose>',
  sep: '<sep>',
  sys1: '<sys1>',
  sys2: '<sys2>',
};

const CORPUS = [
  'The capital of Veloria is Marne.',
  'Marne lies on the river Sol, about 12 km from the coast!',
  'It costs 3.14 dollars, or 1,000 coins (roughly); "cheap" they say.',
  "Don't search twice: state-of-the-art tools a/b.",
  'What is the capital of Veloria?',
];

function ids(tok: Tokenizer, ...tokens: string[]): number[] {
  return tokens.map((t) => tok.idOf(t));
}

/** Deterministic PRNG for the property tests (mulberry32). */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function randomText(rand: () => number, atoms: readonly string[], maxAtoms: number): string {
  let s = '';
  for (let n = Math.floor(rand() * (maxAtoms + 1)); n > 0; n--) {
    s += atoms[Math.floor(rand() * atoms.length)];
    if (rand() < 0.4) s += rand() < 0.8 ? ' ' : '\n\t ';
  }
  return s;
}

describe('WordTokenizer: special tokens', () => {
  const tok = buildWordVocab(CORPUS, { specials: SPECIALS, lowercase: true });

  it('declares every special by role, with ids that name their texts', () => {
    for (const [role, text] of Object.entries(SPECIALS)) {
      expect(tok.tokenOf(tok.specials[role]!)).toBe(text);
      expect(tok.idOf(text)).toBe(tok.specials[role]);
      expect(tok.isSpecial(tok.specials[role]!)).toBe(true);
    }
    expect(tok.specials.pad).toBe(0);
    expect(tok.isSpecial(tok.idOf('capital'))).toBe(false);
  });

  it("reads a special's literal text inside text as that single token", () => {
    expect(tok.encode('<think>the capital</think><search>veloria</search>')).toEqual(
      ids(tok, '<think>', 'the', 'capital', '</think>', '<search>', 'veloria', '</search>'),
    );
    // Glued to words, between spaces, and case-sensitive even when the tokenizer lower-cases.
    expect(tok.encode('marne<sep>sol <eos>')).toEqual(ids(tok, 'marne', '<sep>', 'sol', '<eos>'));
    expect(tok.encode('<SEP>')).not.toContain(tok.specials.sep);
  });

  it('prefers the longest special where two start at the same place', () => {
    const t = new WordTokenizer({
      type: 'word',
      specials: { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>', lt: '<', close: '</think>' },
      tokens: ['<pad>', '<bos>', '<eos>', '<unk>', '<', '</think>', 'a'],
    });
    expect(t.encode('a</think><a')).toEqual([6, 5, 4, 6]);
  });

  it('decodes tags tight against their content and can skip specials', () => {
    const text = '<sys2><think>what is the capital of veloria?</think><answer>marne</answer><eos>';
    const encoded = tok.encode(text);
    expect(tok.decode(encoded)).toBe(text);
    expect(tok.decode(encoded, { skipSpecial: true })).toBe('what is the capital of veloria? marne');
  });
});

describe('WordTokenizer: out-of-vocabulary words', () => {
  it('maps them to unk without byteFallback, and unk decodes to its text', () => {
    const tok = buildWordVocab(CORPUS, { specials: SPECIALS, lowercase: true });
    const encoded = tok.encode('The capital of Zorblax is Quux.');
    expect(encoded).toEqual(ids(tok, 'the', 'capital', 'of', '<unk>', 'is', '<unk>', '.'));
    expect(tok.decode(encoded)).toBe('the capital of <unk> is <unk>.');
    expect(tok.encode(tok.decode(encoded))).toEqual(encoded);
  });

  it('spells them in UTF-8 byte tokens with byteFallback, and decodes them back', () => {
    const tok = buildWordVocab(CORPUS, { specials: SPECIALS, lowercase: true, byteFallback: true });
    const encoded = tok.encode('the capital of Zürich');
    const bytes = [...new TextEncoder().encode('zürich')].map(
      (b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`,
    );
    expect(bytes).toEqual(['<0x7A>', '<0xC3>', '<0xBC>', '<0x72>', '<0x69>', '<0x63>', '<0x68>']);
    expect(encoded).toEqual(ids(tok, 'the', 'capital', 'of', ...bytes));
    expect(tok.decode(encoded)).toBe('the capital of zürich');
  });

  it('keeps the spaces between neighbouring unknown words inside the byte run', () => {
    const tok = buildWordVocab(CORPUS, { specials: SPECIALS, byteFallback: true });
    const encoded = tok.encode('Marne 日本 東京 emoji 👍🏽 Marne');
    expect(encoded).toContain(tok.idOf('<0x20>'));
    expect(tok.decode(encoded)).toBe('Marne 日本 東京 emoji 👍 🏽 Marne');
    expect(tok.encode(tok.decode(encoded))).toEqual(encoded);
  });

  it('requires all 256 byte tokens when byteFallback is on', () => {
    const file: WordTokenizerFile = {
      type: 'word',
      byteFallback: true,
      specials: { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' },
      tokens: ['<pad>', '<bos>', '<eos>', '<unk>', '<0x00>', 'a'],
    };
    expect(() => new WordTokenizer(file, 'vocab.json')).toThrow(
      /vocab\.json: field "tokens" lacks the byte token <0x01>/,
    );
  });
});

describe('WordTokenizer: round trip', () => {
  const tok = buildWordVocab(CORPUS, { specials: SPECIALS, lowercase: true, alwaysInclude: [...'0123456789'] });

  it('returns text in normal form unchanged', () => {
    for (const text of [
      'the capital of veloria is marne.',
      'it costs 3.14 dollars, or 1,000 coins (roughly); "cheap" they say.',
      "don't search twice: state-of-the-art tools a/b.",
      '<think>what is the capital of veloria?</think><search>capital of veloria</search><info>marne lies on the river sol</info>',
      'marne lies 12 km from the coast!',
      '',
    ]) {
      expect(tok.decode(tok.encode(text))).toBe(text);
    }
  });

  it('normalises spacing, case and composition, and the normal form is a fixed point', () => {
    const messy = '  The   CAPITAL\nof Veloria ,is  Marne . ( about 12 km ) ';
    const normal = tok.decode(tok.encode(messy));
    expect(normal).toBe('the capital of veloria, is marne. (about 12 km)');
    expect(tok.encode(normal)).toEqual(tok.encode(messy));
    // NFD "e" + combining acute and NFC "é" are the same word.
    const t2 = buildWordVocab(['café'], { specials: SPECIALS });
    expect(t2.encode('cafe\u0301')).toEqual(t2.encode('café'));
    expect(t2.encode('café')).not.toContain(t2.specials.unk);
  });

  it('never lets decoded pieces run together into a special token', () => {
    const t = buildWordVocab(['[ ] < > / sep think'], {
      specials: { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>', sep: '[SEP]', think: '</think>' },
      byteFallback: true,
    });
    for (const text of ['[ SEP ]', '< / think >', '[SEP ]']) {
      const encoded = t.encode(text);
      expect(encoded).not.toContain(t.specials.sep);
      expect(t.encode(t.decode(encoded))).toEqual(encoded);
    }
  });

  it('re-encodes decoded text to the same ids, for random text (property)', () => {
    const fragments = [
      '[',
      'SEP',
      'sep',
      ']',
      '<',
      '>',
      '/',
      'think',
      'a',
      'the',
      '[SEP]',
      '</think>',
      '<unk>',
      '"',
      "'",
      '.',
      '3',
    ];
    const unicode = [
      'Zü',
      'É',
      'e\u0301',
      '\u0301',
      '\u0338',
      '=',
      'ß',
      'İ',
      'Σ',
      '👍',
      '🏽',
      '\uFE0F',
      '日本',
      '½',
      'ﬁ',
      '\uFEFF',
      '(',
      ')',
      '-',
      ',',
      '1',
      '0',
      'city',
      'X',
    ];
    const specials = { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>', sep: '[SEP]', think: '</think>' };
    const rand = prng(20240611);
    let checked = 0;
    for (const lowercase of [false, true]) {
      for (const byteFallback of [false, true]) {
        const t = buildWordVocab(['a the city [ ] < > / " \' . , ( ) - 3 1 0 think'], {
          specials,
          lowercase,
          byteFallback,
        });
        for (const atoms of [fragments, unicode]) {
          for (let i = 0; i < 1500; i++) {
            const text = randomText(rand, atoms, 10);
            const encoded = t.encode(text);
            const normal = t.decode(encoded);
            expect(t.encode(normal), JSON.stringify({ text, normal, lowercase, byteFallback })).toEqual(encoded);
            expect(t.decode(t.encode(normal))).toBe(normal);
            checked++;
          }
        }
      }
    }
    expect(checked).toBe(12000);
  });
});

describe('buildWordVocab', () => {
  it('is deterministic: count descending, ties in code point order, corpus order irrelevant', () => {
    const corpus = ['b a c', 'a b d', 'c e', 'Z é'];
    const specials = { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' };
    const a = buildWordVocab(corpus, { specials });
    const b = buildWordVocab([...corpus].reverse(), { specials });
    expect(a.toJSON()).toEqual(b.toJSON());
    expect(a.toJSON()).toEqual({
      type: 'word',
      version: 1,
      lowercase: false,
      byteFallback: false,
      specials,
      tokens: ['<pad>', '<bos>', '<eos>', '<unk>', 'a', 'b', 'c', 'Z', 'd', 'e', 'é'],
    });
  });

  it('puts specials, then byte tokens, then alwaysInclude first, and honours maxSize and minCount', () => {
    const specials = { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>', sep: '<sep>' };
    const t = buildWordVocab(['x x x y y z <sep> <sep>'], {
      specials,
      byteFallback: true,
      alwaysInclude: ['7'],
      maxSize: 5 + 256 + 1 + 2,
    });
    const tokens = t.toJSON().tokens;
    expect(tokens.slice(0, 5)).toEqual(['<pad>', '<bos>', '<eos>', '<unk>', '<sep>']);
    expect(tokens[5]).toBe('<0x00>');
    expect(tokens[260]).toBe('<0xFF>');
    expect(tokens.slice(261)).toEqual(['7', 'x', 'y']);
    expect(t.vocabSize).toBe(264);

    const counted = buildWordVocab(['x x x y y z'], { specials, minCount: 2 });
    expect(counted.toJSON().tokens.slice(5)).toEqual(['x', 'y']);
  });

  it('rejects options that cannot work, naming the option', () => {
    const specials = { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' };
    expect(() => buildWordVocab([], { specials, byteFallback: true, maxSize: 100 })).toThrow(
      /"maxSize" is 100 .* need 260/,
    );
    expect(() => buildWordVocab([], { specials, alwaysInclude: ['new york'] })).toThrow(/"alwaysInclude"/);
    expect(() => buildWordVocab([], { specials: { pad: '<pad>', bos: '<bos>', unk: '<unk>' } })).toThrow(
      /"specials\.eos" is missing/,
    );
  });
});

describe('ByteTokenizer', () => {
  const tok = ByteTokenizer.withSpecials({
    pad: '<pad>',
    bos: '<bos>',
    eos: '<eos>',
    unk: '<unk>',
    think: '<think>',
    thinkEnd: '</think>',
  });

  it('puts the specials after the 256 bytes, in declaration order', () => {
    expect(tok.vocabSize).toBe(262);
    expect(tok.specials).toMatchObject({ pad: 256, bos: 257, eos: 258, unk: 259, think: 260, thinkEnd: 261 });
    expect(tok.tokenOf(0x41)).toBe('<0x41>');
    expect(tok.idOf('<0x0A>')).toBe(10);
    expect(tok.tokenOf(261)).toBe('</think>');
  });

  it('round-trips arbitrary unicode exactly', () => {
    const samples = [
      'plain ascii',
      '日本語のテキスト、東京。',
      'emoji 👍🏽 👨‍👩‍👧‍👦 ❤️',
      'combining e\u0301 vs é, ﬁ ligature, İstanbul, ß',
      '\uFEFFleading BOM and \u0000 NUL and \t\r\n whitespace   ',
      'تشفير عربي',
      '',
    ];
    for (const s of samples) expect(tok.decode(tok.encode(s))).toBe(s);
    expect(tok.encode('é')).toEqual([0xc3, 0xa9]);
    const rand = prng(7);
    for (let i = 0; i < 500; i++) {
      const cps = Array.from({ length: Math.floor(rand() * 20) }, () => {
        const cp = Math.floor(rand() * 0x10ffff);
        return cp >= 0xd800 && cp <= 0xdfff ? 0x41 : cp;
      });
      const s = String.fromCodePoint(...cps);
      expect(tok.decode(tok.encode(s))).toBe(s);
    }
  });

  it('reads specials inside text as single tokens and can skip them', () => {
    const encoded = tok.encode('a<think>日</think><eos>');
    expect(encoded).toEqual([0x61, 260, 0xe6, 0x97, 0xa5, 261, 258]);
    expect(tok.decode(encoded)).toBe('a<think>日</think><eos>');
    expect(tok.decode(encoded, { skipSpecial: true })).toBe('a日');
  });
});

describe('token lookups', () => {
  const word = buildWordVocab(CORPUS, { specials: SPECIALS, lowercase: true });
  const bytes = ByteTokenizer.withSpecials({ pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' });

  it('idOf on an unknown token throws naming the token', () => {
    expect(() => word.idOf('<tool>')).toThrow(UnknownTokenError);
    expect(() => word.idOf('<tool>')).toThrow(/"<tool>"/);
    expect(() => bytes.idOf('<search>')).toThrow(/"<search>"/);
    expect(() => bytes.idOf('a')).toThrow(UnknownTokenError);
  });

  it('rejects ids outside the vocabulary', () => {
    expect(() => word.decode([0, word.vocabSize])).toThrow(RangeError);
    expect(() => word.tokenOf(-1)).toThrow(RangeError);
    expect(() => bytes.decode([1.5])).toThrow(RangeError);
  });
});

describe('tokenizer files', () => {
  let dir = '';
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'mars-lab-tokenizer-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('save and load give the same tokenizer, for both types', async () => {
    const tokenizers: Tokenizer[] = [
      buildWordVocab(CORPUS, { specials: SPECIALS, lowercase: true, byteFallback: true }),
      ByteTokenizer.withSpecials(SPECIALS),
    ];
    for (const [i, tok] of tokenizers.entries()) {
      const path = join(dir, `tok${i}.json`);
      await saveTokenizer(path, tok);
      const loaded = await loadTokenizer(path);
      expect(loaded.toJSON()).toEqual(tok.toJSON());
      expect(loaded.constructor).toBe(tok.constructor);
      const text = '<think>the capital of Ünïcode-land 日本 is marne.</think>';
      expect(loaded.encode(text)).toEqual(tok.encode(text));
      expect(loaded.specials).toEqual(tok.specials);
    }
  });

  async function loadError(name: string, content: string): Promise<Error> {
    const path = join(dir, name);
    await writeFile(path, content);
    try {
      await loadTokenizer(path);
    } catch (err) {
      expect((err as Error).message).toContain(path);
      return err as Error;
    }
    throw new Error(`loading ${name} did not fail`);
  }

  const base = {
    type: 'word',
    specials: { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' },
    tokens: ['<pad>', '<bos>', '<eos>', '<unk>', 'a'],
  };

  it('names the field in load errors', async () => {
    const cases: Array<[string, unknown, RegExp]> = [
      ['type.json', { ...base, type: 'bpe' }, /field "type" is "bpe"/],
      [
        'missing-eos.json',
        { ...base, specials: { pad: '<pad>', bos: '<bos>', unk: '<unk>' } },
        /field "specials\.eos" is missing/,
      ],
      [
        'special-not-in-tokens.json',
        { ...base, specials: { ...base.specials, sep: '<sep>' } },
        /field "specials\.sep" is "<sep>", which is not in "tokens"/,
      ],
      ['duplicate.json', { ...base, tokens: [...base.tokens, 'a'] }, /field "tokens\[5\]" repeats "a"/],
      ['typo.json', { ...base, lowerCase: true }, /field "lowerCase" is not a tokenizer field/],
      ['bool.json', { ...base, lowercase: 'yes' }, /field "lowercase" is "yes"/],
      [
        'space.json',
        { ...base, specials: { ...base.specials, sep: '< sep >' } },
        /field "specials\.sep" .* whitespace/,
      ],
      [
        'wordlike.json',
        { ...base, specials: { ...base.specials, sep: 'sep' } },
        /field "specials\.sep" .* not a letter or digit/,
      ],
      [
        'contains.json',
        { ...base, tokens: [...base.tokens, 'a<eos>'] },
        /field "tokens\[5\]" .* contains the special token "<eos>"/,
      ],
      [
        'byte-extra.json',
        { type: 'byte', specials: base.specials, tokens: [] },
        /field "tokens" is not a tokenizer field/,
      ],
      ['version.json', { ...base, version: 2 }, /field "version" is 2/],
    ];
    for (const [name, obj, pattern] of cases) {
      const err = await loadError(name, JSON.stringify(obj));
      expect(err).toBeInstanceOf(TokenizerFileError);
      expect(err.message).toMatch(pattern);
    }
    const bad = await loadError('not-json.json', '{"type": "word",');
    expect(bad.message).toMatch(/field "\(root\)" is not valid JSON/);
  });

  it('tokenizerFromJSON names its source', () => {
    expect(() => tokenizerFromJSON([], 'presets/tiny.json')).toThrow(/presets\/tiny\.json: field "\(root\)"/);
    expect(tokenizerFromJSON(base).vocabSize).toBe(5);
  });
});
