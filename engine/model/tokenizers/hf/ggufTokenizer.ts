/**
 * A GGUF file's tokenizer, rebuilt from its metadata as the tokenizer.json object Hugging Face's files would hold, then
 * loaded like any other through hfTokenizer.ts (tokenizers.js). GGUF keeps tokens, merges, scores, token types, the
 * role ids and add_bos/add_eos (gguf-py's constants, `tokenizer.ggml.*`), and only the *name* of the pre-tokenizer.
 *
 *   tokenizer.ggml.model = gpt2   byte-level BPE: vocabulary and merges as stored; the pre-tokenizer (and Qwen's NFC)
 *                                 that `tokenizer.ggml.pre` names (ggufPreTokenizers.ts); ByteLevel decoder.
 *   tokenizer.ggml.model = llama  SentencePiece BPE with byte fallback (Llama 2, TinyLlama), as HF's LlamaTokenizerFast
 *                                 "legacy" tokenizer.json: ▁ for spaces (and one before the text, before each text after
 *                                 a special token, with add_space_prefix, as llama.cpp does), no pre-tokenizer, merges
 *                                 derived from the scores when the file has none, exactly as transformers derives them.
 * Token types (llama.cpp's llama_token_type): CONTROL and UNKNOWN become special added tokens, USER_DEFINED plain added
 * tokens (matched whole in text, as llama.cpp and HF's own files do); others are ordinary vocabulary.
 *
 * Where transformers' GGUF conversion (4.46.3, integrations/ggml.py) differs, this follows HF's own files and llama.cpp:
 * it ignores `pre` (SmolLM2's digits are then not split off, so "x  1" gets other ids than SmolLM2's tokenizer.json),
 * adds only CONTROL tokens as special, and adds bos whatever add_bos_token says.
 */
import { withGgufFile } from '../../formats/gguf/ggufFile';
import { isGgufArray, type GgufValue } from '../../formats/gguf/ggufTypes';
import { HfTokenizer, type HfTokenizerConfig, type HfTokenizerFiles } from './hfTokenizer';
import { definitionOf, GGUF_PRE_TOKENIZERS, type JsonComponent } from './ggufPreTokenizers';
import { HfTokenizerError } from './libraryCompat';

/** llama.cpp's llama_token_type values. */
const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;
const MAX_TOKENS = 1 << 22;

export interface GgufTokenizerOptions {
  /** Use this pre-tokenizer instead of the file's `tokenizer.ggml.pre` (gpt2 models only). */
  pre?: string;
}

/** Typed reads of `tokenizer.ggml.*` keys; each failure names the file and the key. */
class MetadataReader {
  constructor(
    private readonly meta: ReadonlyMap<string, GgufValue>,
    readonly source: string,
  ) {}

  fail(key: string, detail: string): never {
    throw new HfTokenizerError(this.source, `metadata ${key}`, detail);
  }

  string(key: string): string | undefined {
    const v = this.meta.get(key);
    if (v !== undefined && typeof v !== 'string') this.fail(key, 'must be a string');
    return v;
  }

  bool(key: string): boolean | undefined {
    const v = this.meta.get(key);
    if (v !== undefined && typeof v !== 'boolean') this.fail(key, 'must be a boolean');
    return v;
  }

  /** A token id: a non-negative integer below `count`. */
  id(key: string, count: number): number | undefined {
    const v = this.meta.get(key);
    if (v === undefined) return undefined;
    const n = typeof v === 'bigint' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n >= count) {
      this.fail(key, `must be a token id below ${count}`);
    }
    return n;
  }

  strings(key: string): string[] | undefined {
    const v = this.meta.get(key);
    if (v === undefined) return undefined;
    if (!isGgufArray(v) || !Array.isArray(v.items) || v.items.some((s) => typeof s !== 'string')) {
      this.fail(key, 'must be an array of strings');
    }
    return v.items as string[];
  }

  numbers(key: string, length: number): ArrayLike<number> | undefined {
    const v = this.meta.get(key);
    if (v === undefined) return undefined;
    if (!isGgufArray(v) || Array.isArray(v.items) || v.items instanceof BigInt64Array) {
      this.fail(key, 'must be an array of numbers');
    }
    if (v.items instanceof BigUint64Array) this.fail(key, 'must be an array of numbers');
    if (v.items.length !== length) this.fail(key, `has ${v.items.length} entries for ${length} tokens`);
    return v.items;
  }
}

