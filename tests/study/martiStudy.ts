/**
 * `npm run study:marti`: the MARTI-MARS² ladder (issue 5 "Evidence"): the base model, then single-agent GRPO,
 * homogeneous and heterogeneous MARS² trained from it with several seeds, each evaluated on the same held-out tasks:
 * pass@1 and best-of-tree on private tests, the same under T+, and the §3.11 diversity measures. Writes
 * docs/results/marti-study.md from the parts in docs/results/marti.parts/ (docs/results/marti.md is written by hand and
 * leads with the claims table of every MARTI study; a study never overwrites it unless named with --out).
 *
 *   npm run study:marti -- [--steps 40] [--seeds 3] [--items 32] [--base resources/marti/base-tiny] [--out docs/results/marti-study.md]
 *   [--arms marti-single,marti-homo]   only these arms (and the base evaluated as them); their figures go to
 *                                      docs/results/marti.parts/<arm>.json and the report is rebuilt from every part
 *                                      there, so arms can run in parallel processes (wasm uses one core each)
 *   [--report]                         only rebuild the report from the parts
 *   [--tplus 0]                        leave T+ out of the final evaluations (a pilot's shortcut)
 *   [--add-seeds]                      keep an arm's existing part (its base evaluation and seeds 1…k) and run only
 *                                      seeds k+1…--seeds, with the same --steps and --items; a part is rewritten
 *                                      after every seed, so this also continues an interrupted arm
 *   [--parts DIR]                      where the parts go (default docs/results/marti.parts beside --out)
 *   [--base DIR]                       with another base than the shipped one, an arm's part and rows are named
 *                                      <preset>@<DIR's folder name> (agents with their own `from` keep it)
 *
 * The presets marti-single, marti-homo and marti-hetero give the configurations (and, named with --arms,
 * marti-hetero-bases: two agents from two different base models, marti-homo-updates: the update-count control); only
 * seed, budget, evaluation items and cadences are changed here, and the command line written into the report says by
 * how much. Each seed is trained by the trainer directly (no run folder) and evaluated once at the end.
 *
 * Issue 17: every evaluation keeps its per-problem outcomes (problem id, world, private score per mode; the base's
 * too, and a random program's chance per problem: tests/study/martiItems.ts), and the claims are decided on seeds
 * and on items together (tests/study/stats/clustered.ts): seed-level exact permutation tests, and sign-flip tests over
 * worlds on the paired per-problem differences, a claim holding only when both reject.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { holmMarked } from './claimsHolm';
import { evaluateMartiDetailed, type MartiEvalDetail } from '../../engine/marti/evaluate';
import { heldoutTasks, taskSpec } from '../../engine/marti/problems';
import { createMartiTrainer } from '../../engine/marti/trainer';
import type { MartiConfig } from '../../engine/marti/configSchema';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { initBackend } from '../../engine/tensor/backend';
import { itemScores, martiWorld, randomProgramChance } from './martiItems';
import {
  armBases,
  claimsTableLines,
  ladderPairs,
  pairedTableLines,
  perArmTableLines,
  type Part,
  type Row,
} from './martiReport';
import { readPartFile, writePartFile } from './studyParts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}

const steps = Number(arg('steps', '40'));
const seeds = Number(arg('seeds', '3'));
const items = Number(arg('items', '32'));
const basePath = arg('base', 'resources/marti/base-tiny');
const out = arg('out', 'docs/results/marti-study.md');
const tplusOn = arg('tplus', '1') !== '0';
const ALL_ARMS = [
  { name: 'single (GRPO)', preset: 'marti-single' },
  { name: 'homogeneous', preset: 'marti-homo' },
  { name: 'heterogeneous', preset: 'marti-hetero' },
  { name: 'heterogeneous, different bases', preset: 'marti-hetero-bases' },
  { name: 'homogeneous, update-matched', preset: 'marti-homo-updates' },
] as const;
const DEFAULT_ARMS = ['marti-single', 'marti-homo', 'marti-hetero'];
const chosen = arg('arms', DEFAULT_ARMS.join(',')).split(',');
for (const c of chosen) {
  if (!ALL_ARMS.some((a) => a.preset === c)) {
    throw new Error(`--arms: ${c} is not one of ${ALL_ARMS.map((a) => a.preset).join(', ')}`);
  }
}
const ARMS = ALL_ARMS.filter((a) => chosen.includes(a.preset));
const reportOnly = process.argv.includes('--report');
const addSeeds = process.argv.includes('--add-seeds');
const partsDir = arg('parts', path.join(path.dirname(out), 'marti.parts'));
const DEFAULT_BASE = 'resources/marti/base-tiny';
/** An arm's name in parts and tables: its preset, with `@<base folder>` when --base is not the shipped base. */
const armKey = (preset: string) =>
  path.normalize(basePath) === path.normalize(DEFAULT_BASE) ? preset : `${preset}@${path.basename(basePath)}`;

