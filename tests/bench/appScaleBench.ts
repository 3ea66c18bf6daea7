/**
 * App scale figures (issue 19 "Scale"; a benchmark, never test assertions): a home of 1,000 runs, `--big` of them with
 * 10^5 metrics lines each, each run with the metrics summary sidecar and pre-parsed rows the run loop writes
 * (engine/runs/summary/summarySidecar.ts, metricRows.ts);
 * the time to list the runs (cold: the run index built for the first time; "legacy": the same home without sidecars,
 * as runs of an earlier version left it, whose first listing reads every log and writes their sidecars), to open a big
 * run's page (getRun, then every metric's series) and to fetch a 20-run overlay through the host API (cold: first
 * read of the logs; warm: the host's caches filled), the answers' sizes, and, with the built renderer (`npm run build`)
 * and Debian's Chromium, the time until the Runs view shows its table and until a 20-run overlay shows its 20 lines,
 * with the window's JS heap after each.
 *
 *   npx tsx tests/bench/appScaleBench.ts [--runs 1000] [--lines 100000] [--big 20] [--no-browser] [--json out.json]
 *
 * Figures vary 2-3x with the machine's load: the answer records the load average before and after.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { chromium } from 'playwright-core';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost } from '../../engine/api/host/host';
import { clearSeriesCaches, runsMetricSeries } from '../../engine/api/views/runsSeries';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { DEFAULT_RENDERER_DIR, startWebServer } from '../../engine/api/web/webServer';
import { INDEX_FILE } from '../../engine/runs/folder/home';
import { createRunFolder, updateStatus } from '../../engine/runs/folder/runFolder';
import { openRunIndex } from '../../engine/runs/summary/runIndex';
import { removeOtherRows } from '../../engine/runs/summary/metricRows';
import { SUMMARY_SIDECAR, SummaryKeeper } from '../../engine/runs/summary/summarySidecar';

const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
const T0 = 1_800_000_000;

const noLaunches: RunLauncher = {
  launch() {
    throw new Error('the scale bench launches nothing');
  },
};

/** Writes `lines` metrics lines (reward, loss, gradNorm, lr, zeroAdvantageShare; eval.accuracy every 100). */
function writeMetrics(dir: string, lines: number, seed: number): number {
  const file = path.join(dir, 'metrics.jsonl');
  const fd = fs.openSync(file, 'w');
  try {
    const chunk: string[] = [];
    for (let s = 1; s <= lines; s++) {
      const r = Math.min(1, s / lines + 0.05 * Math.sin(s * 0.37 + seed));
      chunk.push(
        JSON.stringify({
          step: s,
          time: T0 + s * 0.8,
          reward: r,
          loss: 1 - r,
          gradNorm: 1 + Math.cos(s),
          lr: 1e-3,
          zeroAdvantageShare: 0.3,
          ...(s % 100 === 0 ? { 'eval.accuracy': r * 0.9 } : {}),
        }),
      );
      if (chunk.length === 5000) {
        fs.writeSync(fd, chunk.join('\n') + '\n');
        chunk.length = 0;
      }
    }
    if (chunk.length) fs.writeSync(fd, chunk.join('\n') + '\n');
  } finally {
    fs.closeSync(fd);
  }
  return fs.statSync(file).size;
}

export function buildHome(runs: number, lines: number, big: number): { home: string; bigIds: string[]; bytes: number } {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-scale-'));
  const bigIds: string[] = [];
  let bytes = 0;
  for (let i = 0; i < runs; i++) {
    const isBig = i < big;
    const { id, dir } = createRunFolder(home, {
      algorithm: 'seqgrpo',
      preset: 'seqgrpo-copy',
      config: { algorithm: 'seqgrpo', budget: { steps: isBig ? lines : 200 } },
      engineVersion: '0',
      seed: i,
      tags: isBig ? ['big', `arm-${i % 4}`] : [`arm-${i % 10}`],
      notes: '',
    });
    bytes += writeMetrics(dir, isBig ? lines : 200, i);
    // what the run loop leaves at a run's end (its last flush)
    new SummaryKeeper(dir).flush();
    updateStatus(dir, 'finished', { step: isBig ? lines : 200 });
    if (isBig) bigIds.push(id);
  }
  return { home, bigIds, bytes };
}