/** The tokenizer.json object and config equivalent to the GGUF metadata `meta` of the file `source`. */
export function tokenizerFilesFromGguf(
  meta: ReadonlyMap<string, GgufValue>,
  source: string,
  opts: GgufTokenizerOptions = {},
): HfTokenizerFiles {
  const r: MetadataReader = new MetadataReader(meta, source);
  const model = r.string('tokenizer.ggml.model');
  if (model === undefined) r.fail('tokenizer.ggml.model', 'is absent: the file carries no tokenizer');
  if (model !== 'gpt2' && model !== 'llama') {
    r.fail('tokenizer.ggml.model', `is ${JSON.stringify(model)}; mars-lab rebuilds "gpt2" and "llama" tokenizers only`);
  }
  const tokens = r.strings('tokenizer.ggml.tokens');
  if (tokens === undefined || tokens.length === 0) r.fail('tokenizer.ggml.tokens', 'is absent or empty');
  if (tokens.length > MAX_TOKENS) {
    r.fail('tokenizer.ggml.tokens', `has ${tokens.length} tokens, more than ${MAX_TOKENS}`);
  }
  const types = r.numbers('tokenizer.ggml.token_type', tokens.length);
  const roleId = (role: string): number | undefined => r.id(`tokenizer.ggml.${role}_token_id`, tokens.length);
  const ids = { bos: roleId('bos'), eos: roleId('eos'), unk: roleId('unknown'), pad: roleId('padding') };
  const text = (id: number | undefined): string | null => (id === undefined ? null : tokens[id]!);
  const body = model === 'gpt2' ? byteLevelBody(r, tokens, opts) : sentencePieceBody(r, tokens, text(ids.unk));
  const config: HfTokenizerConfig = {
    bos_token: text(ids.bos),
    eos_token: text(ids.eos),
    unk_token: text(ids.unk),
    pad_token: text(ids.pad),
    add_bos_token: r.bool('tokenizer.ggml.add_bos_token') ?? body.addBosByDefault,
    add_eos_token: r.bool('tokenizer.ggml.add_eos_token') ?? false,
  };
  const tokenizer: Record<string, unknown> = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: addedTokens(tokens, types),
    normalizer: body.normalizer,
    pre_tokenizer: body.preTokenizer,
    post_processor: null,
    decoder: body.decoder,
    model: {
      type: 'BPE',
      dropout: null,
      unk_token: body.unkToken,
      continuing_subword_prefix: null,
      end_of_word_suffix: null,
      fuse_unk: body.byteFallback,
      byte_fallback: body.byteFallback,
      ignore_merges: body.ignoreMerges,
      vocab: vocabOf(tokens),
      merges: body.merges,
    },
  };
  return { tokenizer, config };
}

interface ModelBody {
  normalizer: JsonComponent | null;
  preTokenizer: JsonComponent | null;
  decoder: JsonComponent;
  merges: Array<[string, string]>;
  unkToken: string | null;
  byteFallback: boolean;
  ignoreMerges: boolean;
  addBosByDefault: boolean;
}

function byteLevelBody(r: MetadataReader, tokens: string[], opts: GgufTokenizerOptions): ModelBody {
  const pre = opts.pre ?? r.string('tokenizer.ggml.pre');
  const known = [...GGUF_PRE_TOKENIZERS.keys()].join(', ');
  if (pre === undefined) r.fail('tokenizer.ggml.pre', `is absent; mars-lab knows these pre-tokenizers: ${known}`);
  const def = definitionOf(pre);
  if (def === undefined) {
    r.fail(
      'tokenizer.ggml.pre',
      `is ${JSON.stringify(pre)}, a pre-tokenizer mars-lab does not know (it knows ${known})`,
    );
  }
  const stored = r.strings('tokenizer.ggml.merges');
  if (stored === undefined) r.fail('tokenizer.ggml.merges', 'is absent; a gpt2 (byte-level BPE) tokenizer needs them');
  return {
    normalizer: def.normalizer,
    preTokenizer: def.pre_tokenizer,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    merges: parseMerges(r, stored),
    unkToken: null,
    byteFallback: false,
    ignoreMerges: def.ignoreMerges,
    addBosByDefault: def.addBosByDefault,
  };
}

