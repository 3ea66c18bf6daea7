/**
 * `model tokenize` and `model generate`: a real model (a .gguf file, an HF Llama folder, a mars-lab checkpoint with a
 * tokenizer.json, or a name `model fetch` knows) used as scripts and checks call it (issue 30's command line):
 *
 *   model tokenize PATH --text TEXT [--json]        → {"ids": [...]} (no bos/eos added: the text's own tokens)
 *   model generate PATH (--prompt TEXT | --chat TEXT) [--system TEXT] --max-tokens N --temperature T [--top-p P]
 *                  [--seed S] [--json]              → {"text", "ids", "logProbs", "finish"}
 *
 * `--chat` renders the model's chat template with its generation prompt (engine/model/chat/); `--prompt` is raw text,
 * with the bos the model's tokenizer config asks for. Generation stops at eos or the template's end-of-turn token,
 * which `ids` keeps and `text` leaves out.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { UserError } from '../base/userError';
import type { ChatMessage } from '../model/chat/chatTemplate';
import { loadRealModel, loadRealTokenizer } from '../model/realModel';
import { generate } from '../model/sampler';
import { Rng } from '../random/prng';
import { initBackend, type BackendName } from '../tensor/backend';
import { CATALOGUE } from '../fetch/catalogue';
import { fetchArtefact } from '../fetch/fetchArtefact';
import { terminalReporter } from '../fetch/fetchProgress';
import fs from 'node:fs';
import { mergeAdapterIntoFolder } from '../model/lora/mergedFolder';
import { ADAPTER_CONFIG_FILE, isPeftAdapter, readPeftAdapter } from '../model/lora/peftAdapter';
import { backendOption } from './options';

/** A path, or a name `model fetch` knows (fetched into the cache, or found there). */
export async function resolveModelPath(spec: string): Promise<string> {
  if (fs.existsSync(spec)) return spec;
  const artefact = CATALOGUE.find((a) => a.name === spec);
  if (!artefact) {
    throw new UserError(
      `${spec}: no such file or folder, and not a name model fetch knows (${CATALOGUE.map((a) => a.name).join(', ')})`,
    );
  }
  return (await fetchArtefact(artefact, { reporter: terminalReporter() })).path;
}

function parseCount(value: string): number {
  if (!/^\d{1,6}$/.test(value)) throw new InvalidArgumentError('expected a non-negative integer');
  return Number(value);
}

function parseUnit(name: string, max: number) {
  return (value: string): number => {
    const x = Number(value);
    if (value.trim() === '' || !Number.isFinite(x) || x < 0 || x > max) {
      throw new InvalidArgumentError(`expected a number from 0 to ${max} (${name})`);
    }
    return x;
  };
}

interface GenerateOptions {
  prompt?: string;
  chat?: string;
  system?: string;
  maxTokens: number;
  temperature: number;
  topP: number;
  topK: number;
  seed: number;
  json?: boolean;
  backend?: BackendName;
}

