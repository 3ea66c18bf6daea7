/**
 * A Hugging Face model folder's tokenizer: tokenizer.json, and the roles and add_bos/add_eos of tokenizer_config.json
 * (special_tokens_map.json where the config names no role), read with their sizes bounded and their shapes checked
 * (zod) before hfTokenizer.ts builds the tokenizer. The chat template in tokenizer_config.json is not read here: the
 * chat floor renders it.
 *
 * Where the config does not say whether bos is added, the tokenizer.json's TemplateProcessing post-processor does (Llama 3
 * declares its <|begin_of_text|> there only); without either, nothing is added (GPT-2, Qwen, SmolLM).
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { HfTokenizer, type HfTokenizerConfig, type HfTokenizerFiles } from './hfTokenizer';
import { HfTokenizerError } from './libraryCompat';
import { jsonParseProblem } from '../../../base/boundedText';

/** Gemma 3's tokenizer.json is 33 MB, Qwen's 7 MB; a file past these is not a tokenizer. */
const MAX_TOKENIZER_JSON_BYTES = 128 * 2 ** 20;
const MAX_CONFIG_BYTES = 16 * 2 ** 20;

/** A role's token in tokenizer_config.json / special_tokens_map.json: its text, or an AddedToken object with content. */
const roleSchema = z
  .union([z.string(), z.looseObject({ content: z.string() }), z.null()])
  .optional()
  .transform((v) => (v === undefined ? undefined : v === null ? null : typeof v === 'string' ? v : v.content));
const configSchema = z.looseObject({
  bos_token: roleSchema,
  eos_token: roleSchema,
  unk_token: roleSchema,
  pad_token: roleSchema,
  add_bos_token: z.boolean().nullable().optional(),
  add_eos_token: z.boolean().nullable().optional(),
});
type ConfigFile = z.infer<typeof configSchema>;

async function readBounded(file: string, maxBytes: number, required: boolean): Promise<string | null> {
  let size: number;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new HfTokenizerError(file, '(file)', 'is not a regular file');
    size = st.size;
  } catch (err) {
    if (err instanceof HfTokenizerError) throw err;
    if (!required && (err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new HfTokenizerError(
      file,
      '(file)',
      `cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`,
    );
  }
  if (size > maxBytes) {
    throw new HfTokenizerError(file, '(file)', `is ${size} bytes, more than the ${maxBytes} a tokenizer file may be`);
  }
  return readFile(file, 'utf8');
}

function parseJson(text: string, file: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HfTokenizerError(file, '(root)', `is not valid JSON (${jsonParseProblem(err)})`);
  }
}

async function readConfig(file: string): Promise<ConfigFile | null> {
  const text = await readBounded(file, MAX_CONFIG_BYTES, false);
  if (text === null) return null;
  const parsed = configSchema.safeParse(parseJson(text, file));
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new HfTokenizerError(file, issue.path.join('.') || '(root)', `is not what it should hold: ${issue.message}`);
  }
  return parsed.data;
}

/** Whether the tokenizer.json's TemplateProcessing puts a special token first (bos) / last (eos) of a single text. */
function templateAdds(tokenizer: Record<string, unknown>): { bos: boolean; eos: boolean } {
  const post = tokenizer.post_processor as { type?: unknown; single?: unknown; processors?: unknown } | null;
  const candidates = post?.type === 'Sequence' && Array.isArray(post.processors) ? post.processors : [post];
  for (const p of candidates as Array<{ type?: unknown; single?: unknown } | null>) {
    if (p?.type === 'TemplateProcessing' && Array.isArray(p.single) && p.single.length > 0) {
      const isSpecial = (item: unknown): boolean => typeof item === 'object' && item !== null && 'SpecialToken' in item;
      return { bos: isSpecial(p.single[0]), eos: isSpecial(p.single.at(-1)) };
    }
  }
  return { bos: false, eos: false };
}

/** The files of an HF folder, as HfTokenizer takes them. */
export async function readHfTokenizerFiles(dir: string): Promise<HfTokenizerFiles> {
  const jsonFile = path.join(dir, 'tokenizer.json');
  const text = await readBounded(jsonFile, MAX_TOKENIZER_JSON_BYTES, true);
  const tokenizer = parseJson(text!, jsonFile);
  if (typeof tokenizer !== 'object' || tokenizer === null || Array.isArray(tokenizer)) {
    throw new HfTokenizerError(jsonFile, '(root)', 'must be a JSON object with a "model"');
  }
  const tok = tokenizer as Record<string, unknown>;
  const none: ConfigFile = { bos_token: undefined, eos_token: undefined, unk_token: undefined, pad_token: undefined };
  const cfg = (await readConfig(path.join(dir, 'tokenizer_config.json'))) ?? none;
  const map = (await readConfig(path.join(dir, 'special_tokens_map.json'))) ?? none;
  const template = templateAdds(tok);
  const config: HfTokenizerConfig = {
    bos_token: cfg.bos_token ?? map.bos_token ?? null,
    eos_token: cfg.eos_token ?? map.eos_token ?? null,
    unk_token: cfg.unk_token ?? map.unk_token ?? null,
    pad_token: cfg.pad_token ?? map.pad_token ?? null,
    add_bos_token: cfg.add_bos_token ?? template.bos,
    add_eos_token: cfg.add_eos_token ?? template.eos,
  };
  return { tokenizer: tok, config };
}

/** The tokenizer of an HF model folder; every error is one line naming the file and the field. */
export async function loadHfFolderTokenizer(dir: string): Promise<HfTokenizer> {
  return new HfTokenizer(await readHfTokenizerFiles(dir), path.join(dir, 'tokenizer.json'));
}
