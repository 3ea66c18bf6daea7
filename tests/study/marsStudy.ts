/**
 * `npm run study:mars`: the MARS ablation grid (issue 4 "Evidence"): the base model, then every variant of the
 * `mars-ablations` preset trained from it with several seeds, each evaluated on the same held-out questions (worlds
 * never trained on): exact match and F1 per question family, tokens per system, search calls per question, System 1
 * calls per search. Writes docs/results/mars.md (and the raw figures as JSON beside it).
 *
 *   npm run study:mars -- [--preset mars-ablations] [--set k=v …] [--steps 40] [--seeds 3] [--items 60] [--variants full,sys1-off,…] [--base resources/mars/base-tiny] [--out docs/results/mars.md (another preset: docs/results/<preset>.md)]
 *
 * `--preset mars-overflow` (or mars-overflow-long) runs the arms of the worlds where raw pages overflow System 2's
 * context (issue 17); the System 1 table then shows what System 1's outputs and System 2's <info> hold.
 *
 * Only seed, budget, evaluation size and cadences are changed from the preset, and the report's command line says by
 * how much.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { MARS_FAMILIES, type MarsConfig } from '../../engine/mars/configSchema';
import { loadPreset, resolvePresetConfig } from '../../engine/runs/presets';
import { evaluateCheckpoint } from '../../engine/runs/evaluation';
import { claimLine, DEFAULT_ALPHA, pairedSeedsVerdict, seedsVerdict, shiftVerdict } from '../../engine/metrics/verdict';
import { startRun } from '../../engine/runs/runLoop';
import { runFilePaths } from '../../engine/runs/runFolder';
import { initBackend } from '../../engine/tensor/backend';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}

const PRESET = arg('preset', 'mars-ablations');
const preset = loadPreset(PRESET);
const steps = Number(arg('steps', '40'));
const seeds = Number(arg('seeds', '3'));
const items = Number(arg('items', '60'));
// the preset's own base (mars-overflow starts from resources/mars/base-tiny-overflow)
const presetFrom = (preset.config as { model?: { from?: { kind?: string; path?: string } } }).model?.from;
const basePath = arg(
  'base',
  presetFrom?.kind === 'checkpoint' && presetFrom.path ? presetFrom.path : 'resources/mars/base-tiny',
);
// another preset's study gets its own file, so it never overwrites the ablation study's report
const out = arg('out', PRESET === 'mars-ablations' ? 'docs/results/mars.md' : `docs/results/${PRESET}.md`);
const variants = arg('variants', Object.keys(preset.variants ?? {}).join(',')).split(',');
/** Extra `--set k=v` overrides (repeatable) for every run, e.g. mars.evalPurposeStripped=true; the report names them. */
const extraSets = process.argv.flatMap((a, i) => (a === '--set' && process.argv[i + 1] ? [process.argv[i + 1]!] : []));

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

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const fmt = (xs: number[] | undefined, digits = 3) => {
  if (!xs || !xs.length) return '–';
  const m = mean(xs);
  const sd = xs.length > 1 ? Math.sqrt(xs.reduce((a, b) => a + (b - m) ** 2, 0) / (xs.length - 1)) : 0;
  return xs.length > 1 ? `${m.toFixed(digits)} ± ${sd.toFixed(digits)}` : m.toFixed(digits);
};

interface Row {
  name: string;
  /** Evaluation metrics and training-curve figures, one value per seed. */
  metrics: Record<string, number[]>;
}

