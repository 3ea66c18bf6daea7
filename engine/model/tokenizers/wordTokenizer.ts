/**
 * A word-level tokenizer over a fixed vocabulary: the tokenizer of the synthetic worlds, where a model of a few hundred
 * thousand parameters must see whole words. File format: tokenizerFile.ts. Pre-tokens and joining: wordNormalForm.ts.
 *
 * Out-of-vocabulary pre-tokens become `unk`, or with `byteFallback` the UTF-8 bytes `<0x00>`…`<0xFF>`. Consecutive
 * out-of-vocabulary pre-tokens are spelt as one byte run that includes the spaces between them, so decode can put
 * them back where they were.
 *
 * Round-trip guarantee. Let normal(s) = decode(encode(s)). For every string s:
 *   1. encode(normal(s)) = encode(s), and so normal(normal(s)) = normal(s): decoded text re-encodes to the same ids.
 *   2. normal(s) = s exactly when s is already in normal form: NFC (lower-cased if `lowercase`), pre-tokens separated
 *      by single spaces except where the joining rules glue them (see wordNormalForm.ts), no leading/trailing space,
 *      and every word in the vocabulary (or `byteFallback` on). E.g. "<think>the capital of veloria is marne.</think>".
 *   Without byteFallback an out-of-vocabulary word comes back as the unk text ("<unk>"), which re-encodes to unk.
 * Ids that encode cannot produce (a model may sample the bytes of an in-vocabulary word) decode fine but need not
 * re-encode to themselves. decode with skipSpecial drops every special, unk included, and is outside the guarantee.
 */
import type { DecodeOptions, Tokenizer } from './tokenizer';
import { SpecialTokenMatcher, byteTokenName, type SpecialTokens } from './specialTokens';
import {
  TokenizerFileError,
  UnknownTokenError,
  checkFileHead,
  checkSpecials,
  optionalBoolean,
  type WordTokenizerFile,
} from './tokenizerFile';
import { checkTokenId } from './tokenIdRange';
import { WordJoiner, normaliseWordText, pretokenise } from './wordNormalForm';

const WORD_FIELDS = ['type', 'version', 'lowercase', 'byteFallback', 'specials', 'tokens'] as const;
const IN_MEMORY = '(in-memory word tokenizer)';

const utf8Encoder = new TextEncoder();
// ignoreBOM keeps a leading U+FEFF as text instead of silently dropping it.
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });

