/**
 * `presets`, `train`, `pretrain`, `resume`: launching runs from a terminal (Ctrl-C checkpoints and stops), with the
 * commands that inspect them (`ls`, `show`: runInspectCommands.ts) registered beside them.
 */
import path from 'node:path';
import { Command } from 'commander';
import { initBackend, type BackendName } from '../tensor/backend';
import { UserError } from '../base/userError';
import { parseRunConfig, type RunConfig } from '../runs/config/configSchema';
import { resolveHome, runDir } from '../runs/folder/home';
import { listPresets, resolveConfigFile, resolvePresetConfig } from '../runs/presets/presets';
import { readRunMeta } from '../runs/folder/runFolder';
import { resumeRun, startRun, type RunOptions, type RunOutcome } from '../runs/runLoop';
import { pretrain } from '../runs/presets/pretrain';
import { checkJsonNesting, noteRun } from './ioErrors';
import {
  applyWorkerSlots,
  backendOption,
  blasThreadsFor,
  blasThreadsOption,
  homeOption,
  positiveInt,
  setOption,
  workerSlotsOption,
} from './options';
import { progressSink } from './progress';
import { registerLsCommand, registerShowCommand } from './runInspectCommands';
import { resolveRun } from './runSpec';
import { terminalText as tt } from './terminalText';

/** Ctrl-C once: finish the step, checkpoint, stop. Twice: leave at once (the last checkpoint is still good). */
function interruptible(): { signal: AbortSignal; done: () => void } {
  const ctl = new AbortController();
  const onSigint = () => {
    if (ctl.signal.aborted) {
      process.stderr.write('\nsecond Ctrl-C: exiting without a final checkpoint\n');
      process.exit(130);
    }
    process.stderr.write('\nCtrl-C: finishing this step and writing a checkpoint (Ctrl-C again to quit at once)\n');
    ctl.abort();
  };
  process.on('SIGINT', onSigint);
  process.on('SIGTERM', onSigint);
  return { signal: ctl.signal, done: () => (process.off('SIGINT', onSigint), process.off('SIGTERM', onSigint)) };
}

async function withProgress(
  json: boolean | undefined,
  keyMetric: string,
  run: (opts: RunOptions) => Promise<RunOutcome>,
): Promise<void> {
  const sink = progressSink({ json, label: 'train', keyMetric });
  const intr = interruptible();
  let outcome: RunOutcome;
  try {
    outcome = await run({
      onProgress: (p) => {
        noteRun(p.runId);
        sink.update(p);
      },
      signal: intr.signal,
    });
  } finally {
    sink.stop();
    intr.done();
  }
  const summary = {
    type: 'done',
    runId: outcome.runId,
    dir: outcome.dir,
    status: outcome.status,
    step: outcome.step,
    metrics: outcome.lastMetrics,
  };
  if (json) console.log(JSON.stringify(summary));
  else if (Object.keys(outcome.lastMetrics).length === 0) {
    console.log(
      `run ${tt(outcome.runId)} had already finished all ${outcome.step} steps; nothing to do\n  folder: ${tt(outcome.dir)}`,
    );
  } else {
    const m = Object.entries(outcome.lastMetrics).filter(([k]) => k !== 'time' && k !== 'step');
    console.log(
      `run ${tt(outcome.runId)} ${outcome.status} at step ${outcome.step}\n  ${m.map(([k, v]) => `${tt(k)} ${Number(v.toFixed(4))}`).join(', ')}\n  folder: ${tt(outcome.dir)}`,
    );
    if (outcome.status === 'stopped') console.log(`  continue with: npx mars-lab resume ${tt(outcome.runId)}`);
  }
}

async function backendFor(config: RunConfig, flag?: BackendName, blasThreads?: number): Promise<void> {
  await initBackend({
    force: flag ?? (config.backend === 'auto' ? undefined : config.backend),
    blasThreads: blasThreadsFor(blasThreads, config),
  });
}

interface TrainOptions {
  preset?: string;
  config?: string;
  variant?: string;
  set: string[];
  steps?: number;
  json?: boolean;
  runId?: string;
  backend?: BackendName;
  blasThreads?: number;
  workerSlots?: number;
  home?: string;
}

interface PretrainOptions {
  preset?: string;
  config?: string;
  set: string[];
  out?: string;
  force?: boolean;
  json?: boolean;
  backend?: BackendName;
  home?: string;
}

interface ResumeOptions {
  json?: boolean;
  backend?: BackendName;
  blasThreads?: number;
  home?: string;
}

export function registerRunCommands(program: Command): void {
  registerPresetsCommand(program);
  registerTrainCommand(program);
  registerPretrainCommand(program);
  registerResumeCommand(program);
  registerLsCommand(program);
  registerShowCommand(program);
}

function registerPresetsCommand(program: Command): void {
  program
    .command('presets')
    .description('list the presets with their descriptions and expected runtimes')
    .option('--json', 'print JSON')
    .action(presetsAction);
}

async function presetsAction(opts: { json?: boolean }): Promise<void> {
  const presets = listPresets();
  if (opts.json) return console.log(JSON.stringify(presets, null, 2));
  for (const p of presets) {
    const rt = p.expectedRuntime;
    const t = (s: number | null) =>
      s === null ? 'not measured' : s < 120 ? `≈${Math.round(s)} s` : `≈${Math.round(s / 60)} min`;
    const variants = p.variants ? `\n  variants (--variant NAME): ${Object.keys(p.variants).join(', ')}` : '';
    const promise = p.success
      ? `\n  checked promise: ${p.success.metric} ≥ ${p.success.atLeast} at the last evaluation, seeds ${p.success.seeds.join(', ')} (npm run check:presets)`
      : '';
    console.log(
      `${p.name}${p.recommended ? '  (recommended first run)' : ''}${p.gpuOnly ? '  (for a GPU)' : ''}  (CPU ${t(rt.cpuSeconds)}, GPU ${t(rt.gpuSeconds)})\n  ${p.description.replace(/\s+/g, ' ')}${variants}${promise}\n`,
    );
  }
}

