/**
 * The byte tokenizer: ids 0–255 are UTF-8 bytes, declared specials follow (the first declared is 256). It needs no
 * vocabulary file beyond its specials and never meets an unknown word, so it suits programs and any text whose
 * exact spelling matters.
 *
 * Round-trip guarantee: decode(encode(s)) = s for every well-formed string s (lone UTF-16 surrogates, which UTF-8
 * cannot carry, become U+FFFD). A special's literal text in s becomes that one special token and decodes back to the
 * same text. Ids decode to text even when they are not valid UTF-8 (invalid bytes become U+FFFD).
 */
import type { DecodeOptions, Tokenizer } from './tokenizer';
import { SpecialTokenMatcher, byteTokenName, parseByteTokenName, type SpecialTokens } from './specialTokens';
import { UnknownTokenError, checkFileHead, checkSpecials, type ByteTokenizerFile } from './tokenizerFile';
import { checkTokenId } from './tokenIdRange';

const BYTE_FIELDS = ['type', 'version', 'specials'] as const;
const IN_MEMORY = '(in-memory byte tokenizer)';

const utf8Encoder = new TextEncoder();
const utf8Decoder = new TextDecoder('utf-8', { ignoreBOM: true });

export class ByteTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly specials: SpecialTokens;
  readonly source: string;
  private readonly specialRoles: ReadonlyArray<[string, string]>;
  private readonly specialTexts: readonly string[];
  private readonly idOfSpecial = new Map<string, number>();
  private readonly matcher: SpecialTokenMatcher;

  /** Validates `file` completely; errors name `source` and the field. */
  constructor(file: ByteTokenizerFile, source: string = IN_MEMORY) {
    const raw = checkFileHead(file, 'byte', BYTE_FIELDS, source);
    this.source = source;
    this.specialRoles = checkSpecials(raw.specials, source);
    this.specialTexts = this.specialRoles.map(([, text]) => text);
    const byRole: Record<string, number> = {};
    this.specialRoles.forEach(([role, text], i) => {
      byRole[role] = 256 + i;
      this.idOfSpecial.set(text, 256 + i);
    });
    this.specials = Object.freeze(byRole) as SpecialTokens;
    this.vocabSize = 256 + this.specialRoles.length;
    this.matcher = new SpecialTokenMatcher(this.specialTexts);
  }

  /** A byte tokenizer with the given specials, e.g. `ByteTokenizer.withSpecials({pad: '<pad>', ...})`. */
  static withSpecials(specials: Record<string, string>, source: string = IN_MEMORY): ByteTokenizer {
    return new ByteTokenizer({ type: 'byte', version: 1, specials }, source);
  }

  encode(text: string): number[] {
    const out: number[] = [];
    for (const segment of this.matcher.split(text)) {
      if (segment.kind === 'special') out.push(this.idOfSpecial.get(segment.text)!);
      else for (const b of utf8Encoder.encode(segment.text)) out.push(b);
    }
    return out;
  }

  decode(ids: ArrayLike<number>, opts: DecodeOptions = {}): string {
    const parts: string[] = [];
    let bytes: number[] = [];
    const flush = (): void => {
      if (bytes.length > 0) parts.push(utf8Decoder.decode(new Uint8Array(bytes)));
      bytes = [];
    };
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      checkTokenId(id, this.vocabSize, this.source);
      if (id < 256) {
        bytes.push(id);
        continue;
      }
      flush();
      if (!opts.skipSpecial) parts.push(this.specialTexts[id - 256]!);
    }
    flush();
    return parts.join('');
  }

  idOf(token: string): number {
    const special = this.idOfSpecial.get(token);
    if (special !== undefined) return special;
    const byte = parseByteTokenName(token);
    if (byte !== null) return byte;
    throw new UnknownTokenError(
      token,
      this.source,
      'a byte tokenizer knows the byte tokens <0x00>…<0xFF> and the texts declared in "specials"; declare it there',
    );
  }

  tokenOf(id: number): string {
    checkTokenId(id, this.vocabSize, this.source);
    return id < 256 ? byteTokenName(id) : this.specialTexts[id - 256]!;
  }

  isSpecial(id: number): boolean {
    return Number.isInteger(id) && id >= 256 && id < this.vocabSize;
  }

  toJSON(): ByteTokenizerFile {
    return { type: 'byte', version: 1, specials: Object.fromEntries(this.specialRoles) };
  }
}