async function main() {
  const backend = (await initBackend()).chosen;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-study-'));
  const t0 = Date.now();
  const rows: Row[] = [];
  const push = (m: Record<string, number[]>, k: string, v: number | undefined) => {
    if (v !== undefined && Number.isFinite(v)) (m[k] ??= []).push(v);
  };

  // The base model, evaluated with the full dual system (the preset's own config).
  const baseCfg = resolvePresetConfig(PRESET, sets(0)) as MarsConfig;
  const base = await evaluateCheckpoint(home, basePath, baseCfg);
  rows.push({
    name: 'base (no RL)',
    metrics: Object.fromEntries(Object.entries(base.metrics).map(([k, v]) => [k, [v]])),
  });
  console.log(`base: exact match ${base.metrics.exactMatch}`);

  for (const variant of variants) {
    const metrics: Record<string, number[]> = {};
    for (let seed = 1; seed <= seeds; seed++) {
      const cfg = resolvePresetConfig(PRESET, sets(seed), undefined, variant);
      const s = Date.now();
      const r = await startRun(home, cfg);
      const ev = await evaluateCheckpoint(home, path.join(r.dir, 'checkpoints', String(r.step)));
      for (const [k, v] of Object.entries(ev.metrics)) push(metrics, k, v);
      const lines = fs
        .readFileSync(runFilePaths(r.dir).metrics, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, number>);
      const k = Math.max(1, Math.floor(lines.length / 5));
      const window = (ls: Record<string, number>[], key: string) => mean(ls.map((l) => l[key] ?? 0));
      push(metrics, 'train.rewardFirst', window(lines.slice(0, k), 'reward'));
      push(metrics, 'train.rewardLast', window(lines.slice(-k), 'reward'));
      push(metrics, 'train.searchesFirst', window(lines.slice(0, k), 'searchesPerQuestion'));
      push(metrics, 'train.searchesLast', window(lines.slice(-k), 'searchesPerQuestion'));
      // what System 1 writes, over training (absent with System 1 off)
      for (const key of ['sys1SupportShare', 'sys1GoldAnswerShare', 'infoSupportShare']) {
        const has = lines.filter((l) => l[key] !== undefined);
        if (has.length) {
          push(metrics, `train.${key}First`, window(has.slice(0, k), key));
          push(metrics, `train.${key}Last`, window(has.slice(-k), key));
        }
      }
      push(
        metrics,
        'train.stepSeconds',
        mean(lines.map((l) => ((l['timing.rolloutMs'] ?? 0) + (l['timing.updateMs'] ?? 0)) / 1000)),
      );
      console.log(
        `${variant} seed ${seed}: exact match ${ev.metrics.exactMatch} (${((Date.now() - s) / 1000).toFixed(0)} s)`,
      );
    }
    rows.push({ name: variant, metrics });
  }

  const cmd = `npm run study:mars -- ${process.argv.slice(2).join(' ')}`.trim();
  const cpu = os.cpus();
  const families = baseCfg.task.families.filter((f) => MARS_FAMILIES.includes(f));
  const m = (r: Row | undefined, k: string) => (r?.metrics[k]?.length ? mean(r.metrics[k]) : NaN);
  const byName = (n: string) => rows.find((r) => r.name === n);
  const full = byName('full');
  const baseRow = rows[0]!;
  // Verdicts by a test at level α (engine/metrics/verdict.ts), never by a bare comparison of means: arms against each
  // other by an exact permutation test over seeds, a run against itself or a fixed base figure by a sign-flip test.
  const seedsOf = (r: Row | undefined, k: string) => r?.metrics[k] ?? [];
  const diff = (a: number, b: number) => `${a.toFixed(3)} vs ${b.toFixed(3)}`;
  const beats = (text: string, other: string) => {
    const o = byName(other);
    if (!seedsOf(full, 'exactMatch').length || !seedsOf(o, 'exactMatch').length) {
      return claimLine(text, null, 'variant not run');
    }
    return claimLine(
      text,
      seedsVerdict(seedsOf(full, 'exactMatch'), seedsOf(o, 'exactMatch')),
      diff(m(full, 'exactMatch'), m(o, 'exactMatch')),
    );
  };
  const gain = (k: string) => m(full, k) - m(baseRow, k);
  // per seed: (multi-hop gain over the base) − (single-hop gain over the base); the base is one deterministic figure
  const gainGap = seedsOf(full, 'multiHopExactMatch').map(
    (x, i) =>
      x -
      m(baseRow, 'multiHopExactMatch') -
      (seedsOf(full, 'singleHopExactMatch')[i]! - m(baseRow, 'singleHopExactMatch')),
  );
  const claims = [
    beats('Full MARS beats System 1 off on held-out exact match', 'sys1-off'),
    beats('Full MARS beats System 1 frozen', 'sys1-frozen'),
    claimLine(
      'Multi-hop gains exceed single-hop gains (full MARS over the base)',
      full && gainGap.length && gainGap.every(Number.isFinite) ? shiftVerdict(gainGap) : null,
      `multi-hop ${gain('multiHopExactMatch').toFixed(3)}, single-hop ${gain('singleHopExactMatch').toFixed(3)}`,
    ),
    claimLine(
      'Search calls per question grow during training (full MARS, first vs last fifth of the steps)',
      seedsOf(full, 'train.searchesLast').length
        ? pairedSeedsVerdict(seedsOf(full, 'train.searchesLast'), seedsOf(full, 'train.searchesFirst'))
        : null,
      full ? diff(m(full, 'train.searchesFirst'), m(full, 'train.searchesLast')) : 'variant not run',
    ),
  ];
  const familyCols = families.flatMap((f) => [`exactMatch.${f}`, `f1.${f}`]);
  const lines: string[] = [
    '# MARS ablation study (`npm run study:mars`)',
    '',
    `Command: \`${cmd}\` (steps ${steps}, seeds ${seeds}, ${items} held-out questions, base ${basePath}).`,
    `Machine: ${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, ${os.type()} ${os.release()}, Node ${process.version}, TensorFlow.js backend ${backend}. Date: ${new Date().toISOString().slice(0, 10)}. Wall time ${((Date.now() - t0) / 60000).toFixed(1)} min.`,
    '',
    `Each variant is the \`${PRESET}\` preset with its named overrides (\`npx mars-lab presets\` lists them), trained from the same base checkpoint; only seed, steps and evaluation size are changed here. Figures are mean ± sample sd over seeds of one greedy evaluation of the final checkpoint on the same held-out questions (worlds never trained on); the base row is one deterministic evaluation. Seeds vary the RL streams, not the base model or the worlds.`,
    '',
    "## The paper's claims, as measured",
    '',
    `Each claim is decided by a one-sided test at α = ${DEFAULT_ALPHA}: **holds** when the test in the claim's direction rejects, **does not hold** when the test against it rejects, **inconclusive** when neither does.`,
    '',
    ...claims,
    '',
    '## Held-out exact match and F1',
    '',
    '| variant | exact match | F1 | single-hop EM | multi-hop EM | train reward first → last fifth | s/step |',
    '|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${fmt(r.metrics.exactMatch)} | ${fmt(r.metrics.f1)} | ${fmt(r.metrics.singleHopExactMatch)} | ${fmt(r.metrics.multiHopExactMatch)} | ${r.metrics['train.rewardFirst'] ? `${fmt(r.metrics['train.rewardFirst'])} → ${fmt(r.metrics['train.rewardLast'])}` : '–'} | ${fmt(r.metrics['train.stepSeconds'], 1)} |`,
    ),
    '',
    '## Per question family (exact match / F1)',
    '',
    `| variant | ${families.map((f) => `${f} EM | ${f} F1`).join(' | ')} |`,
    `|---|${familyCols.map(() => '---').join('|')}|`,
    ...rows.map((r) => `| ${r.name} | ${familyCols.map((k) => fmt(r.metrics[k])).join(' | ')} |`),
    '',
    '## Cost: tokens, searches, System 1 calls (held-out evaluation)',
    '',
    '| variant | System 2 tokens / question | System 1 tokens / question | searches / question | System 1 calls / search | train searches / question first → last fifth |',
    '|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${fmt(r.metrics.sys2TokensPerQuestion, 1)} | ${fmt(r.metrics.sys1TokensPerQuestion, 1)} | ${fmt(r.metrics.searchesPerQuestion, 2)} | ${fmt(r.metrics.sys1CallsPerSearch, 2)} | ${r.metrics['train.searchesFirst'] ? `${fmt(r.metrics['train.searchesFirst'], 2)} → ${fmt(r.metrics['train.searchesLast'], 2)}` : '–'} |`,
    ),
    '',
    'System 1 calls per search differ by packing: FFD fills each window with as many pages as fit, `perdoc` gives each page its own window, `truncate` cuts everything into one window.',
    '',
    '## What System 1 writes and System 2 reads (held-out evaluation; engine/mars/sys1Measures.ts)',
    '',
    '| variant | System 1 outputs with the gold answer | with a support-fact sentence | tokens per output | <info> with a support-fact sentence | <info> with the gold answer | train: System 1 outputs with a support sentence, first → last fifth | purpose stripped: outputs with a support sentence | purpose stripped: exact match |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (r) =>
        `| ${r.name} | ${fmt(r.metrics.sys1GoldAnswerShare)} | ${fmt(r.metrics.sys1SupportShare)} | ${fmt(r.metrics.sys1OutputTokens, 1)} | ${fmt(r.metrics.infoSupportShare)} | ${fmt(r.metrics.infoGoldAnswerShare)} | ${r.metrics['train.sys1SupportShareFirst'] ? `${fmt(r.metrics['train.sys1SupportShareFirst'])} → ${fmt(r.metrics['train.sys1SupportShareLast'])}` : '–'} | ${fmt(r.metrics['purposeStripped.sys1SupportShare'])} | ${fmt(r.metrics['purposeStripped.exactMatch'])} |`,
    ),
    '',
    'With System 1 off, <info> is the raw pages cut to mars.rawInfoBudget tokens, so its columns say how often the fact survived the cut. A support-fact sentence is the sentence of a support page that states one hop of the question (its gold reasoning chain).',
    '',
  ];
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, lines.join('\n'));
  fs.writeFileSync(out.replace(/\.md$/, '.json'), JSON.stringify({ cmd, steps, seeds, items, rows }, null, 1) + '\n');
  fs.rmSync(home, { recursive: true, force: true });
  console.log(`wrote ${out}`);
}

await main();
