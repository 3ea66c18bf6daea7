/**
 * Issue 19's charts and health in a real headless Chromium (Debian's, via playwright-core) against web mode on a
 * temporary home of crafted run folders (nothing trains):
 * - the Runs table shows step of total; ticking N runs overlays N lines; "seeds as one arm" draws one line per arm with
 *   a band (min–max over seeds, said under the chart); the metric picker offers eval.* metrics;
 * - a MARS run's page opens on grouped panels (reward and held-out score first, per-family on one chart, timing
 *   collapsed), each chart with its description and unit; a click on a point links that step's episodes
 *   (`#/run/<id>/episodes?step=N`) and Compare's address for the checkpoint at or before it;
 * - a failed run's page shows a banner with the recorded reason (not raw JSON in the events table) and Fix & relaunch
 *   (the launch form with its config), and no Resume without a checkpoint; a collapse warning names its threshold.
 * Needs the built renderer (`npm run build`). Screenshots go to tests/output/e2e/ (git-ignored).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, type Page } from 'playwright-core';
import { haveChromium, launchChromium } from '../helpers/chromium';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { DEFAULT_RENDERER_DIR, startWebServer, type WebServer } from '../../engine/api/web/webServer';
import { createRunFolder, updateStatus } from '../../engine/runs/folder/runFolder';
import { acquireRunLock } from '../../engine/runs/folder/runLock';

const OUTPUT = path.resolve('tests/output/e2e');
const T0 = 1_800_000_000;

let home: string;
let host: Host;
let server: WebServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];
const ids: Record<string, string> = {};
let releaseLock: (() => void) | undefined;

function writeLines(dir: string, lines: object[]): void {
  fs.writeFileSync(path.join(dir, 'metrics.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
}

/** A finished seqgrpo run of 200 steps (of 300) whose reward rises to `top`. */
function seqRun(tag: string, seed: number, top: number): string {
  const { id, dir } = createRunFolder(home, {
    algorithm: 'seqgrpo',
    preset: 'seqgrpo-copy',
    config: { algorithm: 'seqgrpo', budget: { steps: 300 } },
    engineVersion: '0',
    seed,
    tags: [tag],
    notes: '',
  });
  const lines = Array.from({ length: 200 }, (_, i) => {
    const s = i + 1;
    const reward = top * (1 - Math.exp(-s / 40)) + 0.02 * Math.sin(s + seed);
    return {
      step: s,
      time: T0 + s * 1.5,
      reward,
      loss: 1 - reward,
      zeroAdvantageShare: 0.2,
      'timing.rolloutMs': 30,
      ...(s % 50 === 0 ? { 'eval.accuracy': reward - 0.1 } : {}),
    };
  });
  writeLines(dir, lines);
  updateStatus(dir, 'finished', { step: 200 });
  return id;
}

