/**
 * The command line: `npx mars-lab <command>`. Thin: each command parses its flags, calls the engine and prints.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { initBackend, type BackendName, type BackendReport } from './tensor/backend';
import { registerEvalCommands } from './commands/evalCommands';
import { backendOption, registerRunCommands } from './commands/runCommands';
import { MODEL_SIZES, parameterCount, parseLlamaConfig, sizedConfig, type ModelSize } from './model/config';
import { initHfTensors, modelFromHf } from './model/hfWeights';
import { saveCheckpoint, loadCheckpoint } from './model/checkpoint';
import { lastPositionLogits } from './model/inference';
import { Rng } from './random/prng';
import { ENGINE_VERSION } from './version';
import { UserError } from './userError';


function parseIds(value: string): number[] {
  const ids = value.split(',').map((s) => s.trim());
  if (ids.some((s) => !/^\d+$/.test(s))) throw new InvalidArgumentError('expected comma-separated non-negative integers, e.g. 3,17,5');
  return ids.map(Number);
}

function parseSeed(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 2 ** 32 - 1) throw new InvalidArgumentError('expected an integer from 0 to 4294967295');
  return Number(value);
}

function formatDoctor(r: BackendReport): string {
  const lines = [`backend: ${r.chosen}${r.forced ? ' (forced with --backend)' : ''}`];
  for (const a of r.attempts) lines.push(`  ${a.backend.padEnd(10)} ${a.status.padEnd(16)} ${a.package === '-' ? '' : a.package + ': '}${a.detail}`);
  lines.push(`threads: ${r.threads} (${r.threadsDetail})`);
  if (r.simd !== null) lines.push(`wasm SIMD: ${r.simd ? 'yes' : 'no'}`);
  lines.push(`platform: ${r.platform}, ${r.cpus} CPU cores`);
  lines.push(`versions: mars-lab ${ENGINE_VERSION}, ${Object.entries(r.versions).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  return lines.join('\n');
}

/** A config file path, or the name of a built-in size. */
function readModelConfig(spec: string) {
  if (spec in MODEL_SIZES && !fs.existsSync(spec)) return sizedConfig(spec as ModelSize);
  if (!fs.existsSync(spec)) {
    throw new UserError(`--config ${spec}: no such file (give a Llama config.json, or one of the sizes ${Object.keys(MODEL_SIZES).join(', ')})`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(fs.readFileSync(spec, 'utf8'));
  } catch (err) {
    throw new UserError(`--config ${spec}: not valid JSON (${(err as Error).message})`);
  }
  return parseLlamaConfig(raw, spec);
}

export function buildProgram(): Command {
  const program = new Command('mars-lab')
    .description('A laboratory for multi-agent reinforcement learning of language-model policies (MARS, MARTI-MARS²).')
    .version(ENGINE_VERSION);

  program
    .command('doctor')
    .description('show which TensorFlow.js backend is chosen, why the others are not, threads and versions')
    .option('--json', 'print JSON')
    .addOption(backendOption())
    .action(async (opts: { json?: boolean; backend?: BackendName }) => {
      const report = await initBackend({ force: opts.backend });
      console.log(opts.json ? JSON.stringify({ engine: ENGINE_VERSION, ...report }, null, 2) : formatDoctor(report));
    });

  const model = program.command('model').description('create and inspect policy checkpoints');
  model
    .command('init')
    .description('write a randomly initialised checkpoint (config.json + model.safetensors)')
    .requiredOption('--config <file|size>', `a Llama config.json, or a size: ${Object.keys(MODEL_SIZES).join(', ')}`)
    .requiredOption('--out <dir>', 'the checkpoint folder to write')
    .option('--seed <n>', 'random seed', parseSeed, 0)
    .option('--std <x>', 'standard deviation of the initial weights (HF initializer_range)', Number, 0.02)
    .option('--force', 'replace an existing folder')
    .action(async (opts: { config: string; out: string; seed: number; std: number; force?: boolean }) => {
      const config = readModelConfig(opts.config);
      if (fs.existsSync(opts.out) && !opts.force) throw new UserError(`--out ${opts.out}: already exists (add --force to replace it)`);
      await initBackend({ force: 'cpu' }); // only holds the weights; no computation happens
      const rng = new Rng(opts.seed);
      const m = modelFromHf(config, initHfTensors(config, () => rng.normal(), opts.std));
      await saveCheckpoint(opts.out, m);
      console.error(`wrote ${path.resolve(opts.out)} (${(parameterCount(config) / 1e6).toFixed(2)}M parameters, seed ${opts.seed})`);
    });

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
      if (bad !== undefined) throw new UserError(`--ids: token id ${bad} is out of range (vocab_size is ${m.config.vocab_size})`);
      if (opts.ids.length > m.config.max_position_embeddings) {
        throw new UserError(`--ids: ${opts.ids.length} tokens exceed max_position_embeddings (${m.config.max_position_embeddings})`);
      }
      const logits = await lastPositionLogits(m, opts.ids);
      if (opts.json) {
        console.log(JSON.stringify({ logits: Array.from(logits) }));
      } else {
        const top = Array.from(logits.keys()).sort((a, b) => logits[b]! - logits[a]!).slice(0, 10);
        console.log(`vocab ${logits.length}; top 10 (id: logit): ${top.map((i) => `${i}: ${logits[i]!.toFixed(4)}`).join(', ')}`);
      }
    });

  registerRunCommands(program);
  registerEvalCommands(program);
  return program;
}

const program = buildProgram();
program
  .parseAsync(process.argv)
  .then(() => process.exit(0))
  .catch((err: unknown) => {
    const known = err instanceof UserError;
    console.error(`mars-lab: ${(err as Error)?.message ?? String(err)}`);
    if (!known && err instanceof Error && err.stack) console.error(err.stack);
    process.exit(known ? 2 : 1);
  });
