/**
 * `npm run study:marti`: the MARTI-MARS² ladder (issue 5 "Evidence"): the base model, then single-agent GRPO,
 * homogeneous and heterogeneous MARS² trained from it with several seeds, each evaluated on the same held-out tasks:
 * pass@1 and best-of-tree on private tests, the same under T+, and the §3.11 diversity measures. Writes
 * docs/results/marti.md (and the raw figures as JSON beside it).
 *
 *   npm run study:marti -- [--steps 40] [--seeds 3] [--items 32] [--base resources/marti/base-tiny] [--out docs/results/marti.md]
 *   [--arms marti-single,marti-homo]   only these arms (and the base evaluated as them); their figures go to
 *                                      docs/results/marti.parts/<arm>.json and the report is rebuilt from every part
 *                                      there, so arms can run in parallel processes (wasm uses one core each)
 *   [--report]                         only rebuild the report from the parts
 *
 * The presets marti-single, marti-homo and marti-hetero give the configurations; only seed, budget, evaluation items
 * and cadences are changed here, and the command line written into the report says by how much.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadCheckpoint } from '../../engine/model/checkpoint';
import { marti } from '../../engine/marti/trainer';
import type { MartiConfig } from '../../engine/marti/configSchema';
import { resolvePresetConfig } from '../../engine/runs/presets';
import { startRun } from '../../engine/runs/runLoop';
import { runFilePaths } from '../../engine/runs/runFolder';
import { initBackend } from '../../engine/tensor/backend';
import {
  allOf,
  claimLine,
  DEFAULT_ALPHA,
  seedsVerdict,
  shiftVerdict,
  type VerdictResult,
} from '../../engine/metrics/verdict';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}

const steps = Number(arg('steps', '40'));
const seeds = Number(arg('seeds', '3'));
const items = Number(arg('items', '32'));
const basePath = arg('base', 'resources/marti/base-tiny');
const out = arg('out', 'docs/results/marti.md');
const ALL_ARMS = [
  { name: 'single (GRPO)', preset: 'marti-single' },
  { name: 'homogeneous', preset: 'marti-homo' },
  { name: 'heterogeneous', preset: 'marti-hetero' },
] as const;
const chosen = arg('arms', ALL_ARMS.map((a) => a.preset).join(',')).split(',');
const ARMS = ALL_ARMS.filter((a) => chosen.includes(a.preset));
const reportOnly = process.argv.includes('--report');
const partsDir = path.join(path.dirname(out), 'marti.parts');
type Row = { name: string; metrics: Record<string, number[]>; seconds: number[] };
interface Part {
  arm: string;
  cmd: string;
  steps: number;
  seeds: number;
  items: number;
  temperature?: number;
  backend: string;
  machine: string;
  minutes: number;
  base: Row;
  trained: Row;
}

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
    'marti.tplus.enabled=true',
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

async function runArm(arm: (typeof ALL_ARMS)[number], home: string, backend: string, cmd: string): Promise<Part> {
  const t0 = Date.now();
  // The base model, evaluated as this configuration evaluates (single = one agent; homo/hetero = two role prompts).
  const cfg0 = resolvePresetConfig(arm.preset, sets(0)) as MartiConfig;
  const { model } = await loadCheckpoint(basePath);
  const s0 = Date.now();
  const b = await marti.evaluate(cfg0, model);
  model.dispose();
  const base: Row = {
    name: `base (evaluated as ${arm.preset})`,
    metrics: Object.fromEntries(Object.entries(b.metrics).map(([k, v]) => [k, [v]])),
    seconds: [(Date.now() - s0) / 1000],
  };
  console.log(
    `base as ${arm.preset}: pass1 ${b.metrics.pass1} bestOfTree ${b.metrics.bestOfTree} tplus ${b.metrics['tplus.pass1']}`,
  );
  const metrics: Record<string, number[]> = {};
  const seconds: number[] = [];
  for (let seed = 1; seed <= seeds; seed++) {
    const cfg = resolvePresetConfig(arm.preset, sets(seed));
    const s = Date.now();
    const r = await startRun(home, cfg);
    seconds.push((Date.now() - s) / 1000);
    const lines = fs
      .readFileSync(runFilePaths(r.dir).metrics, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, number>);
    const last = lines.at(-1)!;
    for (const [k, v] of Object.entries(last)) if (k.startsWith('eval.')) (metrics[k.slice(5)] ??= []).push(v);
    const k5 = Math.min(5, lines.length);
    (metrics['train.rewardFirst5'] ??= []).push(stats(lines.slice(0, k5).map((l) => l.reward!)).m);
    (metrics['train.rewardLast5'] ??= []).push(stats(lines.slice(-k5).map((l) => l.reward!)).m);
    (metrics['train.stepSeconds'] ??= []).push(
      stats(
        lines.map(
          (l) =>
            ((l['timing.selectionMs'] ?? 0) +
              (l['timing.generationMs'] ?? 0) +
              (l['timing.testMs'] ?? 0) +
              (l['timing.updateMs'] ?? 0)) /
            1000,
        ),
      ).m,
    );
    console.log(
      `${arm.preset} seed ${seed}: pass1 ${last['eval.pass1']} bestOfTree ${last['eval.bestOfTree']} tplus ${last['eval.tplus.pass1']} (${seconds.at(-1)} s)`,
    );
  }
  return {
    arm: arm.preset,
    cmd,
    steps,
    seeds,
    items,
    temperature: cfg0.eval.temperature,
    backend,
    machine: machine(backend),
    minutes: (Date.now() - t0) / 60000,
    base,
    trained: { name: arm.name, metrics, seconds },
  };
}

/**
 * The paper's claims, each decided by a one-sided test at α (engine/metrics/verdict.ts): arm against arm by an exact
 * permutation test over seeds; an arm against its base (one deterministic figure) by a sign-flip test on the seeds'
 * gains. Never a bare comparison of means.
 */