function registerTrainCommand(program: Command): void {
  program
    .command('train')
    .description('start a run from a preset or a config file (Ctrl-C checkpoints and stops; resume continues it)')
    .option('--preset <name>', 'a preset (see `mars-lab presets`)')
    .option('--config <file>', 'a run config JSON file (instead of --preset)')
    .option(
      '--variant <name>',
      "one of the preset's named variants (e.g. mars-ablations' sys1-off), applied before --set",
    )
    .addOption(setOption('rl.lr=3e-4'))
    .option('--steps <n>', 'training steps (same as --set budget.steps=N)', positiveInt)
    .option('--json', 'progress as one JSON object per line on stdout')
    .option(
      '--run-id <id>',
      "the new run's id (letters, digits, '.', '_', '-'; e.g. a study's, which is also its Ray job's id)",
    )
    .addOption(backendOption())
    .addOption(blasThreadsOption())
    .addOption(workerSlotsOption())
    .addOption(homeOption())
    .action(trainAction);
}

async function trainAction(opts: TrainOptions): Promise<void> {
  applyWorkerSlots(opts.workerSlots);
  if (Boolean(opts.preset) === Boolean(opts.config)) {
    throw new UserError('train: give exactly one of --preset NAME or --config FILE (see `npx mars-lab presets`)');
  }
  if (opts.variant && !opts.preset) {
    throw new UserError('train: --variant needs --preset (a variant belongs to a preset)');
  }
  const sets = opts.steps ? [...opts.set, `budget.steps=${opts.steps}`] : opts.set;
  if (opts.config) checkJsonNesting(opts.config, 'the config');
  const config = opts.preset
    ? resolvePresetConfig(opts.preset, sets, undefined, opts.variant)
    : resolveConfigFile(opts.config!, sets);
  await backendFor(config, opts.backend, opts.blasThreads);
  const home = resolveHome({ home: opts.home });
  if (opts.runId !== undefined) runDir(home, opts.runId); // a bad id is a UserError before the backend loads
  await withProgress(opts.json, 'reward', (ro) =>
    startRun(home, config, { ...ro, preset: opts.preset, runId: opts.runId }),
  );
}

function registerPretrainCommand(program: Command): void {
  program
    .command('pretrain')
    .description("supervised pretraining of a base model on the preset's pretraining data; RL runs can start from it")
    .option('--preset <name>', 'a preset (see `mars-lab presets`)')
    .option('--config <file>', 'a run config JSON file (instead of --preset)')
    .addOption(setOption('pretrain.steps=500'))
    .option('--out <dir>', 'where to write the base checkpoint (default: <home>/base/<preset or config file name>)')
    .option('--force', 'replace an existing base checkpoint')
    .option('--json', 'progress as one JSON object per line on stdout')
    .addOption(backendOption())
    .addOption(homeOption())
    .action(pretrainAction);
}

async function pretrainAction(opts: PretrainOptions): Promise<void> {
  if (Boolean(opts.preset) === Boolean(opts.config)) {
    throw new UserError('pretrain: give exactly one of --preset NAME or --config FILE (see `npx mars-lab presets`)');
  }
  if (opts.config) checkJsonNesting(opts.config, 'the config');
  const config = opts.preset ? resolvePresetConfig(opts.preset, opts.set) : resolveConfigFile(opts.config!, opts.set);
  await backendFor(config, opts.backend);
  const name = opts.preset ?? path.basename(opts.config!, '.json');
  const out = path.resolve(opts.out ?? path.join(resolveHome({ home: opts.home }), 'base', name));
  const sink = progressSink({ json: opts.json, label: 'pretrain', keyMetric: 'loss' });
  const intr = interruptible();
  let r: Awaited<ReturnType<typeof pretrain>>;
  try {
    r = await pretrain(config, out, {
      onProgress: (p) => sink.update(p),
      signal: intr.signal,
      force: opts.force,
    });
  } finally {
    sink.stop();
    intr.done();
  }
  const use = `--set 'model.from={"kind":"checkpoint","path":"${r.dir}"}'`;
  if (opts.json) console.log(JSON.stringify({ type: 'done', dir: r.dir, steps: r.steps, loss: r.finalLoss }));
  else {
    const source = opts.preset ? `--preset ${opts.preset}` : `--config ${opts.config}`;
    console.log(
      `base checkpoint after ${r.steps} steps (loss ${r.finalLoss.toFixed(4)}): ${r.dir}\n  evaluate it: npx mars-lab eval --checkpoint ${r.dir}\n  train from it: npx mars-lab train ${source} ${use}`,
    );
  }
}

function registerResumeCommand(program: Command): void {
  program
    .command('resume')
    .description('continue a run from its last checkpoint, with the same random streams')
    .argument('<run>', 'run id, unique id prefix, or run folder')
    .option('--json', 'progress as one JSON object per line on stdout')
    .addOption(backendOption())
    .addOption(blasThreadsOption())
    .addOption(homeOption())
    .action(resumeAction);
}

async function resumeAction(spec: string, opts: ResumeOptions): Promise<void> {
  const home = resolveHome({ home: opts.home });
  const dir = resolveRun(home, spec);
  noteRun(path.basename(dir), dir);
  const config = parseRunConfig(readRunMeta(dir).config, path.join(dir, 'run.json'));
  await backendFor(config, opts.backend, opts.blasThreads);
  await withProgress(opts.json, 'reward', (ro) => resumeRun(dir, ro));
}
