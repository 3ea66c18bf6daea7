/**
 * Where tokenizers.js (@huggingface/tokenizers 0.2.0) would give other ids than the reference engine, Python/Rust
 * `tokenizers`, for a tokenizer.json, and what this adapter does about each: a fix where the library exposes the piece,
 * a one-line refusal where it cannot be made to agree. Each case was found against the Rust library (the agreement test,
 * tests/unit/model/hfTokenizerPeers.test.ts) or is named in tokenizers.js's own README as untranslatable.
 *
 * Fixed after construction (the library's components keep their compiled RegExp in a public `pattern` field):
 *   - ByteLevel's built-in GPT-2 pattern uses JavaScript's `\s`, which includes U+FEFF and misses U+0085; Rust's is
 *     Unicode White_Space. " \u0085a" gave other ids. The same pattern is recompiled with \p{White_Space}.
 *   - Digits uses `\d`, ASCII digits only under the `u` flag; Rust splits on char::is_numeric (\p{N}: ١٢٣, १२३, ½, ²).
 *   - Whitespace and WhitespaceSplit use ASCII `\w` / JavaScript `\s`; Rust's are Unicode word / White_Space.
 *   - Punctuation isolates runs of punctuation; Rust (behavior Isolated, its default) isolates each character.
 *   - ByteFallback decodes with a TextDecoder that drops a leading U+FEFF (Llama 2's "\ufeff" did not round-trip) and
 *     gives one U+FFFD per maximal bad subsequence; Rust keeps the BOM and gives one U+FFFD per byte token of a run that
 *     is not UTF-8 (a generation cut inside a character decodes as Python's does).
 * Refused on load (the library would run them, silently differently):
 *   - a Split or Punctuation behaviour other than Isolated/Removed (MergedWithPrevious, MergedWithNext, Contiguous);
 *   - Metaspace with split true or absent (Rust's default): Rust splits at each ▁, keeping it with the next word; the
 *     library does not split;
 *   - an added token with single_word: true (the library ignores it);
 *   - Oniguruma constructs the library's translator drops or weakens: `\G`, atomic groups `(?>…)`, possessive `*+ ++ ?+`;
 *   - any regular expression that can backtrack catastrophically (regexSafety.ts).
 */
import {
  ByteFallbackDecoder,
  ByteLevelPreTokenizer,
  DigitsPreTokenizer,
  PunctuationPreTokenizer,
  SequencePreTokenizer,
  SplitPreTokenizer,
  WhitespacePreTokenizer,
  WhitespaceSplitPreTokenizer,
  SequenceDecoder,
  type Decoder,
  type PreTokenizer,
} from '@huggingface/tokenizers';
import { UserError } from '../../../base/userError';
import { catastrophicBacktrackingReason } from './regexSafety';

/** Rust `tokenizers`' ByteLevel pattern (GPT-2's), with Unicode White_Space as Oniguruma's `\s` means it. */
const BYTE_LEVEL_PATTERN =
  /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\p{White_Space}\p{L}\p{N}]+|\p{White_Space}+(?!\P{White_Space})|\p{White_Space}+/gu;
/** The regex crate's Unicode `\w` (Alphabetic, marks, decimal digits, connector punctuation, join controls). */
const WORD = '\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\u200C\\u200D';
/** The library's punctuation set (\p{P} and ASCII symbols), each character alone as Rust isolates it. */
const PUNCTUATION = '\\p{P}\\u0021-\\u002F\\u003A-\\u0040\\u005B-\\u0060\\u007B-\\u007E';

const ACCEPTED_SPLIT_BEHAVIOURS = new Set(['Isolated', 'Removed', 'isolated', 'removed']);

/** A field of the tokenizer.json that cannot be loaded here: one line naming the file, the field and why. */
export class HfTokenizerError extends UserError {
  constructor(source: string, field: string, detail: string) {
    super(`${source}: ${field} ${detail}`);
  }
}