const MAIN = ['pass1', 'pass1Greedy', 'pass1MCTS', 'bestOfTree', 'tplus.pass1', 'tplus.bestOfTree'] as const;
const DIVERSITY = [
  'div.editDistance',
  'div.editDistance.acrossAgents',
  'div.distinctPrograms',
  'div.behaviour',
  'div.distinctCorrect',
  'div.passGap',
  'div.uniqueSolves',
  'div.tokenEntropy',
  'tplus.div.editDistance',
  'tplus.div.behaviour',
  'tplus.div.passGap',
] as const;

function sets(seed: number): string[] {
  // T+ is part of the study's final evaluation even where a preset leaves it to `eval --checkpoint` to save time
  return [
    `seed=${seed}`,
    `budget.steps=${steps}`,
    'eval.every=0',
    `eval.items=${items}`,
    `marti.tplus.enabled=${tplusOn}`,
    `checkpoint.every=${steps}`,
    'checkpoint.keep=1',
    `model.from={"kind":"checkpoint","path":"${basePath}"}`,
  ];
}

const stats = (xs: number[]) => {
  const m = xs.reduce((a, b) => a + b, 0) / xs.length;
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return { m, sd, n: xs.length };
};
const fmt = (xs: number[] | undefined) => {
  if (!xs || !xs.length) return '–';
  const { m, sd, n } = stats(xs);
  return n > 1 ? `${m.toFixed(3)} ± ${sd.toFixed(3)}` : m.toFixed(3);
};

