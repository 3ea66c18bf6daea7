/** `eval` and `compare`: checkpoints on a fixed held-out set, one at a time or side by side. */
import fs from 'node:fs';
import path from 'node:path';
import { Command, Option } from 'commander';
import { CONFIG_FILE, TRAINER_STATE_FILE } from '../model/formats/checkpointFiles';
import { initBackend, type BackendName } from '../tensor/backend';
import { checkpointConfig, compareCheckpoints, evaluateCheckpoint } from '../runs/evaluation/evaluation';
import { resolveHome } from '../runs/folder/home';
import { resolveConfigFile, resolvePresetConfig } from '../runs/presets/presets';
import { listCheckpoints } from '../runs/folder/runFolder';
import { runEndpointEval } from './evalEndpointsCommand';
import { usesEndpoints } from '../runs/evaluation/evaluateEndpoints';
import { UserError } from '../base/userError';
import { checkJsonNesting } from './ioErrors';
import { backendOption, blasThreadsFor, blasThreadsOption, homeOption, setOption } from './options';
import { resolveRun } from './runSpec';
import { terminalText as tt } from './terminalText';
import { printComparison, printEvaluation } from './evalPrintout';

const splitOption = () =>
  new Option('--split <name>', 'which items: the held-out split, never trained on')
    .choices(['heldout'])
    .default('heldout');

/** The JSON files an evaluation reads, refused with their name when nested too deeply to process. */
function checkInputs(checkpoint: string, config?: string): void {
  if (config) checkJsonNesting(config, 'the config');
  checkJsonNesting(path.join(checkpoint, CONFIG_FILE), CONFIG_FILE);
  checkJsonNesting(path.join(checkpoint, TRAINER_STATE_FILE), TRAINER_STATE_FILE);
}

/**
 * A checkpoint named as `compare` takes it: a checkpoint folder (RUN_FOLDER/checkpoints/N), a run as `show` takes it
 * (id, unique id prefix or folder: its last checkpoint), `RUN@N` or `RUN/checkpoints/N` (that run's checkpoint N).
 */
export function resolveCheckpoint(home: string, spec: string): string {
  if (fs.existsSync(path.join(spec, CONFIG_FILE))) return spec;
  const m = /^(.+?)(?:@|\/checkpoints\/)(\d+)\/?$/.exec(spec);
  const dir = resolveRun(home, m ? m[1]! : spec);
  const checkpoints = listCheckpoints(dir);
  const id = tt(path.basename(dir));
  if (m) {
    const found = checkpoints.find((c) => c.step === Number(m[2]));
    if (!found) {
      throw new UserError(
        `run ${id} has no checkpoint at step ${m[2]}; it has ${checkpoints.length ? `steps ${checkpoints.map((c) => c.step).join(', ')}` : 'none yet'}`,
      );
    }
    return found.path;
  }
  const last = checkpoints.at(-1);
  if (!last) {
    throw new UserError(
      `run ${id} has no checkpoint yet (one is written every checkpoint.every steps and when the run ends)`,
    );
  }
  return last.path;
}

interface EvalOptions {
  checkpoint?: string;
  fresh?: boolean;
  preset?: string;
  config?: string;
  set: string[];
  json?: boolean;
  backend?: BackendName;
  blasThreads?: number;
  home?: string;
}

interface CompareOptions {
  json?: boolean;
  backend?: BackendName;
  blasThreads?: number;
  home?: string;
}

export function registerEvalCommands(program: Command): void {
  registerEvalCommand(program);
  registerCompareCommand(program);
}

