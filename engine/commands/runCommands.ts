/** `presets`, `train`, `resume`, `ls`, `show`: launching and inspecting runs from a terminal. */
import fs from 'node:fs';
import path from 'node:path';
import { Command, InvalidArgumentError } from 'commander';
import { initBackend, type BackendName } from '../tensor/backend';
import { UserError } from '../base/userError';
import { parseRunConfig, type RunConfig } from '../runs/config/configSchema';
import { resolveHome, runDir, runsDir } from '../runs/folder/home';
import type { MetricPoint } from '../runs/summary/metricPoint';
import { readMetrics } from '../runs/folder/metricsLog';
import { shownStatus } from '../runs/folder/writerProcess';
import { listPresets, resolveConfigFile, resolvePresetConfig } from '../runs/presets/presets';
import { listCheckpoints, readRunMeta } from '../runs/folder/runFolder';
import { headlineScore } from '../runs/summary/headlineMetric';
import { describeMetric, UNIT_TEXT } from '../pure/metricCatalog';
import { openRunIndex } from '../runs/summary/runIndex';
import { resumeRun, startRun, type RunOptions, type RunOutcome } from '../runs/runLoop';
import { pretrain } from '../runs/presets/pretrain';
import { checkJsonNesting, noteRun } from './ioErrors';
import {
  applyWorkerSlots,
  backendOption,
  blasThreadsFor,
  blasThreadsOption,
  homeOption,
  setOption,
  workerSlotsOption,
} from './options';
import { progressSink } from './progress';
import { terminalText as tt } from './terminalText';

function positiveInt(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('expected a positive integer');
  return Number(v);
}

/** A run by id, unique id prefix, or folder path; its run.json is checked for nesting no code here could process. */
export function resolveRun(home: string, spec: string): string {
  const dir = findRun(home, spec);
  checkJsonNesting(path.join(dir, 'run.json'), 'run.json');
  return dir;
}

function findRun(home: string, spec: string): string {
  if (fs.existsSync(path.join(spec, 'run.json'))) return path.resolve(spec);
  const root = runsDir(home);
  const direct = path.join(root, spec);
  if (fs.existsSync(direct)) return direct;
  const matches = fs.existsSync(root) ? fs.readdirSync(root).filter((n) => n.startsWith(spec)) : [];
  if (matches.length === 1) return path.join(root, matches[0]!);
  if (matches.length > 1) {
    throw new UserError(
      `run '${spec}' is ambiguous: ${matches.slice(0, 5).join(', ')}${matches.length > 5 ? ', …' : ''}`,
    );
  }
  throw new UserError(`no run '${spec}' in ${root} (see 'npx mars-lab ls'; pass --home if the runs live elsewhere)`);
}

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

