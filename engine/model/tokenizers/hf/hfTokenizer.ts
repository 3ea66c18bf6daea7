/**
 * A real model's own tokenizer (issue 30, item 4): a Hugging Face tokenizer.json (with the special-token roles and
 * add_bos/add_eos of its tokenizer_config.json) run by the kept library @huggingface/tokenizers 0.2.0 (tokenizers.js)
 * behind the engine's Tokenizer interface (../tokenizer.ts), so samplers, trainers and the model server use it as they
 * use the word and byte tokenizers. Byte-level BPE (GPT-2, Llama 3, Qwen, SmolLM) and SentencePiece-style BPE with byte
 * fallback (Llama 2, TinyLlama) are what is tested; normalizers and pre-tokenizers run as the file declares them.
 * Where the file comes from: hfFolder.ts (an HF folder) and ggufTokenizer.ts (rebuilt from a GGUF file's metadata).
 *
 * Why tokenizers.js and not transformers.js's tokenizer: transformers.js (@huggingface/transformers 4.x) tokenizes
 * with this same library, and brings ONNX Runtime and Hub downloads with it; tokenizers.js alone has no dependencies,
 * takes the tokenizer.json object we read ourselves (no network, no file access of its own), and its components are
 * exported, which libraryCompat.ts needs to correct the few places where it disagrees with Rust `tokenizers`.
 *
 * Round-trip guarantee: decode(encode(s)) = s for every well-formed string s when the tokenizer's normalizer changes
 * nothing in s (byte-level BPE without a normalizer: every string; NFC tokenizers such as Qwen's: NFC strings; Llama
 * 2's legacy SentencePiece layout: strings in which no special token is followed by text, since it puts a ▁ before such
 * text that its decoder keeps, as Python's does). Lone UTF-16 surrogates, which UTF-8 cannot carry, become U+FFFD.
 * Decoding equals Rust `tokenizers`' decode and never cleans up spaces (transformers' clean_up_tokenization_spaces):
 * ids decode to what the model wrote.
 */
import { Tokenizer as LibraryTokenizer } from '@huggingface/tokenizers';
import { z } from 'zod';
import { UserError } from '../../../base/userError';
import type { DecodeOptions, Tokenizer, TokenizerFile } from '../tokenizer';
import type { SpecialTokens } from '../specialTokens';
import { UnknownTokenError } from '../tokenizerFile';
import { checkTokenId } from '../tokenIdRange';
import {
  HfTokenizerError,
  checkPipeline,
  firstLine,
  fixDecoders,
  fixPreTokenizers,
  librarySourceOf,
} from './libraryCompat';

/** The parts of tokenizer_config.json this adapter reads; roles name a token by its text. */
export interface HfTokenizerConfig {
  bos_token?: string | null;
  eos_token?: string | null;
  unk_token?: string | null;
  pad_token?: string | null;
  add_bos_token?: boolean;
  add_eos_token?: boolean;
}

/** What recreates an HfTokenizer: the tokenizer.json object and the config's roles. */
export interface HfTokenizerFiles {
  tokenizer: Record<string, unknown>;
  config: HfTokenizerConfig;
}

/** Ids past this are refused: far above any real vocabulary (Gemma's 262k), far below what would exhaust memory. */
const MAX_TOKEN_ID = (1 << 24) - 1;
const ROLES = ['bos', 'eos', 'unk', 'pad'] as const;
type Role = (typeof ROLES)[number];

const addedTokenSchema = z.looseObject({
  id: z.number().int().min(0).max(MAX_TOKEN_ID),
  content: z.string().min(1),
  special: z.boolean().optional(),
});
const componentSchema = z.looseObject({ type: z.string() }).nullable().optional();
const tokenizerJsonSchema = z.looseObject({
  added_tokens: z.array(addedTokenSchema).optional(),
  normalizer: componentSchema,
  pre_tokenizer: componentSchema,
  post_processor: componentSchema,
  decoder: componentSchema,
  model: z.looseObject({
    type: z.string().optional(),
    vocab: z.union([z.record(z.string(), z.number().int().min(0).max(MAX_TOKEN_ID)), z.array(z.unknown())]),
  }),
});

function zodIssue(err: z.ZodError): { field: string; detail: string } {
  const issue = err.issues[0]!;
  return { field: issue.path.length > 0 ? issue.path.join('.') : '(root)', detail: issue.message };
}

export class HfTokenizer implements Tokenizer {
  readonly vocabSize: number;
  readonly specials: SpecialTokens;
  /** Whether the model expects its bos token before a prompt (config add_bos_token); encodeForModel adds it. */
  readonly addBos: boolean;
  readonly addEos: boolean;
  /** Roles the model does not declare; each stands in as the eos token (the interface requires all four). */
  readonly absentRoles: readonly Role[];
  readonly source: string;
  private readonly lib: LibraryTokenizer;
  private readonly specialIds: ReadonlySet<number>;
  private readonly files: HfTokenizerFiles;

