/**
 * The HF tokenizer adapter (engine/model/tokenizers/hf/): the engine's Tokenizer interface over tokenizers.js, the
 * corrections that make tokenizers.js agree with Rust `tokenizers` (each case checks the raw library still differs, so
 * the correction is what makes the difference), the refusals, and the HF folder loader. Offline, on tokenizer.json
 * objects built in code; the agreement with the Python reference on a real model is hfTokenizerPeers.test.ts.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Tokenizer as LibraryTokenizer } from '@huggingface/tokenizers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UserError } from '../../../engine/base/userError';
import { HfTokenizer, type HfTokenizerConfig } from '../../../engine/model/tokenizers/hf/hfTokenizer';
import { loadHfFolderTokenizer } from '../../../engine/model/tokenizers/hf/hfFolder';
import { HfTokenizerError } from '../../../engine/model/tokenizers/hf/libraryCompat';
import { UnknownTokenError } from '../../../engine/model/tokenizers/tokenizer';
import { byteLevel, byteName, tinyByteLevel, tinySentencePiece } from '../../fixtures/tokenizer/tokenizerKit';

const EOS: HfTokenizerConfig = { eos_token: '<|end|>' };

function make(json: Record<string, unknown>, config: HfTokenizerConfig = EOS): HfTokenizer {
  return new HfTokenizer({ tokenizer: json, config }, 'test/tokenizer.json');
}

/** The raw library's ids for the same file, without this adapter's corrections. */
function rawIds(json: Record<string, unknown>, text: string): number[] {
  return new LibraryTokenizer(structuredClone(json), {}).encode(text, { add_special_tokens: false }).ids;
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    const msg = (err as Error).message;
    expect(msg).not.toContain('\n');
    return msg;
  }
  throw new Error('expected a refusal');
}

const ADDED = [
  { content: '<|end|>', special: true },
  { content: '<tool>', special: false },
];

describe('HfTokenizer: the Tokenizer interface', () => {
  const json = tinyByteLevel({ words: [' hello', 'hello', ' world'], added: ADDED });
  const tok = make(json);
  const id = (text: string) => tok.idOf(byteLevel(text));

  it('encodes with the merges, a special text as its one token, and adds no bos/eos', () => {
    expect(tok.encode('hello world')).toEqual([id('hello'), id(' world')]);
    expect(tok.encode('hello<|end|> hello')).toEqual([id('hello'), tok.idOf('<|end|>'), id(' hello')]);
    expect(tok.encode('')).toEqual([]);
    expect(tok.vocabSize).toBe(256 + 4 + 5 + 5 + 2);
  });

  it('declares its roles; absent ones stand in as eos and are listed', () => {
    const end = tok.idOf('<|end|>');
    expect(tok.specials).toEqual({ bos: end, eos: end, unk: end, pad: end });
    expect(tok.absentRoles).toEqual(['bos', 'unk', 'pad']);
    expect(tok.isSpecial(end)).toBe(true);
    expect(tok.isSpecial(tok.idOf('<tool>'))).toBe(false);
    expect(tok.isSpecial(id('hello'))).toBe(false);
  });

  it('decodes, leaving out special tokens (not plain added tokens) when asked', () => {
    const ids = tok.encode('hello<|end|><tool> world');
    expect(tok.decode(ids)).toBe('hello<|end|><tool> world');
    expect(tok.decode(ids, { skipSpecial: true })).toBe('hello<tool> world');
    expect(tok.decode([])).toBe('');
    expect(tok.tokenOf(id(' world'))).toBe('Ġworld');
  });

  it('refuses ids outside the vocabulary and unknown token texts', () => {
    expect(() => tok.decode([tok.vocabSize])).toThrow(RangeError);
    expect(() => tok.decode([-1])).toThrow(RangeError);
    expect(() => tok.tokenOf(1.5)).toThrow(RangeError);
    expect(() => tok.idOf('nope')).toThrow(UnknownTokenError);
  });

  it('round-trips any well-formed text through the byte alphabet', () => {
    for (const s of [
      '',
      ' ',
      'héllo  wörld\n\n',
      '日本語 🏳️‍🌈 👨‍👩‍👧',
      '\x00\x1b\u0085\ufeff',
      'a\r\n\tb<|end|>',
      ' <tool> ',
    ]) {
      expect(tok.decode(tok.encode(s))).toBe(s);
    }
  });

  it('adds bos for the model only when its config says so', () => {
    const withBos = make(tinyByteLevel({ words: ['hi'], added: [...ADDED, { content: '<s>', special: true }] }), {
      ...EOS,
      bos_token: '<s>',
      add_bos_token: true,
    });
    expect(withBos.encodeForModel('hi')).toEqual([withBos.idOf('<s>'), withBos.idOf('hi')]);
    expect(tok.encodeForModel('hello')).toEqual(tok.encode('hello'));
  });

  it('is saved as its own files, not as a mars-lab tokenizer file', () => {
    expect(tok.hfFiles().tokenizer).toBe(json);
    expect(refusal(() => tok.toJSON())).toMatch(/saved as its own tokenizer\.json/);
  });
});