export function registerModelUseCommands(model: Command): void {
  model
    .command('tokenize')
    .description("a text's token ids under a real model's own tokenizer (no bos or eos added)")
    .argument('<path>', 'a .gguf file, a model folder with tokenizer.json, or a name model fetch knows')
    .requiredOption('--text <text>', 'the text to tokenize')
    .option('--json', 'print {"ids": [...]}')
    .action(async (spec: string, opts: { text: string; json?: boolean }) => {
      const { tokenizer } = await loadRealTokenizer(await resolveModelPath(spec));
      const ids = tokenizer.encode(opts.text);
      if (opts.json) console.log(JSON.stringify({ ids }));
      else console.log(ids.map((id) => `${id}\t${JSON.stringify(tokenizer.decode([id]))}`).join('\n'));
    });

  model
    .command('generate')
    .description('sample a continuation of a raw prompt, or an answer to a chat message through the chat template')
    .argument('<path>', 'a .gguf file, a model folder with tokenizer.json, or a name model fetch knows')
    .option('--prompt <text>', 'raw text to continue')
    .option('--chat <text>', "a user message, rendered with the model's chat template and its generation prompt")
    .option('--system <text>', 'a system message before --chat')
    .requiredOption('--max-tokens <n>', 'new tokens at most', parseCount)
    .option('--temperature <t>', '0 is greedy; 1 samples the model', parseUnit('--temperature', 10), 0)
    .option('--top-p <p>', 'nucleus sampling (1 = off)', parseUnit('--top-p', 1), 1)
    .option('--top-k <k>', 'draw from the k most likely tokens only (0 = off)', parseCount, 0)
    .option('--seed <n>', 'random seed', parseCount, 0)
    .option('--json', 'print {"text","ids","logProbs","finish"}')
    .addOption(backendOption())
    .action(async (spec: string, opts: GenerateOptions) => {
      if ((opts.prompt === undefined) === (opts.chat === undefined)) {
        throw new UserError('give exactly one of --prompt TEXT (raw) and --chat TEXT (through the chat template)');
      }
      if (opts.system !== undefined && opts.chat === undefined) {
        throw new UserError('--system goes with --chat (a raw --prompt has no roles)');
      }
      const where = await resolveModelPath(spec);
      await initBackend({ force: opts.backend });
      const real = await loadRealModel(where);
      try {
        let ids: number[];
        if (opts.chat !== undefined) {
          if (!real.encoder) {
            throw new UserError(`${where}: has no chat template (a base model); use --prompt with raw text instead`);
          }
          const messages: ChatMessage[] = [
            ...(opts.system !== undefined ? [{ role: 'system', content: opts.system }] : []),
            { role: 'user', content: opts.chat },
          ];
          ids = real.encoder.prompt(messages).ids;
        } else {
          ids = real.tokenizer.encodeForModel(opts.prompt!);
        }
        if (ids.length === 0) throw new UserError('--prompt: the text has no tokens (and the model adds no bos)');
        if (ids.length + opts.maxTokens > real.model.config.max_position_embeddings) {
          throw new UserError(
            `--max-tokens: ${ids.length} prompt tokens + ${opts.maxTokens} exceed the model's context ` +
              `(${real.model.config.max_position_embeddings})`,
          );
        }
        const [g] = await generate(real.model, [ids], {
          maxNewTokens: opts.maxTokens,
          temperature: opts.temperature,
          topP: opts.topP,
          topK: opts.topK,
          stopTokens: real.stopTokens,
          rng: new Rng(opts.seed),
        });
        const kept = g!.finish === 'stop' ? g!.tokens.slice(0, -1) : g!.tokens;
        const text = real.tokenizer.decode(kept);
        if (opts.json) console.log(JSON.stringify({ text, ids: g!.tokens, logProbs: g!.logProbs, finish: g!.finish }));
        else console.log(text);
      } finally {
        real.model.dispose();
      }
    });

  model
    .command('merge')
    .description(
      "fold a LoRA adapter (PEFT's folder: adapter_config.json + adapter_model.safetensors) into its base model and " +
        'write a Hugging Face model folder (weights, tokenizer, chat template)',
    )
    .argument('<adapter>', 'a PEFT adapter folder')
    .option(
      '--base <path>',
      "the base model: a .gguf file, an HF folder or a name model fetch knows (default: the adapter's base_model_name_or_path)",
    )
    .requiredOption('--out <dir>', 'the merged model folder to write (must not exist)')
    .option('--json', 'print {"out", "base", "rank", "targets", "parameters"}')
    .addOption(backendOption())
    .action(async (adapterDir: string, opts: { base?: string; out: string; json?: boolean; backend?: BackendName }) => {
      if (!isPeftAdapter(adapterDir)) {
        throw new UserError(`${adapterDir}: has no ${ADAPTER_CONFIG_FILE} (a PEFT LoRA adapter folder is expected)`);
      }
      let base = opts.base;
      if (base === undefined) {
        base = (await readPeftAdapter(adapterDir)).base ?? undefined;
        if (base === undefined) {
          throw new UserError(
            `${adapterDir}/${ADAPTER_CONFIG_FILE} names no base_model_name_or_path; give --base PATH`,
          );
        }
        if (!fs.existsSync(base) && !CATALOGUE.some((a) => a.name === base)) {
          throw new UserError(
            `the adapter's base model '${base}' is not here (no model hub is reached); give --base PATH`,
          );
        }
      }
      const where = await resolveModelPath(base);
      await initBackend({ force: opts.backend });
      const r = await mergeAdapterIntoFolder(adapterDir, where, opts.out);
      if (opts.json) console.log(JSON.stringify({ out: opts.out, base: where, ...r }));
      else {
        console.log(
          `merged a rank-${r.rank} adapter (${r.targets.join(', ')}; ${r.parameters.toLocaleString('en')} parameters) ` +
            `into ${where}: ${opts.out}`,
        );
      }
    });
}