const ms = (t0: number) => Math.round(performance.now() - t0);
/** CPU milliseconds of this process since `c0` (less sensitive than wall time to other processes' load). */
const cpuMs = (c0: NodeJS.CpuUsage) => {
  const c = process.cpuUsage(c0);
  return Math.round((c.user + c.system) / 1000);
};

export async function benchAppScale(opts: { runs: number; lines: number; big: number; browser: boolean }) {
  const t0 = performance.now();
  const { home, bigIds, bytes } = buildHome(opts.runs, opts.lines, opts.big);
  const load = () => os.loadavg().map((l) => Math.round(l * 100) / 100);
  const out: Record<string, unknown> = {
    runs: opts.runs,
    bigRuns: opts.big,
    linesPerBigRun: opts.lines,
    metricsBytes: bytes,
    buildHomeMs: ms(t0),
    loadBefore: load(),
  };
  try {
    const host = await createHost({ home, launcher: noLaunches, transport: 'web' });
    try {
      let t = performance.now();
      let c = process.cpuUsage();
      const listed = (await callApi(host.handlers, 'listRuns', {})) as { runs: unknown[] };
      out.listRunsColdMs = ms(t);
      out.listRunsColdCpuMs = cpuMs(c);
      t = performance.now();
      const again = await callApi(host.handlers, 'listRuns', {});
      out.listRunsWarmMs = ms(t);
      out.listRunsBytes = JSON.stringify(again).length;
      out.listed = listed.runs.length;

      // A run page's first calls for a 10^5-line run not read yet (the index built by the listing, its columns cold).
      t = performance.now();
      await callApi(host.handlers, 'getRun', { runId: bigIds[1], eventsLimit: 200 });
      out.getRunColdMs = ms(t);
      t = performance.now();
      await callApi(host.handlers, 'getMetricSeries', { runId: bigIds[1], width: 1000 });
      out.runPageSeriesColdMs = ms(t);

      const overlay = { runIds: bigIds.slice(0, 20), names: ['reward'], width: 600 };
      t = performance.now();
      c = process.cpuUsage();
      await callApi(host.handlers, 'getRunsMetricSeries', overlay);
      out.overlay20ColdMs = ms(t);
      out.overlay20ColdCpuMs = cpuMs(c);
      t = performance.now();
      const warm = await callApi(host.handlers, 'getRunsMetricSeries', overlay);
      out.overlay20WarmMs = ms(t);
      out.overlay20Bytes = JSON.stringify(warm).length;
      t = performance.now();
      await callApi(host.handlers, 'getMetricSeries', { runId: bigIds[0], width: 1000 });
      out.runPageSeriesWarmMs = ms(t);
      out.hostRssMb = Math.round(process.memoryUsage().rss / 2 ** 20);
      out.loadAverage = load();
      out.cpus = os.cpus().length;
    } finally {
      await host.close();
    }

    const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
    if (opts.browser && fs.existsSync(CHROMIUM) && fs.existsSync(index)) {
      // A fresh host and no cached columns, so the browser's first overlay reads the logs cold, as a new session would.
      clearSeriesCaches();
      const host2 = await createHost({ home, launcher: noLaunches, transport: 'web' });
      const server = await startWebServer({ host: host2, port: 0 });
      const browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking'],
      });
      try {
        const page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
        const cdp = await page.context().newCDPSession(page);
        await cdp.send('Performance.enable');
        const heapMb = async () => {
          await cdp.send('HeapProfiler.collectGarbage').catch(() => undefined);
          const { metrics } = await cdp.send('Performance.getMetrics');
          return Math.round((metrics.find((m) => m.name === 'JSHeapUsedSize')?.value ?? 0) / 2 ** 20);
        };
        let t = performance.now();
        await page.goto(`${server.url}#/runs`);
        // The table draws its first 200 rows (RunsView PAGE), the rest on request; sorting and filtering see all.
        await page
          .locator('[data-testid="runs-table"] tbody tr')
          .nth(Math.min(opts.runs, 200) - 1)
          .waitFor({ timeout: 60_000 });
        out.browserRunsViewMs = ms(t);
        out.browserRowsDrawn = await page.locator('[data-testid="runs-table"] tbody tr').count();
        out.browserHeapRunsViewMb = await heapMb();

        const overlayLines = page.locator(
          `[data-testid="runs-overlay"] [data-testid="overlay-chart"][data-lines="${Math.min(20, opts.big)}"]`,
        );
        // Pick the big runs: filter by their tag, tick the header (every shown run, at most 50), 20 lines on one chart.
        await page.getByTestId('runs-filter').fill('big');
        t = performance.now();
        await page.getByTestId('pick-shown').check();
        await overlayLines.waitFor({ timeout: 60_000 });
        out.browserOverlay20ColdMs = ms(t);
        out.browserHeapOverlayMb = await heapMb();
        // The same overlay again (the host's caches warm): clear, tick again.
        await page.getByRole('button', { name: 'clear' }).click();
        t = performance.now();
        await page.getByTestId('pick-shown').check();
        await overlayLines.waitFor({ timeout: 60_000 });
        out.browserOverlay20WarmMs = ms(t);
        await page.screenshot({ path: path.resolve('tests/output/bench-overlay-20.png') });

        // A run page of 10^5 lines (grouped dashboard).
        t = performance.now();
        await page.goto(`${server.url}#/run/${bigIds[0]}`);
        await page.locator('[data-testid="chart-reward"]:not([data-points="0"])').waitFor({ timeout: 60_000 });
        out.browserRunPageMs = ms(t);
        out.browserHeapRunPageMb = await heapMb();
        // Again, the host's caches warm (Runs view, then back to the run).
        await page.goto(`${server.url}#/runs`);
        await page.getByTestId('runs-table').waitFor();
        t = performance.now();
        await page.goto(`${server.url}#/run/${bigIds[0]}`);
        await page.locator('[data-testid="chart-reward"]:not([data-points="0"])').waitFor({ timeout: 60_000 });
        out.browserRunPageWarmMs = ms(t);
      } finally {
        await browser.close();
        await server.close();
        await host2.close();
      }
    } else if (opts.browser) {
      out.browser = `skipped: needs ${CHROMIUM} and the built renderer (npm run build)`;
    }
    // The same home as an earlier version's runs left it (no sidecars): its first listing reads every log whole and
    // gives the large ones a sidecar; a cold listing after that (index.json gone) reads those.
    const runsRoot = path.join(home, 'runs');
    for (const id of fs.readdirSync(runsRoot)) {
      fs.rmSync(path.join(runsRoot, id, SUMMARY_SIDECAR), { force: true });
      removeOtherRows(path.join(runsRoot, id), null);
    }
    fs.rmSync(path.join(home, INDEX_FILE));
    let t = performance.now();
    let c = process.cpuUsage();
    openRunIndex(home).list();
    out.listRunsLegacyColdMs = ms(t);
    out.listRunsLegacyColdCpuMs = cpuMs(c);
    fs.rmSync(path.join(home, INDEX_FILE));
    t = performance.now();
    c = process.cpuUsage();
    openRunIndex(home).list();
    out.listRunsAfterLegacyColdMs = ms(t);
    out.listRunsAfterLegacyColdCpuMs = cpuMs(c);
    // The 20-run overlay of such runs (no pre-parsed rows: every log parsed), host side, cold.
    clearSeriesCaches();
    t = performance.now();
    c = process.cpuUsage();
    runsMetricSeries(
      { runIds: bigIds.slice(0, 20), names: ['reward'], x: 'step', width: 600 },
      { dirOf: (id) => path.join(runsRoot, id) },
    );
    out.overlay20LegacyColdMs = ms(t);
    out.overlay20LegacyColdCpuMs = cpuMs(c);
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
  out.loadAfter = load();
  return out;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const { values: args } = parseArgs({
    options: {
      runs: { type: 'string', default: '1000' },
      lines: { type: 'string', default: '100000' },
      big: { type: 'string', default: '20' },
      'no-browser': { type: 'boolean', default: false },
      json: { type: 'string' },
    },
  });
  const result = await benchAppScale({
    runs: Number(args.runs),
    lines: Number(args.lines),
    big: Number(args.big),
    browser: !args['no-browser'],
  });
  console.log(JSON.stringify(result, null, 2));
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(result, null, 2) + '\n');
}