describe('HfTokenizer: where tokenizers.js differs from Rust tokenizers, corrected', () => {
  it("ByteLevel splits on Unicode White_Space (U+0085 is whitespace, U+FEFF is not), as Rust's \\s", () => {
    const json = tinyByteLevel({ words: [' \u0085', ' \ufeff'], added: ADDED });
    const tok = make(json);
    const b = (s: string) => Array.from(byteLevel(s), (c) => tok.idOf(c));
    // Rust: " " | "\u0085" | "a"; JavaScript's \s would keep " \u0085" together (one merged token).
    expect(tok.encode(' \u0085a')).toEqual([...b(' '), ...b('\u0085'), ...b('a')]);
    expect(rawIds(json, ' \u0085a')).toEqual([tok.idOf(byteLevel(' \u0085')), ...b('a')]);
    // Rust: " \ufeff" is one piece (U+FEFF is not whitespace); JavaScript's \s splits it.
    expect(tok.encode('x \ufeffa')).toEqual([...b('x'), tok.idOf(byteLevel(' \ufeff')), ...b('a')]);
    expect(rawIds(json, 'x \ufeffa')).toEqual([...b('x'), ...b(' '), ...b('\ufeff'), ...b('a')]);
  });

  it('Digits splits every \\p{N} character (Devanagari, Arabic-Indic, fractions), as char::is_numeric', () => {
    const preTokenizer = {
      type: 'Sequence',
      pretokenizers: [
        { type: 'Digits', individual_digits: true },
        { type: 'ByteLevel', add_prefix_space: false, use_regex: true },
      ],
    };
    const json = tinyByteLevel({
      words: ['१', '२', '١', '٢'],
      pairs: [
        ['१', '२'],
        ['١', '٢'],
      ],
      added: ADDED,
      preTokenizer,
    });
    const tok = make(json);
    expect(tok.encode('१२')).toEqual([tok.idOf(byteLevel('१')), tok.idOf(byteLevel('२'))]);
    expect(rawIds(json, '१२')).toEqual([tok.idOf(byteLevel('१२'))]);
    expect(tok.encode('١٢')).not.toEqual(rawIds(json, '١٢'));
  });

  it('WhitespaceSplit and Punctuation split as Rust does', () => {
    const bytes = { type: 'ByteLevel', add_prefix_space: false, use_regex: false };
    const ws = tinyByteLevel({
      words: ['a\u0085b'],
      added: ADDED,
      preTokenizer: { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, bytes] },
    });
    expect(make(ws).encode('a\u0085b')).toEqual([make(ws).idOf('a'), make(ws).idOf('b')]);
    expect(rawIds(ws, 'a\u0085b')).toEqual([make(ws).idOf(byteLevel('a\u0085b'))]);
    const punct = tinyByteLevel({
      words: ['!!'],
      added: ADDED,
      preTokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Punctuation' }, bytes] },
    });
    expect(make(punct).encode('!!')).toEqual([make(punct).idOf('!'), make(punct).idOf('!')]);
    expect(rawIds(punct, '!!')).toEqual([make(punct).idOf('!!')]);
  });

  it("ByteFallback keeps a leading U+FEFF and gives one U+FFFD per byte of a bad run, as Rust's", () => {
    const json = tinySentencePiece(['▁', '▁a', 'a'], [['▁', 'a']]);
    const tok = make(json, { eos_token: '</s>', unk_token: '<unk>', bos_token: '<s>' });
    expect(tok.decode(tok.encode('\ufeff'))).toBe('\ufeff');
    const cut = [tok.idOf(byteName(0xe4)), tok.idOf(byteName(0xbd))];
    expect(tok.decode(cut)).toBe('\uFFFD\uFFFD');
    expect(new LibraryTokenizer(structuredClone(json), {}).decode(cut)).toBe('\uFFFD');
  });

  it('SentencePiece-style BPE: ▁ for spaces, byte fallback for what the pieces lack, the one prefix space stripped', () => {
    const tok = make(
      tinySentencePiece(
        ['▁', 'a', 'b', '▁a', '▁ab'],
        [
          ['▁', 'a'],
          ['▁a', 'b'],
        ],
      ),
      {
        eos_token: '</s>',
        unk_token: '<unk>',
        bos_token: '<s>',
      },
    );
    expect(tok.encode('ab a')).toEqual([tok.idOf('▁ab'), tok.idOf('▁a')]);
    expect(tok.encode('é')).toEqual([tok.idOf('▁'), tok.idOf(byteName(0xc3)), tok.idOf(byteName(0xa9))]);
    for (const s of ['ab a', ' ab', 'é ü 日本', 'a  b']) expect(tok.decode(tok.encode(s))).toBe(s);
    expect(tok.specials).toMatchObject({ bos: 1, eos: 2, unk: 0 });
  });
});

