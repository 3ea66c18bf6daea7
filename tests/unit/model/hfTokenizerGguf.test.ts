/**
 * A GGUF file's tokenizer rebuilt from its metadata (engine/model/tokenizers/hf/ggufTokenizer.ts): the pre-tokenizer
 * each `tokenizer.ggml.pre` name stands for, token types as added tokens, SentencePiece merges derived from scores the
 * way transformers derives them, add_bos defaults, and the one-line refusals (unknown `pre`, unknown model, bad ids or
 * merges). Offline, on metadata maps built in code; the real SmolLM2 file and a SentencePiece file are compared with
 * Python in hfTokenizerPeers.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { UserError } from '../../../engine/base/userError';
import type { GgufValue } from '../../../engine/model/formats/gguf/ggufTypes';
import { GGUF_PRE_TOKENIZERS } from '../../../engine/model/tokenizers/hf/ggufPreTokenizers';
import { mergesFromScores, tokenizerFilesFromGguf } from '../../../engine/model/tokenizers/hf/ggufTokenizer';
import { HfTokenizer } from '../../../engine/model/tokenizers/hf/hfTokenizer';
import { byteChars, byteLevel, byteName } from '../../fixtures/tokenizer/tokenizerKit';

const strings = (items: string[]): GgufValue => ({ itemType: 8, items });
const ints = (items: number[]): GgufValue => ({ itemType: 5, items: Int32Array.from(items) });
const floats = (items: number[]): GgufValue => ({ itemType: 6, items: Float32Array.from(items) });

/** A gpt2-model vocabulary: specials, the 256 byte characters, then merged tokens ("ĠĠ", "12"). */
function gpt2Meta(extra: Record<string, GgufValue> = {}): Map<string, GgufValue> {
  const specials = ['<|endoftext|>', '<|im_start|>', '<|im_end|>', '<tool>'];
  const tokens = [...specials, ...byteChars(), 'ĠĠ', 'Ġ1', '12'];
  const types = tokens.map((_, i) => (i < 3 ? 3 : i === 3 ? 4 : 1));
  return new Map<string, GgufValue>(
    Object.entries({
      'tokenizer.ggml.model': 'gpt2',
      'tokenizer.ggml.pre': 'smollm',
      'tokenizer.ggml.tokens': strings(tokens),
      'tokenizer.ggml.token_type': ints(types),
      'tokenizer.ggml.merges': strings(['Ġ Ġ', 'Ġ 1', '1 2']),
      'tokenizer.ggml.bos_token_id': 1,
      'tokenizer.ggml.eos_token_id': 2,
      'tokenizer.ggml.unknown_token_id': 0,
      'tokenizer.ggml.padding_token_id': 2,
      'tokenizer.ggml.add_bos_token': false,
      ...extra,
    }),
  );
}

function load(meta: Map<string, GgufValue>, pre?: string): HfTokenizer {
  return new HfTokenizer(tokenizerFilesFromGguf(meta, 'model.gguf', pre ? { pre } : {}), 'model.gguf');
}

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(UserError);
    expect((err as Error).message).not.toContain('\n');
    return (err as Error).message;
  }
  throw new Error('expected a refusal');
}

