/**
 * Where a model's chat template lives, read with its size bounded and vetted before use (templateProbe.ts):
 *
 *   HF folder   tokenizer_config.json's `chat_template` (a string, or transformers' list of named templates, of which
 *               "default" is taken), else chat_template.jinja (transformers ≥ 4.49 writes it), else chat_template.json;
 *   GGUF file   the metadata key `tokenizer.chat_template` (llama.cpp's converter copies the HF template there).
 *
 * No template (a base model) is not an error: the algorithms then use their raw prompts, as for mars-lab's own models.
 * The special tokens' texts a template names come from the tokenizer's own files (tokenizers/hf/).
 */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { z } from 'zod';
import { withGgufFile } from '../formats/gguf/ggufFile';
import type { HfTokenizerConfig } from '../tokenizers/hf/hfTokenizer';
import { ChatTemplate, ChatTemplateError, MAX_TEMPLATE_CHARS, type TemplateTokens } from './chatTemplate';
import { probeTemplate, type ProbeResult } from './templateProbe';

export interface ModelChatTemplate {
  template: ChatTemplate;
  probe: ProbeResult;
}

/** tokenizer_config.json is small; a config past 16 MiB is refused by the tokenizer reader as well. */
const MAX_CONFIG_BYTES = 16 * 2 ** 20;

const namedTemplates = z.array(z.looseObject({ name: z.string(), template: z.string() }));
const templateField = z.looseObject({ chat_template: z.union([z.string(), namedTemplates]).nullable().optional() });

async function readIfPresent(file: string, maxBytes: number): Promise<string | null> {
  let size: number;
  try {
    const st = await stat(file);
    if (!st.isFile()) throw new ChatTemplateError(`${file}: is not a regular file`);
    size = st.size;
  } catch (err) {
    if (err instanceof ChatTemplateError) throw err;
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new ChatTemplateError(`${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? String(err)})`);
  }
  if (size > maxBytes) throw new ChatTemplateError(`${file}: is ${size} bytes, more than the ${maxBytes} it may be`);
  return readFile(file, 'utf8');
}

function pick(value: z.infer<typeof templateField>['chat_template'], file: string): string | null {
  if (value === undefined || value === null) return null;
  if (typeof value === 'string') return value;
  const chosen = value.find((t) => t.name === 'default') ?? (value.length === 1 ? value[0] : undefined);
  if (!chosen) {
    throw new ChatTemplateError(
      `${file}: chat_template lists ${value.map((t) => t.name).join(', ')} and none is named "default"`,
    );
  }
  return chosen.template;
}

function parseJsonField(text: string, file: string): z.infer<typeof templateField>['chat_template'] {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw new ChatTemplateError(`${file}: is not valid JSON`);
  }
  const parsed = templateField.safeParse(raw);
  if (!parsed.success) {
    throw new ChatTemplateError(`${file}: chat_template must be a string or a list of {name, template}`);
  }
  return parsed.data.chat_template;
}

/** The template text of an HF folder and the file it came from, or null. */
async function folderTemplate(dir: string): Promise<{ source: string; origin: string } | null> {
  const configFile = path.join(dir, 'tokenizer_config.json');
  const config = await readIfPresent(configFile, MAX_CONFIG_BYTES);
  const fromConfig = config === null ? null : pick(parseJsonField(config, configFile), configFile);
  if (fromConfig !== null) return { source: fromConfig, origin: `${configFile} chat_template` };
  const jinjaFile = path.join(dir, 'chat_template.jinja');
  const jinja = await readIfPresent(jinjaFile, MAX_TEMPLATE_CHARS * 4);
  if (jinja !== null) return { source: jinja, origin: jinjaFile };
  const jsonFile = path.join(dir, 'chat_template.json');
  const json = await readIfPresent(jsonFile, MAX_TEMPLATE_CHARS * 8);
  const fromJson = json === null ? null : pick(parseJsonField(json, jsonFile), jsonFile);
  return fromJson === null ? null : { source: fromJson, origin: `${jsonFile} chat_template` };
}

async function ggufTemplate(file: string): Promise<{ source: string; origin: string } | null> {
  const value = await withGgufFile(file, async (f) => f.metadata.get('tokenizer.chat_template'));
  if (value === undefined) return null;
  if (typeof value !== 'string') throw new ChatTemplateError(`${file}: tokenizer.chat_template is not a string`);
  return { source: value, origin: `${file} tokenizer.chat_template` };
}

/** The special tokens' texts of a tokenizer's config, as templates name them. */
export function templateTokens(config: HfTokenizerConfig): TemplateTokens {
  return {
    bos_token: config.bos_token,
    eos_token: config.eos_token,
    unk_token: config.unk_token,
    pad_token: config.pad_token,
  };
}

/**
 * The chat template of an HF folder or a .gguf file, vetted; null when the model has none. `now` fixes the date
 * templates may print (chatTemplate.ts).
 */
export async function loadChatTemplate(
  modelPath: string,
  tokens: TemplateTokens,
  now?: Date,
): Promise<ModelChatTemplate | null> {
  const found = modelPath.toLowerCase().endsWith('.gguf')
    ? await ggufTemplate(modelPath)
    : await folderTemplate(modelPath);
  if (found === null) return null;
  const template = new ChatTemplate(found.source, tokens, found.origin, now);
  const probe = await probeTemplate(found.source, tokens, found.origin);
  return { template, probe };
}