describe('HfTokenizer: refusals in one line', () => {
  const split = (extra: Record<string, unknown>) =>
    tinyByteLevel({ added: ADDED, preTokenizer: { type: 'Split', pattern: { String: ' ' }, ...extra } });

  it('refuses split behaviours, Metaspace splitting and single_word tokens the library would get wrong', () => {
    expect(refusal(() => make(split({ behavior: 'MergedWithPrevious' })))).toMatch(
      /pre_tokenizer\.behavior is "MergedWithPrevious"; tokenizers\.js splits only Isolated or Removed/,
    );
    const meta = tinyByteLevel({ added: ADDED, preTokenizer: { type: 'Metaspace', replacement: '▁', split: true } });
    expect(refusal(() => make(meta))).toMatch(/pre_tokenizer\.split is true; tokenizers\.js does not split Metaspace/);
    const metaDefault = tinyByteLevel({ added: ADDED, preTokenizer: { type: 'Metaspace', replacement: '▁' } });
    expect(refusal(() => make(metaDefault))).toMatch(/pre_tokenizer\.split is absent \(Rust's default: true\)/);
    const noSplit = { type: 'Metaspace', replacement: '▁', prepend_scheme: 'first', split: false };
    expect(make(tinyByteLevel({ added: ADDED, preTokenizer: noSplit }))).toBeInstanceOf(HfTokenizer);
    const single = tinyByteLevel({ added: ADDED });
    (single.added_tokens as Array<Record<string, unknown>>)[1]!.single_word = true;
    expect(refusal(() => make(single))).toMatch(/added_tokens\[1\] \("<tool>"\) has single_word: true/);
  });

  it('refuses Oniguruma constructs the translator drops: \\G, atomic groups, possessive quantifiers', () => {
    const regex = (r: string) => split({ pattern: { Regex: r }, behavior: 'Isolated' });
    expect(refusal(() => make(regex('\\Ga')))).toMatch(/pattern\.Regex "\\\\Ga" uses \\G/);
    expect(refusal(() => make(regex('(?>a|ab)c')))).toMatch(/an atomic group/);
    expect(refusal(() => make(regex('a++b')))).toMatch(/a possessive quantifier \+\+/);
    expect(make(regex('[++]{2}+a'))).toBeInstanceOf(HfTokenizer);
  });

  it('names the field of a malformed file, an unknown component, and roles it cannot resolve', () => {
    const bad = { ...tinyByteLevel({ added: ADDED }), model: { type: 'BPE', vocab: 'x', merges: [] } };
    expect(refusal(() => make(bad))).toMatch(
      /^test\/tokenizer\.json: model\.vocab is not what a tokenizer\.json holds/,
    );
    const unknown = tinyByteLevel({ added: ADDED, preTokenizer: { type: 'UnicodeScripts' } });
    expect(refusal(() => make(unknown))).toMatch(/cannot be loaded by tokenizers\.js: Unknown PreTokenizer type/);
    expect(refusal(() => make(tinyByteLevel({ added: ADDED }), { eos_token: '<nope>' }))).toMatch(
      /eos_token is "<nope>", which is not a token/,
    );
    expect(refusal(() => make(tinyByteLevel({ added: ADDED }), {}))).toMatch(/eos_token is not declared/);
    expect(refusal(() => make(tinyByteLevel({ added: ADDED }), {}))).toBeTruthy();
    expect(() => make(tinyByteLevel({ added: ADDED }), {})).toThrow(HfTokenizerError);
  });
});

describe('loadHfFolderTokenizer', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'hf-folder-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  function folder(name: string, files: Record<string, unknown>): string {
    const d = path.join(dir, name);
    fs.mkdirSync(d);
    for (const [f, v] of Object.entries(files)) {
      fs.writeFileSync(path.join(d, f), typeof v === 'string' ? v : JSON.stringify(v));
    }
    return d;
  }

  const json = tinyByteLevel({ words: ['hi'], added: [...ADDED, { content: '<s>', special: true }] });

  it('reads roles as texts or AddedToken objects, with special_tokens_map.json as the fallback', async () => {
    const d = folder('roles', {
      'tokenizer.json': json,
      'tokenizer_config.json': { bos_token: { __type: 'AddedToken', content: '<s>' }, add_bos_token: true },
      'special_tokens_map.json': { eos_token: '<|end|>', pad_token: { content: '<tool>' } },
    });
    const tok = await loadHfFolderTokenizer(d);
    expect(tok.specials).toMatchObject({ bos: tok.idOf('<s>'), eos: tok.idOf('<|end|>'), pad: tok.idOf('<tool>') });
    expect(tok.encodeForModel('hi')).toEqual([tok.idOf('<s>'), tok.idOf('hi')]);
    expect(tok.source).toBe(path.join(d, 'tokenizer.json'));
  });

  it("takes add_bos from the post-processor's template when the config does not say (Llama 3)", async () => {
    const template = {
      type: 'TemplateProcessing',
      single: [{ SpecialToken: { id: '<s>', type_id: 0 } }, { Sequence: { id: 'A', type_id: 0 } }],
      pair: [],
      special_tokens: {},
    };
    const d = folder('template', {
      'tokenizer.json': { ...json, post_processor: template },
      'tokenizer_config.json': { bos_token: '<s>', eos_token: '<|end|>' },
    });
    const tok = await loadHfFolderTokenizer(d);
    expect([tok.addBos, tok.addEos]).toEqual([true, false]);
  });

  it('says in one line which file is missing, unreadable JSON or of the wrong shape', async () => {
    const fail = async (d: string) => {
      const err = (await loadHfFolderTokenizer(d).catch((e: unknown) => e)) as Error;
      expect(err).toBeInstanceOf(HfTokenizerError);
      expect(err.message).not.toContain('\n');
      return err.message;
    };
    expect(await fail(folder('none', {}))).toMatch(/tokenizer\.json: \(file\) cannot be read \(ENOENT\)/);
    expect(await fail(folder('badjson', { 'tokenizer.json': '{"model": ' }))).toMatch(/is not valid JSON/);
    expect(
      await fail(folder('badcfg', { 'tokenizer.json': json, 'tokenizer_config.json': { add_bos_token: 'yes' } })),
    ).toMatch(/tokenizer_config\.json: add_bos_token is not what it should hold/);
    expect(await fail(folder('array', { 'tokenizer.json': [] }))).toMatch(/must be a JSON object/);
  });
});