function registerEvalCommand(program: Command): void {
  program
    .command('eval')
    .description(
      "evaluate a checkpoint on its run's held-out items (or a preset's, e.g. for a base model); results are cached by (weights, evaluation)",
    )
    .option(
      '--checkpoint <dir>',
      "a checkpoint folder, e.g. <run>/checkpoints/200, or a base model such as resources/marti/base-tiny (not needed when the config's policies are all endpoints)",
    )
    .option(
      '--preset <name>',
      "evaluate under this preset's config instead of the checkpoint's run config (needed for a base model, which has none)",
    )
    .option('--config <file>', "evaluate under this run config file instead of the checkpoint's")
    .addOption(setOption('eval.temperature=1'))
    .addOption(splitOption())
    .option('--json', 'print JSON (metrics, identity and per-item outcomes)')
    .option(
      '--fresh',
      'endpoint policies: ask every request again instead of replaying the answers an earlier run of this evaluation kept',
    )
    .addOption(backendOption())
    .addOption(blasThreadsOption())
    .addOption(homeOption())
    .action(evalAction);
}

async function evalAction(opts: EvalOptions): Promise<void> {
  if (opts.preset && opts.config) throw new UserError('eval: give at most one of --preset NAME or --config FILE');
  if (opts.set.length && !opts.preset && !opts.config) {
    throw new UserError("eval: --set changes a preset's or config file's fields; add --preset NAME or --config FILE");
  }
  if (!opts.checkpoint && !opts.preset && !opts.config) {
    throw new UserError('eval: give --checkpoint DIR (or, for endpoint policies, --config FILE or --preset NAME)');
  }
  if (opts.checkpoint) checkInputs(opts.checkpoint, opts.config);
  else if (opts.config) checkJsonNesting(opts.config, 'the config');
  const config = opts.preset
    ? resolvePresetConfig(opts.preset, opts.set)
    : opts.config
      ? resolveConfigFile(opts.config, opts.set)
      : checkpointConfig(opts.checkpoint!);
  await initBackend({
    force: opts.backend ?? (config.backend === 'auto' ? undefined : config.backend),
    blasThreads: blasThreadsFor(opts.blasThreads, config),
  });
  if (usesEndpoints(config)) {
    return runEndpointEval(resolveHome({ home: opts.home }), config, {
      checkpoint: opts.checkpoint,
      json: opts.json,
      fresh: opts.fresh,
    });
  }
  if (!opts.checkpoint) {
    throw new UserError(
      'eval: add --checkpoint DIR: this config names no endpoint policies (mars.policies, marti.agents[].policy)',
    );
  }
  const r = await evaluateCheckpoint(resolveHome({ home: opts.home }), opts.checkpoint, config);
  if (opts.json) return console.log(JSON.stringify(r));
  printEvaluation(r);
}

function registerCompareCommand(program: Command): void {
  program
    .command('compare')
    .description('evaluate two checkpoints on the same held-out items and compare them item by item')
    .argument(
      '<a>',
      'checkpoint A (its run config fixes the items): a run id, unique id prefix or run folder (its last checkpoint), RUN@STEP, RUN/checkpoints/STEP, or a checkpoint folder',
    )
    .argument('<b>', 'checkpoint B (same algorithm and task), named the same ways')
    .option('--json', 'print JSON')
    .addOption(backendOption())
    .addOption(blasThreadsOption())
    .addOption(homeOption())
    .action(compareAction);
}

async function compareAction(specA: string, specB: string, opts: CompareOptions): Promise<void> {
  const home = resolveHome({ home: opts.home });
  const a = resolveCheckpoint(home, specA);
  const b = resolveCheckpoint(home, specB);
  checkInputs(a);
  checkInputs(b);
  const config = checkpointConfig(a);
  await initBackend({
    force: opts.backend ?? (config.backend === 'auto' ? undefined : config.backend),
    blasThreads: blasThreadsFor(opts.blasThreads, config),
  });
  const c = await compareCheckpoints(home, a, b);
  if (opts.json) {
    const { a: ea, b: eb, ...rest } = c;
    return console.log(
      JSON.stringify({
        ...rest,
        a: { checkpoint: ea.checkpoint, metrics: ea.metrics, cached: ea.cached },
        b: { checkpoint: eb.checkpoint, metrics: eb.metrics, cached: eb.cached },
      }),
    );
  }
  printComparison(c);
}
