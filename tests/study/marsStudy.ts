/**
 * `npm run study:mars`: the MARS ablation grid (issues 4 and 17): every chosen variant of a preset trained from its
 * base with several seeds, each evaluated on the same held-out questions (worlds never trained on): exact match and F1
 * per question, per family, tokens per system, searches, System 1 calls, what System 1 writes; the base evaluated as
 * each variant evaluates. Each arm's figures go to a part (tests/study/studyParts.ts) with its per-question outcomes,
 * so the report's claims are decided on seeds and on questions clustered in worlds together (tests/study/marsReport.ts).
 *
 *   npm run study:mars -- [--preset mars-overflow] [--variants full,sys1-off] [--seeds 5] [--steps (the preset's)]
 *       [--items (the preset's)] [--base DIR] [--set k=v …] [--parts DIR] [--out docs/results/mars-study.md]
 *       [--home DIR] [--report]
 *
 * - An arm is `<preset>:<variant>`, with `@<base folder>` when --base is not the preset's own base.
 * - A part is rewritten after every seed, and a study started again with the same settings continues after the
 *   seeds its parts hold, so arms can run as parallel processes (one core each) and an interrupted study loses one run.
 * - `--report` only rebuilds the report from every part in --parts (default: beside --out, `<out name>.parts`).
 * - `--home` keeps the run folders and the evaluation cache (default: a folder in the system's temp directory, kept,
 *   so each base is evaluated once per evaluation identity even across processes).
 *
 * Only seed, budget, evaluation size and cadences are changed from the preset, and the report names every command.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { MarsConfig } from '../../engine/mars/configSchema';
import { loadPreset, resolvePresetConfig } from '../../engine/runs/presets/presets';
import { evaluateCheckpoint } from '../../engine/runs/evaluation/evaluation';
import { startRun } from '../../engine/runs/runLoop';
import { runFilePaths } from '../../engine/runs/folder/runFolder';
import { initBackend } from '../../engine/tensor/backend';
import { marsChance, marsItemScores, marsWorld } from './marsItems';
import { writeMarsReport } from './marsReport';
import { mean, readPartFile, writePartFile, type Part } from './studyParts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}

const PRESET = arg('preset', 'mars-overflow');
const preset = loadPreset(PRESET);
const presetCfg = resolvePresetConfig(PRESET, []) as MarsConfig;
const steps = Number(arg('steps', String(presetCfg.budget.steps)));
const seeds = Number(arg('seeds', '5'));
const items = Number(arg('items', String(presetCfg.eval.items)));
const presetBase = presetCfg.model.from.kind === 'checkpoint' ? presetCfg.model.from.path : 'resources/mars/base-tiny';
const basePath = arg('base', presetBase);
const out = arg('out', 'docs/results/mars-study.md');
const partsDir = arg('parts', out.replace(/\.md$/, '.parts'));
const home = arg('home', path.join(os.tmpdir(), 'mars-study-home'));
const variants = arg('variants', Object.keys(preset.variants ?? {}).join(',')).split(',');
for (const v of variants) {
  if (!(v in (preset.variants ?? {}))) {
    throw new Error(
      `--variants: ${v} is not a variant of ${PRESET} (${Object.keys(preset.variants ?? {}).join(', ')})`,
    );
  }
}
/** Extra `--set k=v` overrides (repeatable) for every run, e.g. mars.evalPurposeStripped=true; the report names them. */
const extraSets = process.argv.flatMap((a, i) => (a === '--set' && process.argv[i + 1] ? [process.argv[i + 1]!] : []));
const armKey = (variant: string) =>
  `${PRESET}:${variant}${path.normalize(basePath) === path.normalize(presetBase) ? '' : `@${path.basename(basePath)}`}`;

function sets(seed: number): string[] {
  return [
    `seed=${seed}`,
    `budget.steps=${steps}`,
    'eval.every=0',
    `eval.items=${items}`,
    `checkpoint.every=${steps}`,
    'checkpoint.keep=1',
    `model.from={"kind":"checkpoint","path":"${basePath}"}`,
    ...extraSets,
  ];
}