type Json = Record<string, unknown>;

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function quoted(s: string): string {
  const q = JSON.stringify(s);
  return q.length > 80 ? `${q.slice(0, 77)}…"` : q;
}

/**
 * Walks every object of the tokenizer.json's pipeline (normalizer, pre_tokenizer, post_processor, decoder: the model's
 * vocabulary is never walked) and refuses what the library would get wrong or what could hang it. `compile` turns an
 * Oniguruma pattern into the JavaScript source the library runs.
 */
export function checkPipeline(json: Json, source: string, compile: (regex: string) => string): void {
  for (const key of ['normalizer', 'pre_tokenizer', 'post_processor', 'decoder']) {
    walk(json[key], key, (obj, path) => checkComponent(obj, path, source, compile));
  }
  const added = Array.isArray(json.added_tokens) ? json.added_tokens : [];
  added.forEach((t, i) => {
    if (isObject(t) && t.single_word === true) {
      throw new HfTokenizerError(
        source,
        `added_tokens[${i}] (${quoted(String(t.content))})`,
        'has single_word: true, which tokenizers.js does not implement (it would match inside words); set it to false',
      );
    }
  });
}

function walk(value: unknown, path: string, visit: (obj: Json, path: string) => void, depth = 0): void {
  if (depth > 64) throw new UserError(`${path}: nested more than 64 levels deep`);
  if (Array.isArray(value)) {
    value.forEach((v, i) => walk(v, `${path}[${i}]`, visit, depth + 1));
  } else if (isObject(value)) {
    visit(value, path);
    for (const [k, v] of Object.entries(value)) walk(v, `${path}.${k}`, visit, depth + 1);
  }
}

function checkComponent(obj: Json, path: string, source: string, compile: (regex: string) => string): void {
  const type = obj.type;
  if ((type === 'Split' || type === 'Punctuation') && obj.behavior !== undefined) {
    const behavior = typeof obj.behavior === 'string' ? obj.behavior : JSON.stringify(obj.behavior);
    if (!ACCEPTED_SPLIT_BEHAVIOURS.has(behavior)) {
      throw new HfTokenizerError(
        source,
        `${path}.behavior`,
        `is ${quoted(behavior)}; tokenizers.js splits only Isolated or Removed (it would treat this as Isolated)`,
      );
    }
  }
  if (type === 'Metaspace' && obj.split !== false) {
    throw new HfTokenizerError(
      source,
      `${path}.split`,
      `is ${obj.split === undefined ? "absent (Rust's default: true)" : JSON.stringify(obj.split)}; tokenizers.js does not split Metaspace words (Rust does), so its ids would differ`,
    );
  }
  const pattern = obj.pattern;
  if (isObject(pattern) && typeof pattern.Regex === 'string') {
    checkRegex(pattern.Regex, `${path}.pattern.Regex`, source, compile);
  }
}

function checkRegex(regex: string, field: string, source: string, compile: (regex: string) => string): void {
  const construct = untranslatableConstruct(regex);
  if (construct !== null) {
    throw new HfTokenizerError(
      source,
      field,
      `${quoted(regex)} uses ${construct}, which tokenizers.js cannot translate from Oniguruma faithfully`,
    );
  }
  let js: string;
  try {
    js = compile(regex);
  } catch (err) {
    throw new HfTokenizerError(source, field, `${quoted(regex)} does not compile (${firstLine(err)})`);
  }
  const reason = catastrophicBacktrackingReason(js);
  if (reason !== null) {
    throw new HfTokenizerError(
      source,
      field,
      `${quoted(regex)} can backtrack catastrophically (${reason}); it would hang on some inputs, so it is refused`,
    );
  }
}

