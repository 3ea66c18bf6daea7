/**
 * `npx tsx tests/study/martipyPilot.ts`: the martipy pilot's figures (issue 31, item 6) from its run folders, beside
 * the base model's own evaluation. The runs are made first, one per seed, with the preset as it is:
 *
 *   npx mars-lab train --preset marti-python-single --set seed=N --blas-threads 1 --worker-slots 2
 *
 * This script evaluates the base model (the preset's config, no adapters: what step 0 would score, greedy, so one
 * evaluation serves every seed) with the same held-out problems, then reads each run's metrics.jsonl: the training
 * reward and trees per step, the zero-signal share, the step's time split, and the held-out pass@1 at each evaluation.
 *
 *   npx tsx tests/study/martipyPilot.ts --runs DIR[,DIR…] [--preset marti-python-single] [--no-base]
 *       [--out docs/results/marti-python-pilot.json]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { martipy } from '../../engine/marti/python/trainer';
import { Rng } from '../../engine/random/prng';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { initBackend } from '../../engine/tensor/backend';

const { values: opts } = parseArgs({
  options: {
    runs: { type: 'string' },
    preset: { type: 'string', default: 'marti-python-single' },
    'no-base': { type: 'boolean', default: false },
    out: { type: 'string', default: 'docs/results/marti-python-pilot.json' },
  },
});

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2) : NaN;
};

const KEYS = [
  'reward',
  'passShare',
  'treesSolved',
  'firstNodePass',
  'zeroSignalTrees',
  'overlongSkipped',
  'noCodeShare',
  'truncatedShare',
  'replyTokens',
  'loss',
  'timing.generationMs',
  'timing.testMs',
  'timing.updateMs',
  'timing.evalMs',
  'timing.stepMs',
] as const;
const EVAL_KEYS = ['eval.pass1', 'eval.generatedPass1', 'eval.noCodeShare'] as const;

function readRun(dir: string) {
  const { config } = JSON.parse(fs.readFileSync(path.join(dir, 'run.json'), 'utf8')) as { config: { seed: number } };
  const lines = fs
    .readFileSync(path.join(dir, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, number>);
  const steps = lines.map((l) => ({
    step: l.step!,
    ...Object.fromEntries(KEYS.filter((k) => k in l).map((k) => [k, l[k]])),
  }));
  const evals = lines
    .filter((l) => 'eval.pass1' in l)
    .map((l): Record<string, number> => ({
      step: l.step!,
      ...(Object.fromEntries(EVAL_KEYS.filter((k) => k in l).map((k) => [k, l[k]])) as Record<string, number>),
    }));
  const trainMs = lines.map(
    (l) => (l['timing.stepMs'] ?? 0) - (l['timing.evalMs'] ?? 0) - (l['timing.checkpointMs'] ?? 0),
  );
  return {
    dir: path.basename(dir),
    seed: config.seed,
    steps,
    evals,
    medianStepSeconds: median(trainMs) / 1000,
    totalSeconds: lines.reduce((s, l) => s + (l['timing.stepMs'] ?? 0), 0) / 1000,
  };
}

async function baseEvaluation(preset: string) {
  const cfg = resolvePresetConfig(preset);
  if (cfg.algorithm !== 'martipy') throw new Error(`${preset}: not a martipy preset`);
  await initBackend({ force: 'wasm' });
  const model = await martipy.initialModel(cfg, new Rng(0)); // the base as fetched (the rng is unused)
  const t0 = performance.now();
  const result = await martipy.evaluate(cfg, model);
  model.dispose();
  return { metrics: result.metrics, seconds: (performance.now() - t0) / 1000, items: result.items };
}

async function main(): Promise<void> {
  const runs = (opts.runs ?? '').split(',').filter(Boolean).map(readRun);
  const base = opts['no-base'] ? null : await baseEvaluation(opts.preset);
  const out = {
    preset: opts.preset,
    machine: `${os.cpus()[0]?.model ?? 'unknown CPU'}, ${os.cpus().length} cores, Node ${process.version}`,
    date: new Date().toISOString().slice(0, 10),
    base,
    runs,
  };
  fs.writeFileSync(opts.out, JSON.stringify(out, null, 1) + '\n');
  if (base) console.log(`base\tpass1 ${base.metrics.pass1}\tgeneratedPass1 ${base.metrics.generatedPass1}`);
  for (const r of runs) {
    const e = r.evals.map((x) => `step ${x.step}: ${x['eval.pass1']} / ${x['eval.generatedPass1']}`).join('; ');
    console.log(`seed ${r.seed}\tstep ${r.medianStepSeconds.toFixed(0)} s (median)\t${e}`);
  }
}

await main();