function machine(backend: string): string {
  const cpu = os.cpus();
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}, Node ${process.version}, TensorFlow.js backend ${backend}`;
}

/** The figures of one evaluation: every metric as a one-value list, and the per-problem scores. */
function evalFigures(detail: MartiEvalDetail): { metrics: Record<string, number>; items: Record<string, number[]> } {
  return { metrics: detail.result.metrics, items: itemScores(detail) };
}

/** Evaluates the models a trainer holds (the base: every parameter set's initial weights; or after training). */
async function evaluateTrainer(
  cfg: MartiConfig,
  trainer: Awaited<ReturnType<typeof createMartiTrainer>>,
): Promise<ReturnType<typeof evalFigures>> {
  const models = new Map(trainer.parameterSets.map((s) => [s.id, s.model]));
  return evalFigures(await evaluateMartiDetailed(cfg, models, { tplus: cfg.marti.tplus.enabled }));
}

async function runArm(arm: (typeof ALL_ARMS)[number], backend: string, cmd: string): Promise<void> {
  const t0 = Date.now();
  // The base, evaluated as this configuration evaluates (single = one agent; homo/hetero = two role prompts), with
  // each parameter set's own initial weights (marti-hetero-bases: two different checkpoints).
  const cfg0 = resolvePresetConfig(arm.preset, sets(0)) as MartiConfig;
  const tasks = heldoutTasks(cfg0);
  // --add-seeds: an arm's existing part keeps its base evaluation and seeds; only the seeds after them are run
  const partFile = path.join(partsDir, `${armKey(arm.preset)}.json`);
  const prev = addSeeds && fs.existsSync(partFile) ? readPart(partFile) : null;
  if (prev && (prev.steps !== steps || prev.items !== items)) {
    throw new Error(`--add-seeds: ${partFile} has ${prev.steps} steps and ${prev.items} problems; run with the same`);
  }
  let base: Row;
  let baseItems: Record<string, number[]> | undefined;
  if (prev) {
    base = prev.base;
    baseItems = prev.baseItems;
  } else {
    const s0 = Date.now();
    const fresh = await createMartiTrainer(cfg0);
    let b: ReturnType<typeof evalFigures>;
    try {
      b = await evaluateTrainer(cfg0, fresh);
    } finally {
      fresh.dispose();
    }
    base = {
      name: `base (evaluated as ${armKey(arm.preset)})`,
      metrics: Object.fromEntries(Object.entries(b.metrics).map(([k, v]) => [k, [v]])),
      seconds: [(Date.now() - s0) / 1000],
    };
    baseItems = b.items;
    console.log(
      `base as ${arm.preset}: pass1 ${b.metrics.pass1} bestOfTree ${b.metrics.bestOfTree} tplus ${b.metrics['tplus.pass1']} (${base.seconds[0]} s)`,
    );
  }
  const metrics: Record<string, number[]> = structuredClone(prev?.trained.metrics ?? {});
  const seconds: number[] = [...(prev?.trained.seconds ?? [])];
  const seedItems: Record<string, number[]>[] = [...(prev?.seedItems ?? [])];
  const load: number[] = [...(prev?.load ?? [])];
  // what the part says of the problems, computed once for every write below
  const problems = {
    itemIds: tasks.map((t) => t.id),
    worlds: tasks.map(martiWorld),
    chance: randomProgramChance(tasks, taskSpec(cfg0)),
  };
  // the part as it stands, written after every seed: an interrupted arm keeps its seeds (--add-seeds continues it)
  const partNow = (): Part => ({
    arm: armKey(arm.preset),
    cmd: prev ? `${prev.cmd}, then ${cmd}` : cmd,
    steps,
    seeds: seedItems.length,
    items,
    temperature: cfg0.eval.temperature,
    backend,
    machine: machine(backend),
    minutes: (prev?.minutes ?? 0) + (Date.now() - t0) / 60000,
    base,
    trained: {
      name: armKey(arm.preset) === arm.preset ? arm.name : `${arm.name}, from ${path.basename(basePath)}`,
      metrics,
      seconds,
    },
    ...problems,
    baseItems,
    seedItems,
    load,
  });
  for (let seed = (prev?.seeds ?? 0) + 1; seed <= seeds; seed++) {
    const cfg = resolvePresetConfig(arm.preset, sets(seed)) as MartiConfig;
    const s = Date.now();
    const trainer = await createMartiTrainer(cfg);
    const lines: Record<string, number>[] = [];
    let ev: ReturnType<typeof evalFigures>;
    try {
      while (trainer.step < cfg.budget.steps) {
        const st = Date.now();
        const { metrics: m } = await trainer.trainStep();
        lines.push({ ...m, stepSeconds: (Date.now() - st) / 1000 });
        load.push(os.loadavg()[0]!);
        console.log(
          `${arm.preset} seed ${seed} step ${trainer.step}: reward ${m.reward?.toFixed(3)} (${lines.at(-1)!.stepSeconds} s, load ${load.at(-1)!.toFixed(1)})`,
        );
      }
      ev = await evaluateTrainer(cfg, trainer);
    } finally {
      trainer.dispose();
    }
    seconds.push((Date.now() - s) / 1000);
    for (const [k, v] of Object.entries(ev.metrics)) (metrics[k] ??= []).push(v);
    seedItems.push(ev.items);
    const k5 = Math.min(5, lines.length);
    (metrics['train.rewardFirst5'] ??= []).push(stats(lines.slice(0, k5).map((l) => l.reward!)).m);
    (metrics['train.rewardLast5'] ??= []).push(stats(lines.slice(-k5).map((l) => l.reward!)).m);
    (metrics['train.stepSeconds'] ??= []).push(stats(lines.map((l) => l.stepSeconds!)).m);
    // optimiser steps per parameter set over the run (the update-count control compares these)
    for (const key of Object.keys(lines[0] ?? {}).filter((k) => k.startsWith('optimizerSteps'))) {
      (metrics[`train.${key}`] ??= []).push(lines.reduce((t, l) => t + (l[key] ?? 0), 0));
    }
    console.log(
      `${arm.preset} seed ${seed}: pass1 ${ev.metrics.pass1} bestOfTree ${ev.metrics.bestOfTree} tplus ${ev.metrics['tplus.pass1']} (${seconds.at(-1)} s)`,
    );
    writePartFile(partFile, partNow());
  }
}

const ITEM_TABLE_MODES = ['pass1', 'pass1MCTS', 'bestOfTree', 'tplus.pass1'];
/** The paired table's pairs from the shipped base and across bases; the other bases' ladders follow (armBases). */
const PAIRS: [string, string][] = [
  ['marti-homo', 'marti-single'],
  ['marti-hetero', 'marti-homo'],
  ['marti-hetero-bases', 'marti-homo'],
  ['marti-hetero-bases', 'marti-homo-updates'],
  ['marti-hetero-bases', 'marti-hetero'],
  ['marti-homo', 'marti-homo-updates'],
  ['marti-hetero-bases', 'marti-homo@base-tiny-s1'],
  ['marti-homo@base-tiny-s1', 'marti-homo'],
];

const readPart = (f: string) => readPartFile(f, 're-run its arm');

function writeReport(): void {
  // the default arms in their order, then any other part (an arm from another base: marti-homo@base-tiny-s1.json)
  const order = (f: string) => {
    const i = ALL_ARMS.findIndex((a) => `${a.preset}.json` === f);
    return i < 0 ? ALL_ARMS.length : i;
  };
  const parts = fs
    .readdirSync(partsDir)
    .filter((f) => f.endsWith('.json'))
    .sort((a, b) => order(a) - order(b) || a.localeCompare(b))
    .map((f) => path.join(partsDir, f))
    .map(readPart);
  if (!parts.length) throw new Error(`no study parts in ${partsDir}`);
  const rows: Row[] = [...parts.map((p) => p.base), ...parts.map((p) => p.trained)];
  const cmds = [...new Set(parts.map((p) => p.cmd))];
  const p0 = parts[0]!;
  const loads = parts.flatMap((p) => p.load ?? []);
  const perArm = perArmTableLines(parts, ITEM_TABLE_MODES);
  const pairs = [...PAIRS, ...armBases(parts).slice(1).flatMap(ladderPairs)];
  const paired = pairedTableLines(parts, pairs, ['pass1', 'bestOfTree']);
  const lines: string[] = [
    '# MARTI-MARS² study (`npm run study:marti`)',
    '',
    `Command${cmds.length > 1 ? 's (arms run as parallel processes, one core each)' : ''}: ${cmds.map((c) => `\`${c}\``).join('; ')}. Steps ${p0.steps}, seeds ${[...new Set(parts.map((p) => p.seeds))].join(' or ')}, ${p0.items} held-out tasks, base ${basePath}. Seeds are numbered from 1 (config \`seed\` 1, 2, …): a preset's own run, \`train --preset\`, is seed 0, which no arm here ran.`,
    `Machine: ${p0.machine}; shared with other jobs while it ran${loads.length ? ` (1-minute load average during training ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}, mean ${stats(loads).m.toFixed(1)})` : ''}. Date: ${new Date().toISOString().slice(0, 10)}. Minutes per arm: ${parts.map((p) => `${p.arm} ${p.minutes.toFixed(1)}`).join(', ')}.`,
    '',
    'Each configuration is its preset (marti-single = vanilla GRPO, no tree; marti-homo = two role prompts, one parameter set; marti-hetero = two parameter sets; marti-hetero-bases = two parameter sets from two different base models; marti-homo-updates = marti-homo with half as many optimiser steps), trained with only seed, steps and evaluation size changed. Figures are mean ± sample sd over seeds of the final evaluation; the base rows are one deterministic evaluation. All evaluation is on held-out tasks (targets never trained on), scored on private tests.',
    '',
    `- **pass1**: one program per task, sampled at the presets' evaluation temperature (eval.temperature ${p0.temperature ?? 0}${(p0.temperature ?? 0) > 0 ? ', as training samples' : ', greedy'}), its private-test pass rate (§3.9 plain accuracy). **pass1Greedy**: the same, decoded greedily.`,
    '- **pass1MCTS**: an 8-node tree per task; the node with the best public score, its private score (§3.9).',
    '- **bestOfTree**: the best private score in the 8-node tree (§3.9 passN). For marti-single the 8 nodes are independent samples (no tree).',
    '- **tplus.***: T+ (§3.10 a, b): 16 nodes, rich feedback, depth weighting, final pick by public tests; the learned verifier (c) is not implemented.',
    '',
    "## The paper's claims, as measured",
    '',
    ...claimsTableLines(parts),
    '',
    '| arm | pass1 | pass1Greedy | pass1MCTS | bestOfTree | T+ pass1 | T+ bestOfTree | train reward first 5 steps → last 5 | s/step |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${MAIN.map((k) => fmt(r.metrics[k])).join(' | ')} | ${r.metrics['train.rewardFirst5'] ? `${fmt(r.metrics['train.rewardFirst5'])} → ${fmt(r.metrics['train.rewardLast5'])}` : '–'} | ${fmt(r.metrics['train.stepSeconds'])} |`,
    ),
    '',
    ...(perArm.length
      ? [
          '## Per-problem outcomes: standard errors over worlds, chance',
          '',
          "Problems are clustered in worlds (the family of the hidden target's first operation, tests/study/martiItems.ts); the cluster SE is CR1 over worlds of the seed-averaged per-problem scores, the naive SE treats problems as independent. Chance: the share of random generator programs of the problem's input kind that pass its private tests.",
          '',
          ...perArm,
          '',
        ]
      : []),
    ...(paired.length
      ? [
          '## Paired comparisons on the same problems',
          '',
          'Differences of seed-averaged per-problem scores (first arm − second). Item bootstrap: problems resampled (pairedStats.ts); world bootstrap: worlds resampled (clustered.ts). McNemar pairs seed i of one arm with seed i of the other on every problem and ignores worlds, so its p can be too small when worlds differ; the claims use the world sign-flip and seed tests.',
          '',
          ...paired,
          '',
        ]
      : []),
    '## Diversity (§3.11, the 8-node evaluation trees; tplus.* on the T+ trees)',
    '',
    `| arm | ${DIVERSITY.join(' | ')} |`,
    `|---|${DIVERSITY.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.name} | ${DIVERSITY.map((k) => fmt(r.metrics[k])).join(' | ')} |`),
    '',
    'editDistance: mean pairwise normalised token edit distance of programs in a tree; acrossAgents: pairs by different agents; distinctPrograms: distinct programs / programs; behaviour: distinct output signatures on the private inputs / programs; distinctCorrect: distinct correct programs per task; passGap: bestOfTree − pass1MCTS; uniqueSolves: tasks solved by exactly one agent; tokenEntropy: mean −log π of sampled tokens (nats).',
    '',
  ];
  // hand-written notes follow the generated part: marti.notes.md for marti.md, <name>.notes.md for <name>.md
  const notes = path.join(path.dirname(out), `${path.basename(out, '.md')}.notes.md`);
  if (fs.existsSync(notes)) lines.push(fs.readFileSync(notes, 'utf8'));
  fs.writeFileSync(out, holmMarked(out, lines.join('\n')));
  console.log(`wrote ${out}`);
}

async function main() {
  if (!reportOnly) {
    const backend = (await initBackend({ force: 'wasm' })).chosen;
    const cmd = `npm run study:marti -- ${process.argv.slice(2).join(' ')}`.trim();
    fs.mkdirSync(partsDir, { recursive: true });
    for (const arm of ARMS) {
      await runArm(arm, backend, cmd);
    }
  }
  writeReport();
}

await main();
