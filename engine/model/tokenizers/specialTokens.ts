/**
 * Special tokens: declared by role in a tokenizer file (never hard-coded in trainers) and recognised as single tokens
 * wherever their literal text appears in input. Also the `<0xNN>` names of byte tokens, shared by both tokenizers.
 */

/** Role name → token id. `pad`, `bos`, `eos` and `unk` always exist; tags (`think`, `search`, `sys1`, …) are whatever
 * the tokenizer file declares. Trainers look tags up here or with `Tokenizer.idOf('<search>')`. */
export interface SpecialTokens {
  readonly pad: number;
  readonly bos: number;
  readonly eos: number;
  readonly unk: number;
  readonly [role: string]: number;
}

export const REQUIRED_SPECIAL_ROLES = ['pad', 'bos', 'eos', 'unk'] as const;

const BYTE_NAME = /^<0x([0-9A-F]{2})>$/;

/** The Llama / SentencePiece name of a byte token: `<0x0A>` (two upper-case hex digits). */
export function byteTokenName(byte: number): string {
  return `<0x${byte.toString(16).toUpperCase().padStart(2, '0')}>`;
}

/** The byte a `<0xNN>` name stands for, or null for any other string. */
export function parseByteTokenName(token: string): number | null {
  const m = BYTE_NAME.exec(token);
  return m === null ? null : parseInt(m[1]!, 16);
}

export type Segment = { kind: 'text'; text: string } | { kind: 'special'; text: string };

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Finds declared special texts in input: leftmost match first, and the longest one where several start there
 * (so `</think>` is never read as `<` + `/think>` when both exist). */
export class SpecialTokenMatcher {
  readonly texts: readonly string[];
  readonly maxLength: number;
  private readonly pattern: RegExp;

  constructor(texts: Iterable<string>) {
    const unique = [...new Set(texts)];
    // Longer first: a JS alternation takes the first alternative that matches at a position.
    this.texts = unique.sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
    this.maxLength = this.texts.reduce((m, t) => Math.max(m, t.length), 0);
    // No `u` flag: literal texts match as code-unit sequences either way, and escapes stay valid for any text.
    this.pattern = new RegExp(this.texts.map(escapeRegExp).join('|'), 'g');
  }

  split(text: string): Segment[] {
    const out: Segment[] = [];
    if (this.texts.length === 0) return text === '' ? out : [{ kind: 'text', text }];
    let last = 0;
    this.pattern.lastIndex = 0;
    for (let m = this.pattern.exec(text); m !== null; m = this.pattern.exec(text)) {
      if (m.index > last) out.push({ kind: 'text', text: text.slice(last, m.index) });
      out.push({ kind: 'special', text: m[0] });
      last = m.index + m[0].length;
    }
    if (last < text.length) out.push({ kind: 'text', text: text.slice(last) });
    return out;
  }

  /** Whether some special text occurs in `text` starting before `join` and ending after it, i.e. gluing two pieces at
   * `join` would make encode() see a special token that neither piece was. */
  straddles(text: string, join: number): boolean {
    for (const s of this.texts) {
      for (let start = Math.max(0, join - s.length + 1); start < join; start++) {
        if (text.startsWith(s, start)) return true;
      }
    }
    return false;
  }
}
