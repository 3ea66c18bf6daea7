/**
 * `mars-lab probe`: a step's expected time for a run config, from a short measurement here (issue 33, item 3;
 * engine/runs/probe/stepTimeProbe.ts) before the run is started. The app's Launch form starts this same command as its
 * worker (`--config-json` with the config it validated, `--json`), so the host never computes.
 */
import { Command } from 'commander';
import { jsonParseProblem } from '../base/boundedText';
import { UserError } from '../base/userError';
import { parseRunConfig, type RunConfig } from '../runs/config/configSchema';
import { resolveConfigFile, resolvePresetConfig } from '../runs/presets/presets';
import { probeStepTime, type StepTimeProbeResult } from '../runs/probe/stepTimeProbe';
import { initBackend, type BackendName } from '../tensor/backend';
import { checkJsonNesting } from './ioErrors';
import {
  applyWorkerSlots,
  backendOption,
  blasThreadsFor,
  blasThreadsOption,
  setOption,
  workerSlotsOption,
} from './options';

interface ProbeOptions {
  preset?: string;
  config?: string;
  configJson?: string;
  variant?: string;
  set: string[];
  json?: boolean;
  backend?: BackendName;
  blasThreads?: number;
  workerSlots?: number;
}

export function registerProbeCommand(program: Command): void {
  program
    .command('probe')
    .description(
      "a step's expected time, extrapolated from a short measurement here (load the model, sample a few tokens, two update passes); chatgrpo",
    )
    .option('--preset <name>', 'a preset (see `mars-lab presets`)')
    .option('--config <file>', 'a run config JSON file (instead of --preset)')
    .option('--config-json <json>', 'the run config itself, as JSON (what the app passes)')
    .option('--variant <name>', "one of the preset's named variants, applied before --set")
    .addOption(setOption('task.groupSize=16'))
    .option('--json', 'progress and the result as one JSON object per line on stdout')
    .addOption(backendOption())
    .addOption(blasThreadsOption())
    .addOption(workerSlotsOption())
    .action(probeAction);
}

function configOf(opts: ProbeOptions): RunConfig {
  const given = [opts.preset, opts.config, opts.configJson].filter((x) => x !== undefined).length;
  if (given !== 1) throw new UserError('probe: give exactly one of --preset NAME, --config FILE or --config-json JSON');
  if (opts.variant && !opts.preset) throw new UserError('probe: --variant needs --preset');
  if (opts.preset) return resolvePresetConfig(opts.preset, opts.set, undefined, opts.variant);
  if (opts.config) {
    checkJsonNesting(opts.config, 'the config');
    return resolveConfigFile(opts.config, opts.set);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(opts.configJson!);
  } catch (err) {
    throw new UserError(`probe: --config-json is not JSON (${jsonParseProblem(err)})`);
  }
  if (opts.set.length) throw new UserError('probe: --set goes with --preset or --config');
  return parseRunConfig(raw, '--config-json');
}

async function probeAction(opts: ProbeOptions): Promise<void> {
  applyWorkerSlots(opts.workerSlots);
  const config = configOf(opts);
  await initBackend({
    force: opts.backend ?? (config.backend === 'auto' ? undefined : config.backend),
    blasThreads: blasThreadsFor(opts.blasThreads, config),
  });
  // Ctrl-C or the host's SIGTERM (Cancel) ends the process as it is: a probe writes nothing to keep.
  const result: StepTimeProbeResult = await probeStepTime(config, {
    onProgress: (phase, message) => {
      if (opts.json) process.stdout.write(JSON.stringify({ type: 'progress', phase, message }) + '\n');
      else process.stderr.write(`probe: ${message}\n`);
    },
  });
  if (opts.json) return void process.stdout.write(JSON.stringify({ type: 'probe', result }) + '\n');
  console.log(probeText(result));
}

const sec = (s: number): string => (s < 10 ? s.toFixed(2) : s.toFixed(1));

function probeText(r: StepTimeProbeResult): string {
  const m = r.measured;
  return [
    `expected time a step: ${sec(r.totalSeconds)} s (sampling ${sec(r.samplingSeconds)} s, update ${sec(r.updateSeconds)} s)`,
    `  measured on: ${r.basis.backend}, ${r.basis.kernel} kernel, ${r.basis.threads} thread(s); ${r.basis.model}`,
    `  sampling ${m.sampling.rows} rows: ${m.sampling.tokens[0]} token(s) ${sec(m.sampling.seconds[0])} s, ` +
      `${m.sampling.tokens[1]} tokens ${sec(m.sampling.seconds[1])} s`,
    `  update passes of ${m.update.tokens} tokens: 1 row ${sec(m.update.seconds[0])} s, ${m.update.rows[1]} rows ${sec(m.update.seconds[1])} s`,
    `  model loaded in ${sec(m.loadSeconds)} s; the probe took ${sec(r.probeSeconds)} s`,
    `  ${r.note}`,
  ].join('\n');
}