beforeAll(async () => {
  const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
  if (!fs.existsSync(index)) {
    throw new Error(`the built renderer is missing (${index}): run \`npm run build\` before these tests`);
  }
  fs.mkdirSync(OUTPUT, { recursive: true });
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-charts-e2e-'));
  for (const seed of [1, 2, 3]) ids[`high${seed}`] = seqRun('lr-high', seed, 0.9);
  for (const seed of [1, 2]) ids[`low${seed}`] = seqRun('lr-low', seed, 0.5);

  // A MARS run with per-family evaluation metrics, System 1 metrics, two checkpoints, and a collapse to warn about.
  {
    const { id, dir } = createRunFolder(home, {
      algorithm: 'mars',
      preset: 'mars-tiny',
      config: { algorithm: 'mars', budget: { steps: 40 } },
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    const lines = Array.from({ length: 40 }, (_, i) => {
      const s = i + 1;
      const evalLine =
        s % 10 === 0
          ? {
              'eval.exactMatch': s / 100,
              'eval.exactMatch.direct': s / 80,
              'eval.exactMatch.bridge': s / 200,
              'eval.f1': s / 90,
            }
          : {};
      return {
        step: s,
        time: T0 + s * 4,
        reward: s / 50,
        f1: s / 60,
        sys1Samples: 12,
        sys1DuplicateRatio: 0.1,
        sys2Samples: 8,
        answered: 0.9,
        zeroAdvantageShare: s > 30 ? 0.95 : 0.4,
        loss: 0.5,
        lr: 1e-3,
        'timing.rolloutMs': 100,
        ...evalLine,
      };
    });
    writeLines(dir, lines);
    for (const step of [20, 40]) {
      const c = path.join(dir, 'checkpoints', String(step));
      fs.mkdirSync(c, { recursive: true });
      fs.writeFileSync(path.join(c, 'config.json'), '{}');
      fs.writeFileSync(path.join(c, 'model.safetensors'), '');
    }
    updateStatus(dir, 'finished', { step: 40 });
    ids.mars = id;
  }

  // A heterogeneous MARTI run: per-agent series, diversity that falls by half (a collapse warning).
  {
    const { id, dir } = createRunFolder(home, {
      algorithm: 'marti',
      preset: 'marti-hetero-small',
      config: { algorithm: 'marti', budget: { steps: 30 } },
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    const lines = Array.from({ length: 30 }, (_, i) => {
      const s = i + 1;
      const ev =
        s % 10 === 0
          ? {
              'eval.pass1': s / 100,
              'eval.pass1.alpha': s / 90,
              'eval.pass1.beta': s / 120,
              'eval.div.distinctPrograms': 0.9 - s / 40,
              'eval.div.editDistance.alpha': 0.5,
              'eval.div.editDistance.beta': 0.4,
            }
          : {};
      return {
        step: s,
        time: T0 + s * 3,
        reward: s / 40,
        'agentReward.alpha': s / 35,
        'agentReward.beta': s / 50,
        'agentShare.alpha': 0.6,
        'agentShare.beta': 0.4,
        'loss.alpha': 0.3,
        'loss.beta': 0.4,
        'timing.generationMs': 50,
        ...ev,
      };
    });
    writeLines(dir, lines);
    updateStatus(dir, 'finished', { step: 30 });
    ids.marti = id;
  }

  // A running run (this process holds its lock, as its writer would): 10 of 100 steps at 2 s a step.
  {
    const { id, dir } = createRunFolder(home, {
      algorithm: 'seqgrpo',
      preset: 'seqgrpo-copy',
      config: { algorithm: 'seqgrpo', budget: { steps: 100 } },
      engineVersion: '0',
      seed: 4,
      tags: [],
      notes: '',
    });
    releaseLock = acquireRunLock(dir);
    updateStatus(dir, 'running', { pid: process.pid, step: 0 });
    writeLines(
      dir,
      Array.from({ length: 10 }, (_, i) => ({ step: i + 1, time: T0 + 2 * (i + 1), reward: 0.1 * i })),
    );
    ids.running = id;
  }

  // A run that failed at step 3 with a reason, before any checkpoint.
  {
    const { id, dir } = createRunFolder(home, {
      algorithm: 'seqgrpo',
      preset: 'seqgrpo-copy',
      config: { algorithm: 'seqgrpo', budget: { steps: 150 } },
      engineVersion: '0',
      seed: 9,
      tags: [],
      notes: '',
    });
    writeLines(
      dir,
      [1, 2, 3].map((s) => ({ step: s, time: T0 + s, reward: 0.1 })),
    );
    updateStatus(dir, 'failed', {
      step: 3,
      error: 'model.size: a 2e9-parameter model needs 8 GB; this machine has 4 GB free',
    });
    ids.failed = id;
  }

  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  server = await startWebServer({ host, port: 0 });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  page.on('pageerror', (error) => pageErrors.push(error.message));
});

afterAll(async () => {
  releaseLock?.();
  await browser?.close();
  await server?.close();
  await host?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const attr = async (testid: string, name: string) => page.getByTestId(testid).first().getAttribute(name);

describe.skipIf(!haveChromium)('charts, overlays and run health (issue 19)', () => {
  it('overlays the runs picked in the table, one line each, then one line per arm with a band', async () => {
    await page.goto(`${server.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    // step of total in the table
    const row = page.locator(`tr[data-run-id="${ids.high1}"]`);
    await expect.poll(() => row.getByTestId('run-progress').textContent()).toContain('200 / 300');

    for (const key of ['high1', 'high2', 'high3', 'low1', 'low2']) {
      await page.locator(`tr[data-run-id="${ids[key]}"] [data-testid="pick-run"]`).check();
    }
    const overlay = page.getByTestId('runs-overlay');
    await overlay.waitFor();
    await expect.poll(() => overlay.getByTestId('overlay-chart').getAttribute('data-lines')).toBe('5');
    await expect.poll(async () => overlay.getByTestId('overlay-legend').locator('li').count()).toBe(5);
    expect(await overlay.getByTestId('overlay-legend').textContent()).toContain('lr-high');
    await page.screenshot({ path: path.join(OUTPUT, 'runs-overlay-5.png'), fullPage: false });

    await overlay.getByTestId('overlay-group').check();
    await expect.poll(() => overlay.getByTestId('overlay-chart').getAttribute('data-lines')).toBe('2');
    expect(await overlay.getByTestId('overlay-chart').getAttribute('data-bands')).toBe('2');
    expect(await overlay.textContent()).toContain('band: min–max over seeds');
    expect(await overlay.getByTestId('overlay-legend').textContent()).toMatch(/3 seeds[\s\S]*2 seeds/);

    // eval metrics too
    const options = await overlay.getByTestId('overlay-metric').locator('option').allTextContents();
    expect(options).toContain('eval.accuracy');
    await overlay.getByTestId('overlay-metric').selectOption('eval.accuracy');
    await expect.poll(() => overlay.getByTestId('overlay-chart').getAttribute('data-points')).toBe(String(2 * 4));
    await page.screenshot({ path: path.join(OUTPUT, 'runs-overlay-arms.png'), fullPage: false });

    // A line appended to a picked run's log: its row and the overlay follow without a reload.
    await overlay.getByTestId('overlay-group').uncheck();
    await overlay.getByTestId('overlay-metric').selectOption('reward');
    await expect.poll(() => overlay.getByTestId('overlay-chart').getAttribute('data-lines')).toBe('5');
    const pointsBefore = Number(await overlay.getByTestId('overlay-chart').getAttribute('data-points'));
    fs.appendFileSync(
      path.join(home, 'runs', ids.high1!, 'metrics.jsonl'),
      JSON.stringify({ step: 201, time: T0 + 301.5, reward: 0.95 }) + '\n',
    );
    await expect.poll(() => row.getByTestId('run-progress').textContent()).toContain('201 / 300');
    await expect
      .poll(async () => Number(await overlay.getByTestId('overlay-chart').getAttribute('data-points')))
      .toBe(pointsBefore + 1);
    expect(pageErrors).toEqual([]);
  });

  it("opens a MARS run on grouped panels with descriptions; a click on a point links that step's episodes and a comparison", async () => {
    await page.goto(`${server.url}#/run/${ids.mars}`);
    const headline = page.getByTestId('panel-headline');
    await headline.waitFor();
    const first = await headline
      .locator('figure')
      .evaluateAll((figs) => figs.slice(0, 2).map((f) => f.getAttribute('data-testid')));
    expect(first).toEqual(['chart-reward', 'chart-eval.exactMatch']);
    expect(await page.getByTestId('chart-reward').textContent()).toContain('mean exact-match reward');
    expect(await page.getByTestId('chart-reward').textContent()).toContain('score, 0–1');
    // per-family series on one chart
    const family = page.getByTestId('chart-eval.exactMatch.<family>');
    expect(await family.getAttribute('data-lines')).toBe('2');
    expect(await page.getByTestId('panel-sys1').count()).toBe(1);
    expect(await page.getByTestId('panel-timing').getAttribute('open')).toBeNull();
    // the collapse warning, with its threshold
    expect(await page.getByTestId('health-warnings').textContent()).toMatch(
      /zeroAdvantageShare[\s\S]*95 %[\s\S]*≥ 90 %/,
    );
    // a bounded metric stays within [0, 1] (no ±1 padding around a share)
    expect(Number(await attr('chart-reward', 'data-y-min'))).toBeGreaterThanOrEqual(-0.05);
    await page.screenshot({ path: path.join(OUTPUT, 'run-dashboard-mars.png'), fullPage: true });

    const plot = page.getByTestId('chart-reward').locator('.u-over');
    const box = (await plot.boundingBox())!;
    await plot.click({ position: { x: box.width / 2, y: box.height / 2 } });
    const picked = page.getByTestId('picked-step');
    await picked.waitFor();
    const step = Number(/Step (\d+)/.exec((await picked.textContent())!)![1]);
    expect(step).toBeGreaterThan(5);
    expect(step).toBeLessThan(36);
    expect(await page.getByTestId('picked-trajectories').getAttribute('href')).toBe(
      `#/run/${ids.mars}/episodes?step=${step}`,
    );
    const ck = step >= 20 ? 20 : 40;
    expect(await page.getByTestId('picked-compare').getAttribute('href')).toBe(
      `#/compare?a=${encodeURIComponent(`${ids.mars}@${ck}`)}&b=${encodeURIComponent(`${ids.mars}@${ck === 20 ? 40 : 20}`)}`,
    );
    await page.screenshot({ path: path.join(OUTPUT, 'run-picked-step.png'), fullPage: false });
    expect(pageErrors).toEqual([]);
  });

  it('opens a MARTI run with per-agent series on one chart each, and warns that program diversity fell', async () => {
    await page.goto(`${server.url}#/run/${ids.marti}`);
    const agents = page.getByTestId('panel-agents');
    await agents.waitFor();
    expect(await page.getByTestId('chart-agentReward.<agent>').getAttribute('data-lines')).toBe('2');
    expect(await page.getByTestId('chart-eval.pass1.<agent>').getAttribute('data-lines')).toBe('2');
    expect(await page.getByTestId('chart-loss.<set>').getAttribute('data-lines')).toBe('2');
    expect(await page.getByTestId('chart-agentReward.<agent>').getByTestId('overlay-legend').textContent()).toMatch(
      /alpha[\s\S]*beta/,
    );
    expect(await page.getByTestId('panel-diversity').count()).toBe(1);
    expect(await page.getByTestId('health-warnings').textContent()).toMatch(
      /eval\.div\.distinctPrograms: program diversity is falling[\s\S]*half the run’s highest/,
    );
    const plot = page.getByTestId('chart-reward').locator('.u-over');
    const box = (await plot.boundingBox())!;
    await plot.click({ position: { x: box.width * 0.8, y: box.height / 2 } });
    const link = await page.getByTestId('picked-trajectories').getAttribute('href');
    expect(link).toMatch(new RegExp(`^#/run/${ids.marti}/tree\\?step=\\d+$`));
    await page.screenshot({ path: path.join(OUTPUT, 'run-dashboard-marti.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });

  it("shows a running run's step of total and the time left at its recent pace, on its page and in the table", async () => {
    await page.goto(`${server.url}#/run/${ids.running}`);
    await page.getByTestId('run-eta').waitFor();
    expect(await page.getByTestId('run-progress').textContent()).toContain('10 of 100 steps (10 %)');
    // 90 steps left at 2 s a step
    expect(await page.getByTestId('run-progress').getAttribute('data-eta')).toBe('180');
    expect(await page.getByTestId('run-eta').textContent()).toBe('about 3 min left');
    expect(await page.getByTestId('resume-run').isDisabled()).toBe(true);
    await page.goto(`${server.url}#/runs`);
    const row = page.locator(`tr[data-run-id="${ids.running}"]`);
    await expect
      .poll(() =>
        row
          .getByTestId('run-eta')
          .textContent()
          .catch(() => ''),
      )
      .toBe('≈3 min');
    expect(await row.getByTestId('run-progress').textContent()).toContain('10 / 100');
    expect(pageErrors).toEqual([]);
  });

  it('shows why a run failed, offers Fix & relaunch, and no Resume without a checkpoint', async () => {
    await page.goto(`${server.url}#/run/${ids.failed}`);
    const banner = page.getByTestId('failure-banner');
    await banner.waitFor();
    expect(await banner.textContent()).toContain('This run failed at step 3');
    expect(await page.getByTestId('failure-reason').textContent()).toBe(
      'model.size: a 2e9-parameter model needs 8 GB; this machine has 4 GB free',
    );
    expect(await page.getByTestId('fix-relaunch').getAttribute('href')).toBe(`#/launch?from=${ids.failed}`);
    expect(await page.getByTestId('resume-run').count()).toBe(0);
    // the events table reads as words, not JSON
    const events = await page.locator('table.events').textContent();
    expect(events).toContain('failed at step 3: model.size');
    expect(events).not.toContain('{"');
    expect(await page.getByTestId('run-progress').textContent()).toContain('3 of 150 steps');
    await page.screenshot({ path: path.join(OUTPUT, 'run-failed.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });

  it('fits 1024 px: the overlay and the run page have no clipped table or chart', async () => {
    await page.setViewportSize({ width: 1024, height: 900 });
    await page.goto(`${server.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    for (const key of ['high1', 'high2', 'low1']) {
      await page.locator(`tr[data-run-id="${ids[key]}"] [data-testid="pick-run"]`).check();
    }
    await expect.poll(() => page.getByTestId('overlay-chart').getAttribute('data-lines')).toBe('3');
    const overflow = () =>
      page.evaluate<number>('document.documentElement.scrollWidth - document.documentElement.clientWidth');
    expect(await overflow()).toBeLessThanOrEqual(0);
    // the table fits its box: no column scrolled out of view
    expect(
      await page.evaluate(
        "(() => { const w = document.querySelector('.table-wrap'); return w.scrollWidth - w.clientWidth; })()",
      ),
    ).toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(OUTPUT, 'runs-overlay-1024.png'), fullPage: true });
    await page.goto(`${server.url}#/run/${ids.mars}`);
    await page.getByTestId('panel-headline').waitFor();
    expect(await overflow()).toBeLessThanOrEqual(0);
    await page.screenshot({ path: path.join(OUTPUT, 'run-dashboard-1024.png'), fullPage: false });
    expect(pageErrors).toEqual([]);
  });
});