function claimLines(parts: Part[]): string[] {
  const arm = (preset: string) => parts.find((p) => p.arm === preset);
  const seedsOf = (preset: string, k: string) => arm(preset)?.trained.metrics[k] ?? [];
  const avg = (xs: number[]) => (xs.length ? stats(xs).m.toFixed(3) : '–');
  /** `hi` beats `lo` on metric k for every consecutive pair of presets (an ordering lo < … < hi). */
  const order = (text: string, presets: string[], k: string) => {
    const have = presets.every((p) => seedsOf(p, k).length > 0);
    const short = (p: string) => p.replace('marti-', '');
    const pairs: (VerdictResult & { label: string })[] = have
      ? presets.slice(1).map((p, i) => ({
          ...seedsVerdict(seedsOf(p, k), seedsOf(presets[i]!, k)),
          label: `${short(p)} > ${short(presets[i]!)}`,
        }))
      : [];
    const figures = presets.map((p) => `${short(p)} ${avg(seedsOf(p, k))}`).join(', ');
    return claimLine(
      text,
      have ? (pairs.length === 1 ? pairs[0]! : allOf(pairs)) : null,
      have ? figures : 'arm not run',
    );
  };
  const overBase = (preset: string) => {
    const a = arm(preset);
    const b = a?.base.metrics.pass1?.[0];
    const xs = seedsOf(preset, 'pass1');
    const text = `${preset} beats its base on held-out pass@1`;
    if (!a || b === undefined || !xs.length) return claimLine(text, null, 'arm not run');
    return claimLine(text, shiftVerdict(xs.map((x) => x - b)), `${b.toFixed(3)} → ${avg(xs)}`);
  };
  return [
    "## The paper's claims, as measured",
    '',
    `Each claim is decided by a one-sided test at α = ${DEFAULT_ALPHA}: **holds** when the test in the claim's direction rejects, **does not hold** when the test against it rejects, **inconclusive** when neither does. An ordering holds only when each of its comparisons does.`,
    '',
    order(
      'Heterogeneous beats homogeneous beats single-agent GRPO on held-out pass@1',
      ['marti-single', 'marti-homo', 'marti-hetero'],
      'pass1',
    ),
    order('The same order under T+ (T+ pass@1)', ['marti-single', 'marti-homo', 'marti-hetero'], 'tplus.pass1'),
    order(
      'Diversity rises from single to homogeneous to heterogeneous (within-tree edit distance)',
      ['marti-single', 'marti-homo', 'marti-hetero'],
      'div.editDistance',
    ),
    ...ALL_ARMS.map((a) => overBase(a.preset)),
    '',
  ];
}

