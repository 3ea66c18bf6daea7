/**
 * The tokenizer file format (JSON) and the checks that turn a bad file into an error naming the file and the field.
 * mars-lab's own format, not Hugging Face's `tokenizers` one: in a checkpoint it is `mars-lab-tokenizer.json`
 * (checkpointFiles.ts; older checkpoints call it tokenizer.json, which HF's loaders would take for theirs).
 *
 * Word tokenizer:
 *   {
 *     "type": "word",
 *     "version": 1,                      // optional; only 1 exists
 *     "lowercase": true,                 // optional, default false: lower-case (after NFC) all non-special text
 *     "byteFallback": false,             // optional, default false: OOV words become <0x00>…<0xFF> byte tokens
 *     "specials": {"pad": "<pad>", "bos": "<bos>", "eos": "<eos>", "unk": "<unk>",
 *                  "think": "<think>", "thinkEnd": "</think>", "sep": "<sep>", "sys1": "<sys1>", ...},
 *     "tokens": ["<pad>", "<bos>", "<eos>", "<unk>", ..., "the", "city", ".", "0", ...]
 *   }
 *   A token's id is its index in "tokens". Every special's text must be in "tokens"; with byteFallback all 256 byte
 *   tokens `<0x00>`…`<0xFF>` must be too. Tokens are unique and non-empty.
 *
 * Byte tokenizer:
 *   {"type": "byte", "version": 1, "specials": {"pad": "<pad>", "bos": "<bos>", "eos": "<eos>", "unk": "<unk>", ...}}
 *   Ids 0–255 are the bytes; specials follow in declaration order: the first declared is 256.
 *
 * In both, "specials" maps a role name to the token's literal text. Roles pad, bos, eos and unk are required; any
 * other role declares a tag. Role names must not start with a digit (JSON objects would reorder them); special
 * texts are non-empty, distinct, contain no whitespace, contain at least one character that is not a letter or digit
 * (brackets: `<sep>`, `[SEP]`), and are not byte-token names.
 */
import { UserError } from '../../base/userError';
import { REQUIRED_SPECIAL_ROLES, parseByteTokenName } from './specialTokens';

export interface WordTokenizerFile {
  type: 'word';
  version?: 1;
  lowercase?: boolean;
  byteFallback?: boolean;
  specials: Record<string, string>;
  tokens: string[];
}

export interface ByteTokenizerFile {
  type: 'byte';
  version?: 1;
  specials: Record<string, string>;
}

export type TokenizerFile = WordTokenizerFile | ByteTokenizerFile;

export const TOKENIZER_TYPES = ['word', 'byte'] as const;

/** A tokenizer file (or in-memory definition) that cannot be used; `field` is a JSON path such as `specials.eos`. */
export class TokenizerFileError extends UserError {
  constructor(
    readonly source: string,
    readonly field: string,
    detail: string,
  ) {
    super(`${source}: field "${field}" ${detail}`);
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function checkKnownFields(obj: Record<string, unknown>, known: readonly string[], source: string): void {
  for (const key of Object.keys(obj)) {
    if (!known.includes(key)) {
      throw new TokenizerFileError(
        source,
        key,
        `is not a tokenizer field; the fields of this type are ${known.join(', ')} (check the spelling)`,
      );
    }
  }
}

function checkVersion(obj: Record<string, unknown>, source: string): void {
  if (obj.version !== undefined && obj.version !== 1) {
    throw new TokenizerFileError(
      source,
      'version',
      `is ${JSON.stringify(obj.version)}; this mars-lab reads version 1 (or omit the field)`,
    );
  }
}

/**
 * The checks a tokenizer file of either type starts with: a JSON object, no field outside `fields`, `"type"` the
 * tokenizer's own, version 1 (or none). Returns the file as an object whose fields the caller then checks.
 */
export function checkFileHead(
  file: unknown,
  type: TokenizerFile['type'],
  fields: readonly string[],
  source: string,
): Record<string, unknown> {
  if (!isPlainObject(file)) {
    throw new TokenizerFileError(source, '(root)', `must be a JSON object with "type": "${type}"`);
  }
  checkKnownFields(file, fields, source);
  if (file.type !== type) {
    throw new TokenizerFileError(
      source,
      'type',
      `is ${JSON.stringify(file.type)}; a ${type} tokenizer has "type": "${type}"`,
    );
  }
  checkVersion(file, source);
  return file;
}

export function optionalBoolean(obj: Record<string, unknown>, field: string, source: string): boolean {
  const value = obj[field];
  if (value === undefined) return false;
  if (typeof value !== 'boolean') {
    throw new TokenizerFileError(source, field, `is ${JSON.stringify(value)}; it must be true or false`);
  }
  return value;
}

/** Validated specials as [role, text] pairs in declaration order. */
export function checkSpecials(raw: unknown, source: string): Array<[string, string]> {
  if (!isPlainObject(raw)) {
    throw new TokenizerFileError(
      source,
      'specials',
      `must be an object mapping role names to token texts, e.g. {"pad": "<pad>", "bos": "<bos>", "eos": "<eos>", "unk": "<unk>"}`,
    );
  }
  const pairs: Array<[string, string]> = [];
  const roleOfText = new Map<string, string>();
  for (const [role, text] of Object.entries(raw)) {
    const field = `specials.${role}`;
    if (role === '' || /^[0-9]/.test(role) || /\s/.test(role)) {
      throw new TokenizerFileError(
        source,
        field,
        'has an invalid role name; use a name that does not start with a digit and has no spaces, e.g. "thinkEnd"',
      );
    }
    if (typeof text !== 'string' || text === '') {
      throw new TokenizerFileError(
        source,
        field,
        `is ${JSON.stringify(text)}; it must be the token's non-empty text, e.g. "<${role}>"`,
      );
    }
    if (/\s/.test(text)) {
      throw new TokenizerFileError(
        source,
        field,
        `is ${JSON.stringify(text)}; special tokens cannot contain whitespace`,
      );
    }
    // A special made only of letters and digits could hide inside an ordinary word ("sep" in "separate").
    if (/^[\p{L}\p{M}\p{Nd}]+$/u.test(text)) {
      throw new TokenizerFileError(
        source,
        field,
        `is ${JSON.stringify(text)}; a special token needs a character that is not a letter or digit, e.g. "<${text}>"`,
      );
    }
    if (parseByteTokenName(text) !== null) {
      throw new TokenizerFileError(
        source,
        field,
        `is ${JSON.stringify(text)}, which is the name of a byte token; choose another text`,
      );
    }
    const other = roleOfText.get(text);
    if (other !== undefined) {
      throw new TokenizerFileError(
        source,
        field,
        `repeats the text ${JSON.stringify(text)} of "specials.${other}"; each role needs its own token`,
      );
    }
    roleOfText.set(text, role);
    pairs.push([role, text]);
  }
  for (const role of REQUIRED_SPECIAL_ROLES) {
    if (!(role in raw)) {
      throw new TokenizerFileError(
        source,
        `specials.${role}`,
        `is missing; every tokenizer declares ${REQUIRED_SPECIAL_ROLES.join(', ')} (e.g. "${role}": "<${role}>")`,
      );
    }
  }
  return pairs;
}

/** `idOf` on a token the tokenizer does not have. */
export class UnknownTokenError extends UserError {
  constructor(
    readonly token: string,
    readonly source: string,
    fix: string,
  ) {
    super(`Token ${JSON.stringify(token)} is not in the tokenizer from ${source}; ${fix}`);
  }
}