describe('tokenizerFilesFromGguf: gpt2 (byte-level BPE)', () => {
  it('splits digits off for pre = smollm and not for gpt2, as their HF tokenizer.json files do', () => {
    const smollm = load(gpt2Meta());
    const gpt2 = load(gpt2Meta(), 'gpt2');
    const id = (t: HfTokenizer, s: string) => t.idOf(byteLevel(s));
    // smollm: "x  " | "1" | "2": the two spaces stay one piece; gpt2: "x" | " " | " 12".
    expect(smollm.encode('x  12')).toEqual([id(smollm, 'x'), id(smollm, '  '), id(smollm, '1'), id(smollm, '2')]);
    expect(gpt2.encode('x  12')).toEqual([id(gpt2, 'x'), id(gpt2, ' '), id(gpt2, ' 1'), id(gpt2, '2')]);
    expect(smollm.decode(smollm.encode('x  12 <|im_end|>'))).toBe('x  12 <|im_end|>');
  });

  it('makes CONTROL tokens special and USER_DEFINED ones plain added tokens; roles and add_bos from the metadata', () => {
    const tok = load(gpt2Meta());
    expect(tok.specials).toEqual({ bos: 1, eos: 2, unk: 0, pad: 2 });
    expect(tok.encode('a<|im_start|>b<tool>')).toEqual([tok.idOf('a'), 1, tok.idOf('b'), 3]);
    expect([tok.isSpecial(1), tok.isSpecial(3)]).toEqual([true, false]);
    expect(tok.addBos).toBe(false);
    expect(tok.vocabSize).toBe(4 + 256 + 3);
  });

  it('loads every pre-tokenizer it knows, with their normalizers, ignore_merges and add_bos defaults', () => {
    const meta = gpt2Meta();
    meta.delete('tokenizer.ggml.add_bos_token');
    for (const pre of GGUF_PRE_TOKENIZERS.keys()) {
      const files = tokenizerFilesFromGguf(meta, 'model.gguf', { pre });
      const tok = new HfTokenizer(files, 'model.gguf');
      expect(tok.decode(tok.encode("It's  12 naïve 日本 \u0085x")), pre).toBe("It's  12 naïve 日本 \u0085x");
      const model = files.tokenizer.model as { ignore_merges: boolean };
      const llama3 = ['llama-bpe', 'llama3', 'llama-v3'].includes(pre);
      expect([model.ignore_merges, tok.addBos], pre).toEqual([llama3, llama3]);
      expect(files.tokenizer.normalizer, pre).toEqual(pre === 'qwen2' ? { type: 'NFC' } : null);
    }
  });

  it('refuses an unknown or absent pre, naming it and the ones it knows', () => {
    expect(refusal(() => load(gpt2Meta({ 'tokenizer.ggml.pre': 'falcon' })))).toMatch(
      /^model\.gguf: metadata tokenizer\.ggml\.pre is "falcon", a pre-tokenizer mars-lab does not know \(it knows gpt-2, gpt2, smollm/,
    );
    const meta = gpt2Meta();
    meta.delete('tokenizer.ggml.pre');
    expect(refusal(() => load(meta))).toMatch(/tokenizer\.ggml\.pre is absent/);
  });

  it('refuses other models, bad ids, malformed merges and mismatched arrays in one line naming the key', () => {
    expect(refusal(() => load(gpt2Meta({ 'tokenizer.ggml.model': 'bert' })))).toMatch(
      /tokenizer\.ggml\.model is "bert"; mars-lab rebuilds "gpt2" and "llama" tokenizers only/,
    );
    expect(refusal(() => load(gpt2Meta({ 'tokenizer.ggml.eos_token_id': 99999 })))).toMatch(
      /tokenizer\.ggml\.eos_token_id must be a token id below 263/,
    );
    expect(refusal(() => load(gpt2Meta({ 'tokenizer.ggml.merges': strings(['Ġ Ġ', 'oops']) })))).toMatch(
      /tokenizer\.ggml\.merges entry 1 is "oops", not two tokens joined by a space/,
    );
    expect(refusal(() => load(gpt2Meta({ 'tokenizer.ggml.token_type': ints([1, 1]) })))).toMatch(
      /tokenizer\.ggml\.token_type has 2 entries for 263 tokens/,
    );
    expect(refusal(() => load(gpt2Meta({ 'tokenizer.ggml.tokens': ints([1]) })))).toMatch(
      /must be an array of strings/,
    );
    const none = gpt2Meta();
    none.delete('tokenizer.ggml.model');
    expect(refusal(() => load(none))).toMatch(/carries no tokenizer/);
  });

  it('keeps the last id of a token stored twice, as transformers does, and accepts "__proto__" as a token', () => {
    const meta = gpt2Meta();
    const tokens = [...(meta.get('tokenizer.ggml.tokens') as { items: string[] }).items, '__proto__', 'ĠĠ'];
    meta.set('tokenizer.ggml.tokens', strings(tokens));
    meta.set('tokenizer.ggml.token_type', ints(tokens.map((_, i) => (i < 3 ? 3 : 1))));
    const tok = load(meta);
    expect(tok.idOf('ĠĠ')).toBe(tokens.length - 1);
    expect(tok.idOf('__proto__')).toBe(tokens.length - 2);
  });
});

describe('tokenizerFilesFromGguf: llama (SentencePiece BPE with byte fallback)', () => {
  const pieces = ['▁', 'h', 'i', '▁h', '▁hi', 't', 'e', 'th', 'the', '▁the'];
  function spmMeta(extra: Record<string, GgufValue> = {}): Map<string, GgufValue> {
    const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: 256 }, (_, b) => byteName(b)), ...pieces];
    const types = tokens.map((_, i) => (i === 0 ? 2 : i < 3 ? 3 : i < 259 ? 6 : 1));
    const scores = tokens.map((_, i) => (i < 259 ? 0 : -(i - 259)));
    return new Map<string, GgufValue>(
      Object.entries({
        'tokenizer.ggml.model': 'llama',
        'tokenizer.ggml.tokens': strings(tokens),
        'tokenizer.ggml.scores': floats(scores),
        'tokenizer.ggml.token_type': ints(types),
        'tokenizer.ggml.bos_token_id': 1,
        'tokenizer.ggml.eos_token_id': 2,
        'tokenizer.ggml.unknown_token_id': 0,
        ...extra,
      }),
    );
  }

  it('puts ▁ for spaces and before the text, merges by score, falls back to bytes, and strips the ▁ on decode', () => {
    const tok = load(spmMeta());
    expect(tok.encode('hi the')).toEqual([tok.idOf('▁hi'), tok.idOf('▁the')]);
    expect(tok.encode('hé')).toEqual([tok.idOf('▁h'), tok.idOf(byteName(0xc3)), tok.idOf(byteName(0xa9))]);
    for (const s of ['hi the', ' hi', 'hé 日本', 'x\ny', '']) expect(tok.decode(tok.encode(s))).toBe(s);
    expect(tok.specials).toEqual({ bos: 1, eos: 2, unk: 0, pad: 2 });
    expect(tok.isSpecial(0)).toBe(true);
    expect(tok.encodeForModel('hi')).toEqual([1, tok.idOf('▁hi')]);
  });

  it('without add_space_prefix, adds no ▁ before the text and strips none', () => {
    const tok = load(spmMeta({ 'tokenizer.ggml.add_space_prefix': false }));
    expect(tok.encode('hi')).toEqual([tok.idOf('h'), tok.idOf('i')]);
    expect(tok.decode(tok.encode(' hi'))).toBe(' hi');
  });

  it('needs scores when there are no merges', () => {
    const meta = spmMeta();
    meta.delete('tokenizer.ggml.scores');
    expect(refusal(() => load(meta))).toMatch(/tokenizer\.ggml\.scores is absent, and so are merges/);
  });
});

describe('mergesFromScores', () => {
  it("ranks a piece's splits by the piece's score, then its halves' scores, ties in vocabulary order", () => {
    const tokens = ['a', 'b', 'c', 'ab', 'bc', 'abc', 'x', 'y', 'xy', 'ya', 'yb'];
    const scores = [0, 0, 0, -1, -2, -3, 0, 0, -1, -5, -5];
    expect(mergesFromScores(tokens, scores)).toEqual([
      ['a', 'b'],
      ['x', 'y'],
      ['b', 'c'],
      ['a', 'bc'],
      ['ab', 'c'],
      ['y', 'a'],
      ['y', 'b'],
    ]);
  });

  it('splits by code points, so a piece of astral characters never splits a surrogate pair', () => {
    expect(mergesFromScores(['😀', '😀😀'], [0, -1])).toEqual([['😀', '😀']]);
  });
});