function writeReport(): void {
  const parts = ALL_ARMS.map((a) => path.join(partsDir, `${a.preset}.json`))
    .filter((f) => fs.existsSync(f))
    .map((f) => JSON.parse(fs.readFileSync(f, 'utf8')) as Part);
  if (!parts.length) throw new Error(`no study parts in ${partsDir}`);
  const rows: Row[] = [...parts.map((p) => p.base), ...parts.map((p) => p.trained)];
  const cmds = [...new Set(parts.map((p) => p.cmd))];
  const p0 = parts[0]!;
  const lines: string[] = [
    '# MARTI-MARS² study (`npm run study:marti`)',
    '',
    `Command${cmds.length > 1 ? 's (arms run as parallel processes, one core each)' : ''}: ${cmds.map((c) => `\`${c}\``).join('; ')}. Steps ${p0.steps}, seeds ${p0.seeds}, ${p0.items} held-out tasks, base ${basePath}.`,
    `Machine: ${p0.machine}; shared with other jobs while it ran. Date: ${new Date().toISOString().slice(0, 10)}. Minutes per arm: ${parts.map((p) => `${p.arm} ${p.minutes.toFixed(1)}`).join(', ')}.`,
    '',
    'Each configuration is its preset (marti-single = vanilla GRPO, no tree; marti-homo = two role prompts, one parameter set; marti-hetero = two parameter sets), trained from the same base checkpoint with only seed, steps and evaluation size changed. Figures are mean ± sample sd over seeds of the final evaluation; the base rows are one deterministic evaluation. All evaluation is on held-out tasks (targets never trained on), scored on private tests.',
    '',
    `- **pass1**: one program per task, sampled at the presets' evaluation temperature (eval.temperature ${p0.temperature ?? 0}${(p0.temperature ?? 0) > 0 ? ', as training samples' : ', greedy'}), its private-test pass rate (§3.9 plain accuracy). **pass1Greedy**: the same, decoded greedily.`,
    '- **pass1MCTS**: an 8-node tree per task; the node with the best public score, its private score (§3.9).',
    '- **bestOfTree**: the best private score in the 8-node tree (§3.9 passN). For marti-single the 8 nodes are independent samples (no tree).',
    '- **tplus.***: T+ (§3.10 a, b): 16 nodes, rich feedback, depth weighting, final pick by public tests; the learned verifier (c) is not implemented.',
    '',
    ...claimLines(parts),
    '| arm | pass1 | pass1Greedy | pass1MCTS | bestOfTree | T+ pass1 | T+ bestOfTree | train reward first 5 steps → last 5 | s/step |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${MAIN.map((k) => fmt(r.metrics[k])).join(' | ')} | ${r.metrics['train.rewardFirst5'] ? `${fmt(r.metrics['train.rewardFirst5'])} → ${fmt(r.metrics['train.rewardLast5'])}` : '–'} | ${fmt(r.metrics['train.stepSeconds'])} |`,
    ),
    '',
    '## Diversity (§3.11, the 8-node evaluation trees; tplus.* on the T+ trees)',
    '',
    `| arm | ${DIVERSITY.join(' | ')} |`,
    `|---|${DIVERSITY.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.name} | ${DIVERSITY.map((k) => fmt(r.metrics[k])).join(' | ')} |`),
    '',
    'editDistance: mean pairwise normalised token edit distance of programs in a tree; acrossAgents: pairs by different agents; distinctPrograms: distinct programs / programs; behaviour: distinct output signatures on the private inputs / programs; distinctCorrect: distinct correct programs per task; passGap: bestOfTree − pass1MCTS; uniqueSolves: tasks solved by exactly one agent; tokenEntropy: mean −log π of sampled tokens (nats).',
    '',
  ];
  const notes = path.join(path.dirname(out), 'marti.notes.md');
  if (fs.existsSync(notes)) lines.push(fs.readFileSync(notes, 'utf8'));
  fs.writeFileSync(out, lines.join('\n'));
  console.log(`wrote ${out}`);
}

async function main() {
  if (!reportOnly) {
    const backend = (await initBackend({ force: 'wasm' })).chosen;
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'marti-study-'));
    const cmd = `npm run study:marti -- ${process.argv.slice(2).join(' ')}`.trim();
    fs.mkdirSync(partsDir, { recursive: true });
    for (const arm of ARMS) {
      const part = await runArm(arm, home, backend, cmd);
      fs.writeFileSync(path.join(partsDir, `${arm.preset}.json`), JSON.stringify(part, null, 1) + '\n');
    }
    fs.rmSync(home, { recursive: true, force: true });
  }
  writeReport();
}

await main();
