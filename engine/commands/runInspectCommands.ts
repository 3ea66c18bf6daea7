/**
 * `ls` and `show`: the runs of a home as a table, and one run's status, metrics summary and checkpoints. Everything
 * shown comes from run folders anyone can copy in, so names and values pass through terminalText (control characters
 * escaped, one line each). Registered by runCommands.ts with the commands that launch runs.
 */
import { Command } from 'commander';
import { resolveHome, runsDir } from '../runs/folder/home';
import type { MetricPoint } from '../runs/summary/metricPoint';
import { readMetrics } from '../runs/folder/metricsLog';
import { shownStatus } from '../runs/folder/writerProcess';
import { listCheckpoints, readRunMeta } from '../runs/folder/runFolder';
import { headlineScore } from '../runs/summary/headlineMetric';
import { describeMetric, UNIT_TEXT } from '../pure/metricCatalog';
import { meanTimeSplit, TIME_PARTS } from '../pure/timeSplit';
import { openRunIndex } from '../runs/summary/runIndex';
import { homeOption } from './options';
import { resolveRun } from './runSpec';
import { terminalText as tt } from './terminalText';

export function registerLsCommand(program: Command): void {
  program
    .command('ls')
    .description('list runs with status, steps and key metrics')
    .option('--json', 'print JSON')
    .addOption(homeOption())
    .action(lsAction);
}

async function lsAction(opts: { json?: boolean; home?: string }): Promise<void> {
  const home = resolveHome({ home: opts.home });
  const runs = openRunIndex(home).list();
  if (opts.json) return console.log(JSON.stringify(runs, null, 2));
  if (runs.length === 0) {
    return console.log(`no runs in ${tt(runsDir(home))} (start one with: npx mars-lab train --preset seqgrpo-copy)`);
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
}

export function registerShowCommand(program: Command): void {
  program
    .command('show')
    .description("a run's config, status, metrics summary and checkpoints")
    .argument('<run>', 'run id, unique id prefix, or run folder')
    .option('--json', 'print JSON')
    .addOption(homeOption())
    .action(showAction);
}

async function showAction(spec: string, opts: { json?: boolean; home?: string }): Promise<void> {
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
  const headline = headlineScore(meta.algorithm, (key) => records.findLast((rec) => Number.isFinite(rec[key]))?.[key]);
  if (headline) Object.assign(out, { headline });
  const timeSplit = meanTimeSplit(meta.algorithm, records);
  if (timeSplit) Object.assign(out, { timeSplit });
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
  if (timeSplit) {
    const parts = TIME_PARTS.filter((p) => timeSplit.meanMs[p] > 0).map(
      (p) => `${p} ${(100 * timeSplit.share[p]).toFixed(1)}% (${fmtMs(timeSplit.meanMs[p])})`,
    );
    const rate =
      timeSplit.tokensPerSec === null
        ? ''
        : `; rollout tokens per second of sampling ${timeSplit.tokensPerSec.toFixed(0)}`;
    console.log(`time per step, mean of ${timeSplit.steps}: ${parts.join(', ')}${rate}`);
  }
  for (const w of warnings) console.error(`warning: ${tt(w)}`);
  console.log(`config: ${tt(JSON.stringify(meta.config))}`);
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

function fmtMs(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : `${ms.toFixed(ms >= 10 ? 0 : 1)} ms`;
}

function fmt(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toPrecision(5);
}
