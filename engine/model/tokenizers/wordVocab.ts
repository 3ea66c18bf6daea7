/**
 * Builds a word vocabulary from a corpus, for the synthetic worlds. Deterministic: the same corpus and options give
 * the same file on every machine (count descending, ties in code point order, no locale).
 *
 * Token order: the specials (in declaration order, so pad is 0 when declared first), then the 256 byte tokens when
 * byteFallback is on, then `alwaysInclude` in the order given, then corpus pre-tokens by frequency.
 */
import { compareCodePoints } from './codePointOrder';
import { SpecialTokenMatcher, byteTokenName } from './specialTokens';
import { TokenizerFileError, checkSpecials } from './tokenizerFile';
import { WordTokenizer } from './wordTokenizer';
import { normaliseWordText, pretokenise } from './wordNormalForm';

export interface BuildWordVocabOptions {
  /** Role → text, as in a tokenizer file; pad, bos, eos and unk are required. */
  specials: Record<string, string>;
  /** Total vocabulary size, specials and byte tokens included. Default: no limit. */
  maxSize?: number;
  /** Drop pre-tokens seen fewer times. Default 1. */
  minCount?: number;
  byteFallback?: boolean;
  lowercase?: boolean;
  /** Pre-tokens kept whatever the corpus says, e.g. the ten digits so every number is spellable. */
  alwaysInclude?: Iterable<string>;
}

const SOURCE = 'buildWordVocab options';

export function buildWordVocab(corpus: Iterable<string>, opts: BuildWordVocabOptions): WordTokenizer {
  const lowercase = opts.lowercase ?? false;
  const byteFallback = opts.byteFallback ?? false;
  const minCount = opts.minCount ?? 1;
  const maxSize = opts.maxSize ?? Infinity;
  if (!(Number.isInteger(minCount) && minCount >= 1)) {
    throw new TokenizerFileError(SOURCE, 'minCount', `is ${minCount}; it must be an integer ≥ 1`);
  }
  if (!(maxSize === Infinity || (Number.isInteger(maxSize) && maxSize >= 1))) {
    throw new TokenizerFileError(SOURCE, 'maxSize', `is ${maxSize}; it must be a positive integer`);
  }

  const roles = checkSpecials(opts.specials, SOURCE);
  const matcher = new SpecialTokenMatcher(roles.map(([, text]) => text));
  const tokens: string[] = roles.map(([, text]) => text);
  const taken = new Set(tokens);
  if (byteFallback) for (let b = 0; b < 256; b++) tokens.push(byteTokenName(b));
  for (const t of tokens) taken.add(t);

  for (const wanted of opts.alwaysInclude ?? []) {
    const pieces = pretokenise(normaliseWordText(wanted, lowercase));
    if (pieces.length !== 1 || pieces[0] !== wanted || matcher.split(wanted).some((s) => s.kind === 'special')) {
      throw new TokenizerFileError(
        SOURCE,
        'alwaysInclude',
        `has ${JSON.stringify(wanted)}, which encode() would cut into ${JSON.stringify(pieces)}; list single words, digits or punctuation marks${lowercase ? ' in lower case' : ''}`,
      );
    }
    if (!taken.has(wanted)) {
      tokens.push(wanted);
      taken.add(wanted);
    }
  }
  if (tokens.length > maxSize) {
    throw new TokenizerFileError(
      SOURCE,
      'maxSize',
      `is ${maxSize} but the specials, byte tokens and alwaysInclude already need ${tokens.length}; raise maxSize`,
    );
  }

  const counts = new Map<string, number>();
  for (const text of corpus) {
    for (const segment of matcher.split(text)) {
      if (segment.kind === 'special') continue;
      for (const piece of pretokenise(normaliseWordText(segment.text, lowercase))) {
        counts.set(piece, (counts.get(piece) ?? 0) + 1);
      }
    }
  }
  const ranked = [...counts]
    .filter(([piece, n]) => n >= minCount && !taken.has(piece))
    .sort((a, b) => b[1] - a[1] || compareCodePoints(a[0], b[0]));
  for (const [piece] of ranked) {
    if (tokens.length >= maxSize) break;
    tokens.push(piece);
  }
  return new WordTokenizer(
    { type: 'word', version: 1, lowercase, byteFallback, specials: Object.fromEntries(roles), tokens },
    'buildWordVocab',
  );
}