/** `\G`, `(?>`, or a possessive quantifier outside character classes and escapes; null if none. */
function untranslatableConstruct(regex: string): string | null {
  let classDepth = 0;
  for (let i = 0; i < regex.length; i++) {
    const c = regex[i]!;
    if (c === '\\') {
      if (regex[i + 1] === 'G' && classDepth === 0) return '\\G';
      i++;
      continue;
    }
    if (c === '[') classDepth++;
    else if (c === ']' && classDepth > 0) classDepth--;
    else if (classDepth === 0 && regex.startsWith('(?>', i)) return 'an atomic group (?>…)';
    else if (classDepth === 0 && '*+?'.includes(c) && regex[i + 1] === '+' && regex[i - 1] !== '(') {
      return `a possessive quantifier ${c}+`;
    }
  }
  return null;
}

/** The JavaScript source tokenizers.js compiles for an Oniguruma pattern (its own translator, through Split). */
export function librarySourceOf(regex: string): string {
  const split = new SplitPreTokenizer({ type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated' });
  if (split.pattern === null) throw new Error('the library compiled no pattern');
  return split.pattern.source;
}

export function firstLine(err: unknown): string {
  return (err instanceof Error ? err.message : String(err)).split('\n')[0]!.slice(0, 200);
}

/** Recompiles the patterns of the library's pre-tokenizers that differ from Rust's (see the opening comment). */
export function fixPreTokenizers(pre: PreTokenizer | null): void {
  if (pre === null) return;
  if (pre instanceof SequencePreTokenizer) {
    for (const p of pre.tokenizers) fixPreTokenizers(p);
  } else if (pre instanceof ByteLevelPreTokenizer) {
    pre.pattern = new RegExp(BYTE_LEVEL_PATTERN.source, 'gu');
  } else if (pre instanceof DigitsPreTokenizer) {
    pre.pattern = pre.config.individual_digits ? /[^\p{N}]+|\p{N}/gu : /[^\p{N}]+|\p{N}+/gu;
  } else if (pre instanceof WhitespacePreTokenizer) {
    // The library's Whitespace and WhitespaceSplit match a literal regex in their method: the method is replaced.
    const word = new RegExp(`[${WORD}]+|[^${WORD}\\p{White_Space}]+`, 'gu');
    pre.pre_tokenize_text = (text: string) => text.match(word) ?? [];
  } else if (pre instanceof WhitespaceSplitPreTokenizer) {
    pre.pre_tokenize_text = (text: string) => text.match(/\P{White_Space}+/gu) ?? [];
  } else if (pre instanceof PunctuationPreTokenizer) {
    const removed = String(pre.config.behavior ?? 'Isolated').toLowerCase() === 'removed';
    pre.pattern = new RegExp(`[^${PUNCTUATION}]+${removed ? '' : `|[${PUNCTUATION}]`}`, 'gu');
  } else if (pre instanceof SplitPreTokenizer) {
    // Split is translated by the library itself; its pattern was checked on load.
  }
}

const BYTE_TOKEN = /^<0x([0-9A-Fa-f]{2})>$/;
const strictUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Rust `tokenizers`' ByteFallback::decode_chain: runs of <0xNN> tokens become their UTF-8 text, or one U+FFFD each. */
function byteFallbackChain(tokens: string[]): string[] {
  const out: string[] = [];
  let run: number[] = [];
  const flush = (): void => {
    if (run.length === 0) return;
    try {
      out.push(strictUtf8.decode(Uint8Array.from(run)));
    } catch {
      for (let i = 0; i < run.length; i++) out.push('\uFFFD');
    }
    run = [];
  };
  for (const token of tokens) {
    const m = BYTE_TOKEN.exec(token);
    if (m !== null) {
      run.push(parseInt(m[1]!, 16));
      continue;
    }
    flush();
    out.push(token);
  }
  flush();
  return out;
}

/** Replaces the library's ByteFallback decoding with Rust's (see the opening comment). */
export function fixDecoders(decoder: Decoder | null): void {
  if (decoder === null) return;
  if (decoder instanceof SequenceDecoder) {
    for (const d of decoder.decoders) fixDecoders(d);
  } else if (decoder instanceof ByteFallbackDecoder) {
    decoder.decode_chain = byteFallbackChain;
  }
}