  /** Validates the files completely; every error is one line naming `source` and the field. */
  constructor(files: HfTokenizerFiles, source: string) {
    this.source = source;
    this.files = files;
    const parsed = tokenizerJsonSchema.safeParse(files.tokenizer);
    if (!parsed.success) {
      const { field, detail } = zodIssue(parsed.error);
      throw new HfTokenizerError(source, field, `is not what a tokenizer.json holds: ${detail}`);
    }
    checkPipeline(files.tokenizer, source, librarySourceOf);
    this.lib = buildLibraryTokenizer(files, source);
    const vocab = this.lib.model!.vocab;
    this.vocabSize = vocab.length;
    const { specials, absent } = resolveRoles(files.config, (t) => this.lib.token_to_id(t), source);
    this.specials = specials;
    this.absentRoles = absent;
    const ids = new Set<number>(ROLES.map((r) => specials[r]));
    for (const [id, token] of this.lib.get_added_tokens_decoder()) if (token.special) ids.add(id);
    this.specialIds = ids;
    this.addBos = files.config.add_bos_token ?? false;
    this.addEos = files.config.add_eos_token ?? false;
  }

  encode(text: string): number[] {
    const ids = this.lib.encode(text, { add_special_tokens: false }).ids;
    for (const id of ids) {
      if (!Number.isInteger(id)) {
        throw new UserError(
          `${this.source}: a piece of the text has no token and the tokenizer declares no unk token; this text cannot be encoded with it`,
        );
      }
    }
    return ids;
  }

  /** encode() with the bos / eos the model's config asks for (add_bos_token / add_eos_token). */
  encodeForModel(text: string): number[] {
    const ids = this.encode(text);
    if (this.addBos) ids.unshift(this.specials.bos);
    if (this.addEos) ids.push(this.specials.eos);
    return ids;
  }

  decode(ids: ArrayLike<number>, opts: DecodeOptions = {}): string {
    const keep: number[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i]!;
      this.checkId(id);
      if (!(opts.skipSpecial && this.specialIds.has(id))) keep.push(id);
    }
    if (keep.length === 0) return '';
    return this.lib.decode(keep, { skip_special_tokens: false, clean_up_tokenization_spaces: false });
  }

  idOf(token: string): number {
    const id = this.lib.token_to_id(token);
    if (id === undefined) {
      throw new UnknownTokenError(token, this.source, 'name a token of its vocabulary (tokenizer.json model.vocab)');
    }
    return id;
  }

  tokenOf(id: number): string {
    this.checkId(id);
    return this.lib.id_to_token(id)!;
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }

  /** The tokenizer.json object and config that recreate this tokenizer (`new HfTokenizer(files, source)`). */
  hfFiles(): HfTokenizerFiles {
    return this.files;
  }

  /** Not available yet: mars-lab's tokenizer file (../tokenizerFile.ts) has no type for a Hugging Face tokenizer. */
  toJSON(): TokenizerFile {
    throw new UserError(
      `${this.source}: a Hugging Face tokenizer is saved as its own tokenizer.json (hfFiles()), not as a mars-lab tokenizer file`,
    );
  }

  private checkId(id: number): void {
    checkTokenId(id, this.vocabSize, this.source);
    if (this.lib.id_to_token(id) === undefined) {
      throw new RangeError(`Token id ${id} has no token in ${this.source} (a gap in its vocabulary)`);
    }
  }
}

/** The library's tokenizer over a copy of the file with every pipeline key present (it requires them), then fixed. */
function buildLibraryTokenizer(files: HfTokenizerFiles, source: string): LibraryTokenizer {
  const json = {
    normalizer: null,
    pre_tokenizer: null,
    post_processor: null,
    decoder: null,
    ...files.tokenizer,
    added_tokens: files.tokenizer.added_tokens ?? [],
  };
  // Only what Rust `tokenizers` itself uses reaches the library: transformers-only options (remove_space,
  // do_lowercase_and_remove_accent, clean_up_tokenization_spaces) would change ids or text.
  const roles = Object.fromEntries(
    ROLES.map((r) => [`${r}_token`, files.config[`${r}_token`] ?? undefined]).filter(([, v]) => v !== undefined),
  ) as Record<string, string>;
  let lib: LibraryTokenizer;
  try {
    lib = new LibraryTokenizer(json, { ...roles, clean_up_tokenization_spaces: false });
  } catch (err) {
    throw new HfTokenizerError(source, '(tokenizer.json)', `cannot be loaded by tokenizers.js: ${firstLine(err)}`);
  }
  fixPreTokenizers(lib.pre_tokenizer);
  fixDecoders(lib.decoder);
  return lib;
}

function resolveRoles(
  config: HfTokenizerConfig,
  idOf: (token: string) => number | undefined,
  source: string,
): { specials: SpecialTokens; absent: Role[] } {
  const found: Partial<Record<Role, number>> = {};
  const absent: Role[] = [];
  for (const role of ROLES) {
    const text = config[`${role}_token`];
    if (text === undefined || text === null) {
      absent.push(role);
      continue;
    }
    const id = idOf(text);
    if (id === undefined) {
      throw new HfTokenizerError(
        source,
        `${role}_token`,
        `is ${JSON.stringify(text)}, which is not a token of its tokenizer.json; name one of its tokens`,
      );
    }
    found[role] = id;
  }
  if (found.eos === undefined) {
    throw new HfTokenizerError(
      source,
      'eos_token',
      'is not declared; set eos_token in tokenizer_config.json (generation needs an end token)',
    );
  }
  const eos = found.eos;
  const specials = Object.freeze({
    bos: found.bos ?? eos,
    eos,
    unk: found.unk ?? eos,
    pad: found.pad ?? eos,
  });
  return { specials, absent };
}
