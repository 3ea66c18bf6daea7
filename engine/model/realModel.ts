/**
 * A real pretrained model, loaded whole for sampling and scoring (issue 30): the weights as a LlamaModel, the model's
 * own tokenizer, and its chat template when it has one. From
 *
 *   a .gguf file   dequantised to float32 (formats/gguf/), the tokenizer rebuilt from its metadata, the template from
 *                  tokenizer.chat_template;
 *   a folder       a Llama checkpoint (config.json + model.safetensors: an HF Llama folder, or a mars-lab checkpoint),
 *                  with tokenizer.json (tokenizers/hf/) and its template (chat/).
 *
 * Llama, Qwen2 and Qwen3 (config.ts), one safetensors file or shards with their index (formats/shardedWeights.ts).
 * What this does not do yet: streaming a GGUF in tensor by tensor (its float32 copy is dropped tensor by tensor as the
 * model is built, so the peak is about one extra copy). The caller chooses and initialises the backend before loading.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../base/userError';
import { CATALOGUE } from '../fetch/catalogue';
import { cachedArtefactPath } from '../fetch/fetchArtefact';
import { ChatEncoder } from './chat/chatEncoding';
import { loadChatTemplate, templateTokens, type ModelChatTemplate } from './chat/templateSource';
import { loadCheckpoint } from './formats/checkpoint';
import { readGgufAsHf } from './formats/gguf/ggufToHf';
import { modelFromHf } from './formats/hfWeights';
import type { LlamaModel } from './llama';
import { loadGgufTokenizer, tokenizerFilesFromGguf } from './tokenizers/hf/ggufTokenizer';
import { withGgufFile } from './formats/gguf/ggufFile';
import { HfTokenizer } from './tokenizers/hf/hfTokenizer';
import { readHfTokenizerFiles } from './tokenizers/hf/hfFolder';

export interface RealModel {
  path: string;
  model: LlamaModel;
  tokenizer: HfTokenizer;
  chat: ModelChatTemplate | null;
  /** Through the chat template, or null for a base model. */
  encoder: ChatEncoder | null;
  /** The ids that end a generation: eos and the template's end-of-turn token. */
  stopTokens: number[];
}

/** The tokenizer of a model file or folder, and its chat template. */
export async function loadRealTokenizer(
  where: string,
): Promise<{ tokenizer: HfTokenizer; chat: ModelChatTemplate | null }> {
  if (where.toLowerCase().endsWith('.gguf')) {
    const files = await withGgufFile(where, async (f) => tokenizerFilesFromGguf(f.metadata, where));
    const tokenizer = await loadGgufTokenizer(where);
    return { tokenizer, chat: await loadChatTemplate(where, templateTokens(files.config)) };
  }
  if (!fs.existsSync(path.join(where, 'tokenizer.json'))) {
    throw new UserError(`${where}: has no tokenizer.json (a real model's folder carries its own tokenizer)`);
  }
  const files = await readHfTokenizerFiles(where);
  const tokenizer = new HfTokenizer(files, path.join(where, 'tokenizer.json'));
  return { tokenizer, chat: await loadChatTemplate(where, templateTokens(files.config)) };
}

/**
 * A model given as a file, a folder or a name `model fetch` knows (its cached copy; a run or an evaluation never
 * fetches). `field` names where the user wrote it (`model.path`, `--model`) in the errors.
 */
export async function realModelPath(spec: string, field: string): Promise<string> {
  const artefact = CATALOGUE.find((a) => a.kind === 'model' && a.name === spec);
  if (artefact) {
    const cached = await cachedArtefactPath(artefact);
    if (!cached) throw new UserError(`${field}: ${spec} is not in the cache; run \`mars-lab model fetch ${spec}\``);
    return cached;
  }
  if (!fs.existsSync(spec)) {
    const names = CATALOGUE.filter((a) => a.kind === 'model').map((a) => a.name);
    throw new UserError(
      `${field}: ${spec} is neither a file or folder nor a name model fetch knows (${names.join(', ')})`,
    );
  }
  return spec;
}

/** Loads the model at `where` (a .gguf file or a model folder). */
export async function loadRealModel(where: string): Promise<RealModel> {
  const { tokenizer, chat } = await loadRealTokenizer(where);
  let model: LlamaModel;
  if (where.toLowerCase().endsWith('.gguf')) {
    const { plan, tensors } = await readGgufAsHf(where);
    model = modelFromHf(plan.config, tensors, true);
  } else {
    model = (await loadCheckpoint(where)).model;
  }
  if (model.config.vocab_size < tokenizer.vocabSize) {
    const size = tokenizer.vocabSize;
    model.dispose();
    throw new UserError(`${where}: the tokenizer has ${size} tokens, more than the model's vocab_size`);
  }
  return { path: where, model, tokenizer, chat, ...chatParts(tokenizer, chat) };
}

/** The encoder of a model's chat template (null without one) and the ids that end a generation: eos, end of turn. */
export function chatParts(
  tokenizer: HfTokenizer,
  chat: ModelChatTemplate | null,
): Pick<RealModel, 'encoder' | 'stopTokens'> {
  const encoder = chat ? new ChatEncoder(chat.template, tokenizer) : null;
  const stop = new Set([tokenizer.specials.eos]);
  const end = encoder?.endOfTurnText();
  if (end) stop.add(tokenizer.idOf(end));
  return { encoder, stopTokens: [...stop] };
}
