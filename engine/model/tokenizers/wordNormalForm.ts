/**
 * The word tokenizer's view of text: how input is normalised and cut into pre-tokens, and how tokens are joined back
 * into text. Both halves live here because together they define the "normal form" the round-trip guarantee is about
 * (see wordTokenizer.ts).
 *
 * Pre-tokens: a run of letters (with their combining marks), a single decimal digit, or any other single non-space
 * character (punctuation, symbols, emoji). Digits are split one per token so that ten tokens cover every number: the
 * synthetic worlds ask for numbers the corpus never showed, and a small model copies and compares digit by digit
 * (Llama and others do the same).
 *
 * Joining: two pre-tokens are glued only where gluing cannot change how the text is cut again, so re-encoding
 * decoded text gives the same tokens. Letters next to letters always get a space; the rest is for readability:
 * digits reassemble into numbers ("3.14", "1,000"), punctuation attaches to the word before it, tags sit tight
 * against their content ("<answer>marne</answer>").
 */
import type { SpecialTokenMatcher } from './specialTokens';

const PRE_TOKEN = /\p{L}[\p{L}\p{M}]*|\p{Nd}|\S/gu;
const WORD_CHAR = /^[\p{L}\p{M}]$/u;
const MARK = /^\p{M}$/u;
const DIGIT = /^\p{Nd}$/u;

/** No space before these. */
const CLOSERS = new Set([...'.,;:!?)]}%…»›”']);
/** No space after these. */
const OPENERS = new Set([...'([{¿¡«‹“$#@']);
/** No space on either side (apostrophes inside words, hyphenated and slashed compounds, identifiers). */
const GLUE = new Set([...`'’-_/`]);
/** Between two digits, these belong to the number: "3.14", "1,000", "12:30". */
const NUMBER_INNER = new Set([...'.,:']);
/** Straight double quotes open and close alternately. */
const QUOTE = '"';

/** The normalisation applied to non-special text before it is cut: NFC, then lower case when asked. */
export function normaliseWordText(text: string, lowercase: boolean): string {
  const nfc = text.normalize('NFC');
  return lowercase ? nfc.toLowerCase().normalize('NFC') : nfc;
}

/** Cuts normalised text (with no special tokens in it) into pre-tokens; whitespace only separates. */
export function pretokenise(text: string): string[] {
  return text.match(PRE_TOKEN) ?? [];
}

function lastChar(s: string): string | undefined {
  if (s.length === 0) return undefined;
  const lo = s.charCodeAt(s.length - 1);
  const start = lo >= 0xdc00 && lo <= 0xdfff && s.length >= 2 ? s.length - 2 : s.length - 1;
  return String.fromCodePoint(s.codePointAt(start)!);
}

function charBeforeLast(s: string): string | undefined {
  const last = lastChar(s);
  return last === undefined ? undefined : lastChar(s.slice(0, s.length - last.length));
}

function firstChar(s: string): string | undefined {
  return s.length === 0 ? undefined : String.fromCodePoint(s.codePointAt(0)!);
}

/** How a piece joins its neighbours: plain text by its characters, a tag tightly, `unk` like a word. */
export type PieceKind = 'text' | 'special' | 'wordlike';

/** Builds decoded text piece by piece. Used by decode, and by encode to lay out a run of out-of-vocabulary words
 * before spelling it in bytes, so that the bytes say where the spaces go. */
export class WordJoiner {
  private readonly parts: string[] = [];
  /** The last characters written, enough to see any special text that would straddle the next join. */
  private tail = '';
  private lastKind: PieceKind = 'text';
  private openQuote = false;
  private readonly keep: number;

  constructor(private readonly specials: SpecialTokenMatcher) {
    this.keep = Math.max(specials.maxLength, 2) + 2;
  }

  append(piece: string, kind: PieceKind): void {
    if (piece === '') return;
    let space = this.parts.length > 0 && this.wantsSpace(piece, kind);
    if (!space && this.parts.length > 0 && this.specials.straddles(this.tail + piece, this.tail.length)) space = true;
    if (kind === 'text' && piece === QUOTE) this.openQuote = !this.openQuote;
    const added = space ? ' ' + piece : piece;
    this.parts.push(added);
    this.tail = (this.tail + added).slice(-this.keep);
    this.lastKind = kind;
  }

  text(): string {
    return this.parts.join('');
  }

  private wantsSpace(piece: string, kind: PieceKind): boolean {
    const right = firstChar(piece)!;
    const left = lastChar(this.tail)!;
    // A mark glued after anything would combine with it (and NFC may compose, e.g. "=" + U+0338 → "≠").
    if (kind !== 'special' && MARK.test(right)) return true;
    if (kind === 'special' || this.lastKind === 'special') return false;
    const leftWord = this.lastKind === 'wordlike' || WORD_CHAR.test(left);
    const rightWord = kind === 'wordlike' || WORD_CHAR.test(right);
    if (leftWord && rightWord) return true;
    if (kind === 'wordlike' || this.lastKind === 'wordlike') {
      return !(CLOSERS.has(right) || OPENERS.has(left) || GLUE.has(left) || GLUE.has(right));
    }
    if (DIGIT.test(left) && DIGIT.test(right)) return false;
    if (NUMBER_INNER.has(left) && DIGIT.test(right)) {
      const before = charBeforeLast(this.tail);
      if (before !== undefined && DIGIT.test(before)) return false;
    }
    // An opening quote attaches to what follows it, a closing one to what precedes it.
    if (right === QUOTE) return !this.openQuote && !OPENERS.has(left) && !GLUE.has(left);
    if (CLOSERS.has(right)) return false;
    if (left === QUOTE) return !this.openQuote;
    if (OPENERS.has(left)) return false;
    if (GLUE.has(left) || GLUE.has(right)) return false;
    return true;
  }
}