export function registerRunCommands(program: Command): void {
  program
    .command('presets')
    .description('list the presets with their descriptions and expected runtimes')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }) => {
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
    });

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
    .action(
      async (opts: {
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
      }) => {
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
      },
    );

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
    .action(
      async (opts: {
        preset?: string;
        config?: string;
        set: string[];
        out?: string;
        force?: boolean;
        json?: boolean;
        backend?: BackendName;
        home?: string;
      }) => {
        if (Boolean(opts.preset) === Boolean(opts.config)) {
          throw new UserError(
            'pretrain: give exactly one of --preset NAME or --config FILE (see `npx mars-lab presets`)',
          );
        }
        if (opts.config) checkJsonNesting(opts.config, 'the config');
        const config = opts.preset
          ? resolvePresetConfig(opts.preset, opts.set)
          : resolveConfigFile(opts.config!, opts.set);
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
      },
    );

  program
    .command('resume')
    .description('continue a run from its last checkpoint, with the same random streams')
    .argument('<run>', 'run id, unique id prefix, or run folder')
    .option('--json', 'progress as one JSON object per line on stdout')
    .addOption(backendOption())
    .addOption(blasThreadsOption())
    .addOption(homeOption())
    .action(
      async (spec: string, opts: { json?: boolean; backend?: BackendName; blasThreads?: number; home?: string }) => {
        const home = resolveHome({ home: opts.home });
        const dir = resolveRun(home, spec);
        noteRun(path.basename(dir), dir);
        const config = parseRunConfig(readRunMeta(dir).config, path.join(dir, 'run.json'));
        await backendFor(config, opts.backend, opts.blasThreads);
        await withProgress(opts.json, 'reward', (ro) => resumeRun(dir, ro));
      },
    );

  program
    .command('ls')
    .description('list runs with status, steps and key metrics')
    .option('--json', 'print JSON')
    .addOption(homeOption())
    .action(async (opts: { json?: boolean; home?: string }) => {
      const home = resolveHome({ home: opts.home });
      const runs = openRunIndex(home).list();
      if (opts.json) return console.log(JSON.stringify(runs, null, 2));
      if (runs.length === 0) {
        return console.log(
          `no runs in ${tt(runsDir(home))} (start one with: npx mars-lab train --preset seqgrpo-copy)`,
        );
      }
      const rows = runs.map((r) => {
        const n = (x: number | null | undefined, d: number) => (x === null || x === undefined ? '–' : x.toFixed(d));
        const rw = Object.hasOwn(r.metrics, 'reward') ? r.metrics.reward : undefined;
        const ev = r.headline;
        // Names come from run folders anyone can copy in: shown with control characters escaped, one line each.
        return [
          tt(r.id),
          tt(r.status),
          tt(r.algorithm ?? ''),
          tt(r.preset ?? ''),
          String(r.steps ?? 0),
          rw ? `${n(rw.last, 3)} (${n(rw.min, 2)}–${n(rw.max, 2)})` : '–',
          ev && ev.value !== null ? `${n(ev.value, 3)} ${ev.label}` : '–',
        ];
      });
      const head = ['run', 'status', 'algorithm', 'preset', 'steps', 'reward last (min–max)', 'held-out score'];
      const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
      for (const r of [head, ...rows]) console.log(r.map((c, i) => c.padEnd(w[i]!)).join('  '));
    });

  program
    .command('show')
    .description("a run's config, status, metrics summary and checkpoints")
    .argument('<run>', 'run id, unique id prefix, or run folder')
    .option('--json', 'print JSON')
    .addOption(homeOption())
    .action(async (spec: string, opts: { json?: boolean; home?: string }) => {
      const dir = resolveRun(resolveHome({ home: opts.home }), spec);
      const written = readRunMeta(dir);
      // a run whose writer died says so ('interrupted'), as in `ls` and the app; run.json itself is left as written
      const meta = { ...written, status: shownStatus(dir, written) };
      const { records, warnings } = readMetrics(dir);
      const summary = summarizeMetrics(records);
      const checkpoints = listCheckpoints(dir).map((c) => c.step);
      // fromEntries defines own properties: a metric named "__proto__" stays a metric.
      const out = {
        ...meta,
        dir,
        steps: records.at(-1)?.step ?? 0,
        metrics: Object.fromEntries(summary),
        checkpoints,
        warnings,
      };
      const headline = headlineScore(
        meta.algorithm,
        (key) => records.findLast((rec) => Number.isFinite(rec[key]))?.[key],
      );
      if (headline) Object.assign(out, { headline });
      if (opts.json) return console.log(JSON.stringify(out, null, 2));
      // Everything below comes from the run folder: control characters are shown escaped, never sent to the terminal.
      console.log(
        `run ${tt(meta.id)}  [${tt(meta.status)}]  ${tt(meta.algorithm)}${meta.preset ? ` (preset ${tt(meta.preset)})` : ''}  created ${tt(meta.createdAt)}`,
      );
      if (headline) {
        console.log(
          `held-out score: ${headline.value === null ? 'not evaluated yet' : `${fmt(headline.value)} ${headline.label}`} (${headline.key})`,
        );
      }
      console.log(`folder: ${tt(dir)}\nsteps: ${out.steps}; checkpoints: ${checkpoints.join(', ') || 'none'}`);
      for (const [k, s] of summary) {
        // the metric's declaration (engine/pure/metricCatalog.ts): its unit and one-line description
        const d = describeMetric(meta.algorithm, k);
        console.log(
          `  ${tt(k).padEnd(22)} last ${fmt(s.last)}  min ${fmt(s.min)}  max ${fmt(s.max)}${d ? `  (${UNIT_TEXT[d.unit]}) ${d.description}` : ''}`,
        );
      }
      for (const w of warnings) console.error(`warning: ${tt(w)}`);
      console.log(`config: ${tt(JSON.stringify(meta.config))}`);
    });
}

/** Last, min and max of each metric over finite values, in order of first appearance (a Map: any name is a key). */
export function summarizeMetrics(
  records: readonly MetricPoint[],
): Map<string, { last: number; min: number; max: number }> {
  const summary = new Map<string, { last: number; min: number; max: number }>();
  for (const rec of records) {
    for (const [k, v] of Object.entries(rec)) {
      if (k === 'step' || k === 'time' || !Number.isFinite(v)) continue;
      const s = summary.get(k);
      if (s === undefined) summary.set(k, { last: v, min: v, max: v });
      else {
        s.last = v;
        s.min = Math.min(s.min, v);
        s.max = Math.max(s.max, v);
      }
    }
  }
  return summary;
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toPrecision(5);
}