function sentencePieceBody(r: MetadataReader, tokens: string[], unk: string | null): ModelBody {
  const prefix = r.bool('tokenizer.ggml.add_space_prefix') ?? true;
  const stored = r.strings('tokenizer.ggml.merges');
  let merges: Array<[string, string]>;
  if (stored !== undefined) {
    merges = parseMerges(r, stored);
  } else {
    const scores = r.numbers('tokenizer.ggml.scores', tokens.length);
    if (scores === undefined) r.fail('tokenizer.ggml.scores', 'is absent, and so are merges: one of them is needed');
    merges = mergesFromScores(tokens, scores);
  }
  const space = { type: 'Replace', pattern: { String: ' ' }, content: '▁' };
  return {
    normalizer: { type: 'Sequence', normalizers: prefix ? [{ type: 'Prepend', prepend: '▁' }, space] : [space] },
    preTokenizer: null,
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: '▁' }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        ...(prefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
      ],
    },
    merges,
    unkToken: unk,
    byteFallback: true,
    ignoreMerges: false,
    addBosByDefault: true,
  };
}

function parseMerges(r: MetadataReader, stored: string[]): Array<[string, string]> {
  return stored.map((m, i) => {
    const parts = m.split(' ');
    if (parts.length !== 2 || parts[0] === '' || parts[1] === '') {
      r.fail(
        'tokenizer.ggml.merges',
        `entry ${i} is ${JSON.stringify(m.slice(0, 40))}, not two tokens joined by a space`,
      );
    }
    return [parts[0]!, parts[1]!];
  });
}

/** Token → id; a token stored twice keeps its last id (as transformers' conversion does). No prototype: a token may be
 * "__proto__". */
function vocabOf(tokens: string[]): Record<string, number> {
  const vocab = Object.create(null) as Record<string, number>;
  tokens.forEach((t, i) => {
    vocab[t] = i;
  });
  return vocab;
}

function addedTokens(tokens: string[], types: ArrayLike<number> | undefined): JsonComponent[] {
  const out: JsonComponent[] = [];
  if (types === undefined) return out;
  for (let id = 0; id < tokens.length; id++) {
    const type = types[id];
    if (type !== TOKEN_TYPE.CONTROL && type !== TOKEN_TYPE.UNKNOWN && type !== TOKEN_TYPE.USER_DEFINED) continue;
    const special = type !== TOKEN_TYPE.USER_DEFINED;
    out.push({ id, content: tokens[id], single_word: false, lstrip: false, rstrip: false, normalized: false, special });
  }
  return out;
}

/**
 * SentencePiece merges from the pieces' scores, exactly as transformers' GGUFTokenizerSkeleton builds them (so ids agree
 * with it): every split of a piece into two pieces of the vocabulary is a merge ranked by the piece's score, highest
 * first; a piece's own splits are ordered by their halves' scores, highest first; ties keep vocabulary order.
 */
export function mergesFromScores(tokens: string[], scores: ArrayLike<number>): Array<[string, string]> {
  const score = new Map<string, number>();
  tokens.forEach((t, i) => score.set(t, scores[i]!));
  const all: Array<{ l: string; r: string; s: number }> = [];
  for (const [piece, s] of score) {
    const cps = Array.from(piece);
    const local: Array<{ l: string; r: string; s: number }> = [];
    for (let k = 1; k < cps.length; k++) {
      const l = cps.slice(0, k).join('');
      const rest = cps.slice(k).join('');
      if (score.has(l) && score.has(rest)) local.push({ l, r: rest, s });
    }
    local.sort((a, b) => score.get(b.l)! - score.get(a.l)! || score.get(b.r)! - score.get(a.r)!);
    for (const m of local) all.push(m);
  }
  all.sort((a, b) => b.s - a.s);
  return all.map((m) => [m.l, m.r]);
}

/** The tokenizer of a .gguf file, read with the engine's GGUF reader (formats/gguf/). */
export async function loadGgufTokenizer(path: string, opts: GgufTokenizerOptions = {}): Promise<HfTokenizer> {
  const files = await withGgufFile(path, async (file) => tokenizerFilesFromGguf(file.metadata, path, opts));
  return new HfTokenizer(files, path);
}