function machine(backend: string): string {
  const cpu = os.cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}, Node ${process.version}, TensorFlow.js backend ${backend}`;
}

const readPart = (f: string) => readPartFile(f, 'delete it');
const writePart = (part: Part) => writePartFile(path.join(partsDir, `${part.arm.replace(/[/:@]/g, '_')}.json`), part);

/** Figures from a run's metrics.jsonl: training reward, searches and System 1's measures, first vs last fifth. */
function trainingFigures(runDir: string): Record<string, number> {
  const lines = fs
    .readFileSync(runFilePaths(runDir).metrics, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, number>);
  const k = Math.max(1, Math.floor(lines.length / 5));
  const window = (ls: Record<string, number>[], key: string) => mean(ls.map((l) => l[key] ?? 0));
  const out: Record<string, number> = {
    'train.rewardFirst': window(lines.slice(0, k), 'reward'),
    'train.rewardLast': window(lines.slice(-k), 'reward'),
    'train.searchesFirst': window(lines.slice(0, k), 'searchesPerQuestion'),
    'train.searchesLast': window(lines.slice(-k), 'searchesPerQuestion'),
    'train.stepSeconds': mean(lines.map((l) => ((l['timing.rolloutMs'] ?? 0) + (l['timing.updateMs'] ?? 0)) / 1000)),
  };
  // what System 1 writes, over training (absent with System 1 off)
  for (const key of ['sys1SupportShare', 'sys1GoldAnswerShare', 'infoSupportShare']) {
    const has = lines.filter((l) => l[key] !== undefined);
    if (has.length) {
      out[`train.${key}First`] = window(has.slice(0, k), key);
      out[`train.${key}Last`] = window(has.slice(-k), key);
    }
  }
  return out;
}

async function runArm(variant: string, backend: string, cmd: string): Promise<void> {
  const arm = armKey(variant);
  const file = path.join(partsDir, `${arm.replace(/[/:@]/g, '_')}.json`);
  const prev = fs.existsSync(file) ? readPart(file) : null;
  if (prev && (prev.steps !== steps || prev.items !== items)) {
    throw new Error(`${file} has ${prev.steps} steps and ${prev.items} questions; run with the same, or delete it`);
  }
  const cfg0 = resolvePresetConfig(PRESET, sets(0), undefined, variant) as MarsConfig;
  const t0 = Date.now();
  let part: Part;
  if (prev) {
    part = { ...prev, cmd: prev.cmd.includes(cmd) ? prev.cmd : `${prev.cmd}, then ${cmd}` };
  } else {
    // the base, evaluated as this variant evaluates (System 1 off evaluates with System 1 off)
    const base = await evaluateCheckpoint(home, basePath, cfg0);
    const chance = marsChance(cfg0);
    console.log(`${arm} base: exact match ${base.metrics.exactMatch} (${base.cached ? 'cached' : 'evaluated'})`);
    part = {
      arm,
      cmd,
      steps,
      seeds: 0,
      items,
      temperature: cfg0.eval.temperature,
      backend,
      machine: machine(backend),
      minutes: (Date.now() - t0) / 60000,
      base: {
        name: `base (evaluated as ${arm})`,
        metrics: Object.fromEntries(Object.entries(base.metrics).map(([k, v]) => [k, [v]])),
        seconds: [],
      },
      trained: { name: arm, metrics: {}, seconds: [] },
      itemIds: base.items.map((x) => x.id),
      worlds: base.items.map((x) => marsWorld(x.id)),
      chance: base.items.map((x) => {
        const c = chance.get(x.id);
        if (c === undefined) throw new Error(`${x.id}: not a question of the held-out worlds`);
        return c;
      }),
      baseItems: marsItemScores(base.items),
      seedItems: [],
      load: [],
    };
    writePart(part);
  }
  for (let seed = (prev?.seedItems?.length ?? 0) + 1; seed <= seeds; seed++) {
    const s = Date.now();
    const load: number[] = [];
    const sampler = setInterval(() => load.push(os.loadavg()[0]!), 10_000);
    let ev: Awaited<ReturnType<typeof evaluateCheckpoint>>;
    let train: Record<string, number>;
    try {
      const cfg = resolvePresetConfig(PRESET, sets(seed), undefined, variant);
      const r = await startRun(home, cfg);
      ev = await evaluateCheckpoint(home, path.join(r.dir, 'checkpoints', String(r.step)));
      train = trainingFigures(r.dir);
    } finally {
      clearInterval(sampler);
    }
    const ids = ev.items.map((x) => x.id);
    if (ids.join('\n') !== part.itemIds!.join('\n')) {
      throw new Error(`${arm} seed ${seed}: evaluated other questions than its base (the evaluation set changed)`);
    }
    for (const [k, v] of Object.entries({ ...ev.metrics, ...train })) {
      if (Number.isFinite(v)) (part.trained.metrics[k] ??= []).push(v);
    }
    part.trained.seconds.push((Date.now() - s) / 1000);
    part.seedItems!.push(marsItemScores(ev.items));
    part.seeds = part.seedItems!.length;
    part.load!.push(...load);
    part.minutes += (Date.now() - s) / 60000;
    writePart(part);
    console.log(
      `${arm} seed ${seed}: exact match ${ev.metrics.exactMatch} (${((Date.now() - s) / 1000).toFixed(0)} s, load ${load.length ? mean(load).toFixed(1) : '–'})`,
    );
  }
}

async function main() {
  if (!process.argv.includes('--report')) {
    const backend = (await initBackend()).chosen;
    const cmd = `npm run study:mars -- ${process.argv.slice(2).join(' ')}`.trim();
    fs.mkdirSync(partsDir, { recursive: true });
    fs.mkdirSync(home, { recursive: true });
    for (const variant of variants) await runArm(variant, backend, cmd);
  }
  const parts = fs
    .readdirSync(partsDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => readPart(path.join(partsDir, f)));
  if (!parts.length) throw new Error(`no study parts in ${partsDir}`);
  writeMarsReport(parts, out);
  console.log(`wrote ${out}`);
}

await main();