export class WordTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly specials: SpecialTokens;
  readonly lowercase: boolean;
  readonly byteFallback: boolean;
  /** Where the definition came from (a file path), named in errors. */
  readonly source: string;
  private readonly tokens: readonly string[];
  private readonly ids = new Map<string, number>();
  private readonly specialRoles: ReadonlyArray<[string, string]>;
  private readonly specialIds: ReadonlySet<number>;
  private readonly matcher: SpecialTokenMatcher;
  /** byte → id, and id → byte (−1 for non-byte tokens); empty without byteFallback. */
  private readonly idOfByte: Int32Array;
  private readonly byteOfId: Int16Array;

  /** Validates `file` completely; errors name `source` and the field. */
  constructor(file: WordTokenizerFile, source: string = IN_MEMORY) {
    const raw = checkFileHead(file, 'word', WORD_FIELDS, source);
    this.source = source;
    this.lowercase = optionalBoolean(raw, 'lowercase', source);
    this.byteFallback = optionalBoolean(raw, 'byteFallback', source);

    const tokens = raw.tokens;
    if (!Array.isArray(tokens) || tokens.length === 0) {
      throw new TokenizerFileError(
        source,
        'tokens',
        "must be a non-empty array of token strings; a token's id is its index",
      );
    }
    tokens.forEach((token: unknown, i) => {
      if (typeof token !== 'string' || token === '') {
        throw new TokenizerFileError(
          source,
          `tokens[${i}]`,
          `is ${JSON.stringify(token)}; every token must be a non-empty string`,
        );
      }
      const first = this.ids.get(token);
      if (first !== undefined) {
        throw new TokenizerFileError(
          source,
          `tokens[${i}]`,
          `repeats ${JSON.stringify(token)} (already tokens[${first}]); remove the duplicate`,
        );
      }
      this.ids.set(token, i);
    });
    this.tokens = [...(tokens as string[])];
    this.vocabSize = this.tokens.length;

    const roles = checkSpecials(raw.specials, source);
    const specialIds = new Set<number>();
    const byRole: Record<string, number> = {};
    for (const [role, text] of roles) {
      const id = this.ids.get(text);
      if (id === undefined) {
        throw new TokenizerFileError(
          source,
          `specials.${role}`,
          `is ${JSON.stringify(text)}, which is not in "tokens"; add it there`,
        );
      }
      byRole[role] = id;
      specialIds.add(id);
    }
    this.specialRoles = roles;
    this.specialIds = specialIds;
    this.specials = Object.freeze(byRole) as SpecialTokens;
    this.matcher = new SpecialTokenMatcher(roles.map(([, text]) => text));

    // A token that contains a special's text would re-encode as that special (or around it).
    this.tokens.forEach((token, i) => {
      if (specialIds.has(i)) return;
      const inside = this.matcher.texts.find((text) => token.includes(text));
      if (inside !== undefined) {
        throw new TokenizerFileError(
          source,
          `tokens[${i}]`,
          `is ${JSON.stringify(token)}, which contains the special token ${JSON.stringify(inside)}; remove it or rename the special`,
        );
      }
    });

    this.idOfByte = new Int32Array(this.byteFallback ? 256 : 0);
    this.byteOfId = new Int16Array(this.byteFallback ? this.vocabSize : 0).fill(-1);
    if (this.byteFallback) {
      for (let b = 0; b < 256; b++) {
        const id = this.ids.get(byteTokenName(b));
        if (id === undefined) {
          throw new TokenizerFileError(
            source,
            'tokens',
            `lacks the byte token ${byteTokenName(b)} although "byteFallback" is true; add all 256 tokens <0x00>…<0xFF>, or set "byteFallback": false`,
          );
        }
        this.idOfByte[b] = id;
        this.byteOfId[id] = b;
      }
    }
  }

  encode(text: string): number[] {
    const out: number[] = [];
    for (const segment of this.matcher.split(text)) {
      if (segment.kind === 'special') {
        out.push(this.ids.get(segment.text)!);
        continue;
      }
      let unknown: string[] = [];
      for (const piece of pretokenise(normaliseWordText(segment.text, this.lowercase))) {
        const id = this.ids.get(piece);
        if (id !== undefined && (!this.byteFallback || this.byteOfId[id] === -1)) {
          if (unknown.length > 0) this.spellInBytes(unknown, out);
          unknown = [];
          out.push(id);
        } else if (this.byteFallback) {
          unknown.push(piece);
        } else {
          out.push(this.specials.unk);
        }
      }
      if (unknown.length > 0) this.spellInBytes(unknown, out);
    }
    return out;
  }

  private spellInBytes(pieces: readonly string[], out: number[]): void {
    const joiner = new WordJoiner(this.matcher);
    for (const piece of pieces) joiner.append(piece, 'text');
    for (const b of utf8Encoder.encode(joiner.text())) out.push(this.idOfByte[b]!);
  }

  decode(ids: ArrayLike<number>, opts: DecodeOptions = {}): string {
    const joiner = new WordJoiner(this.matcher);
    let bytes: number[] = [];
    const flush = (): void => {
      if (bytes.length === 0) return;
      joiner.append(utf8Decoder.decode(new Uint8Array(bytes)), 'text');
      bytes = [];
    };
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      checkTokenId(id, this.vocabSize, this.source);
      if (this.byteFallback && this.byteOfId[id]! >= 0) {
        bytes.push(this.byteOfId[id]!);
        continue;
      }
      flush();
      if (this.specialIds.has(id)) {
        if (opts.skipSpecial) continue;
        joiner.append(this.tokens[id]!, id === this.specials.unk ? 'wordlike' : 'special');
      } else {
        joiner.append(this.tokens[id]!, 'text');
      }
    }
    flush();
    return joiner.text();
  }

  idOf(token: string): number {
    const id = this.ids.get(token);
    if (id === undefined) {
      throw new UnknownTokenError(
        token,
        this.source,
        'add it to "tokens" (a tag also to "specials") in the tokenizer file, or check the spelling',
      );
    }
    return id;
  }

  tokenOf(id: number): string {
    checkTokenId(id, this.vocabSize, this.source);
    return this.tokens[id]!;
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  toJSON(): WordTokenizerFile {
    return {
      type: 'word',
      version: 1,
      lowercase: this.lowercase,
      byteFallback: this.byteFallback,
      specials: Object.fromEntries(this.specialRoles),
      tokens: [...this.tokens],
    };
  }
}
