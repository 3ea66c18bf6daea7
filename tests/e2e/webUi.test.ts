/**
 * The app's views in a real headless Chromium (Debian's, driven by playwright-core; never a browser download) against
 * web mode on a temporary home: launch seqgrpo-copy from the form with a shortened budget and watch its chart receive
 * points live; a run started from the command line appears in the open Runs view without a reload; launch mars-tiny
 * from the form (two small steps) and open an episode in the trajectory inspector; a two-step MARTI run from the
 * command line grows its trees in the Tree tab node by node during a step (then shows each final tree) and its
 * diversity curves in the Diversity tab; compare the mars-tiny run's two checkpoints.
 *
 * Needs the built renderer (`npm run build`, which `npm test` runs first when the build is stale). Screenshots of each view, and the
 * measured append→chart latency (a figure, never asserted) and the states the open search tree went through, go to
 * tests/output/e2e/ (git-ignored).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, type Page } from 'playwright-core';
import { CHROMIUM, haveChromium, launchChromium } from '../helpers/chromium';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { DEFAULT_RENDERER_DIR, startWebServer, type WebServer } from '../../engine/api/web/webServer';
import { loadPreset } from '../../engine/runs/presets/presets';
import { spawnCli } from '../helpers/cli';

const OUTPUT = path.resolve('tests/output/e2e');
const STEPS = 60;

if (!haveChromium) {
  console.warn(
    `tests/e2e/webUi.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`,
  );
}

let home: string;
let host: Host;
let server: WebServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: path.join(OUTPUT, `${name}.png`), fullPage: true });
}

describe.skipIf(!haveChromium)('the app in a browser (web mode)', () => {
  beforeAll(async () => {
    const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
    if (!fs.existsSync(index)) {
      throw new Error(
        `the built renderer is missing (${index}): run \`npm run build\` before these tests (npm test does)`,
      );
    }
    fs.mkdirSync(OUTPUT, { recursive: true });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-e2e-'));
    host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
    server = await startWebServer({ host, port: 0 });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (error) => pageErrors.push(error.message));
    // Record every change of a chart's point count with the page's clock, from before the first chart exists.
    // (Given as text: this file is type-checked without the DOM library. An init script is not subject to the page's
    // CSP; evaluating strings later would be, and is refused: no 'unsafe-eval'.)
    await page.addInitScript({
      content: `
        window.__chartUpdates = [];
        new MutationObserver((records) => {
          for (const r of records) {
            if (r.attributeName === 'data-points' && r.target.dataset.testid) {
              window.__chartUpdates.push({ name: r.target.dataset.testid, points: Number(r.target.dataset.points), at: Date.now() });
            }
          }
        }).observe(document, { attributes: true, attributeFilter: ['data-points'], subtree: true });
        // Every state the open search tree shows: which tree, how many expansions, whether it is still growing.
        window.__treeStates = [];
        new MutationObserver(() => {
          const el = document.querySelector('[data-testid="tree-view"]');
          if (!el) return;
          const state = { tree: el.dataset.tree, step: Number(el.dataset.step), nodes: Number(el.dataset.nodes), live: el.dataset.live === 'true' };
          const last = window.__treeStates[window.__treeStates.length - 1];
          if (!last || last.tree !== state.tree || last.nodes !== state.nodes || last.live !== state.live) window.__treeStates.push(state);
        }).observe(document, { attributes: true, childList: true, subtree: true });
      `,
    });
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await host?.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('shows what to do first when there are no runs', async () => {
    await page.goto(`${server.url}#/runs`);
    await page.getByTestId('runs-empty').waitFor();
    await expect(page.getByTestId('host-status').getAttribute('data-state')).resolves.toBe('open');
    expect(await page.getByTestId('runs-empty').textContent()).toContain('seqgrpo-copy');
    await shot('runs-empty');
    await page.goto(`${server.url}#/compare`);
    await page.getByTestId('compare-empty').waitFor();
    await shot('compare-empty');
  });

  it('launches seqgrpo-copy from the form with a shortened budget, and its chart receives points live', async () => {
    await page.goto(`${server.url}#/launch`);
    await page.getByTestId('launch-empty').waitFor();
    await shot('launch-empty');
    await page.getByTestId('preset-seqgrpo-copy').click();
    const steps = page.locator('#field-budget-steps');
    await steps.waitFor();
    // the form is filled from the preset file
    expect(await steps.inputValue()).toBe(
      String((loadPreset('seqgrpo-copy').config as { budget: { steps: number } }).budget.steps),
    );

    // Inline validation from the host: an impossible budget is named beside its field and blocks the start.
    await steps.fill('0');
    const error = page.locator('[data-path="budget.steps"] [data-testid="field-error"]');
    await error.waitFor();
    expect(await error.textContent()).toContain('must be ≥ 1');
    expect(await page.getByTestId('start-run').isDisabled()).toBe(true);
    await shot('launch-invalid');

    await steps.fill(String(STEPS));
    await error.waitFor({ state: 'detached' });
    await page.getByText('settings are valid').waitFor();
    await shot('launch');
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/run\//);
    const runId = decodeURIComponent(new URL(page.url()).hash.replace('#/run/', ''));

    const chart = page.getByTestId('chart-reward');
    await chart.waitFor();
    await expect.poll(() => chart.getAttribute('data-points'), { timeout: 100_000, interval: 200 }).toBe(String(STEPS));
    await page.locator('[data-testid="run-status"]', { hasText: 'finished' }).waitFor({ timeout: 30_000 });
    await shot('run');

    // Points arrived while the page was open, in several updates (pushed events), not all in the first load.
    const updates = (await page.evaluate(() => (globalThis as Record<string, unknown>)['__chartUpdates'])) as {
      name: string;
      points: number;
      at: number;
    }[];
    const reward = updates.filter((u) => u.name === 'chart-reward' && u.points > 0);
    expect(reward.length).toBeGreaterThan(1);
    for (let i = 1; i < reward.length; i++) expect(reward[i]!.points).toBeGreaterThan(reward[i - 1]!.points);
    expect(reward.at(-1)!.points).toBe(STEPS);

    // The benchmark figure: from a metrics line's time (written just before its append) to the chart drawing it.
    const lines = fs
      .readFileSync(path.join(home, 'runs', runId, 'metrics.jsonl'), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { step: number; time: number });
    const latencies = reward
      .map((u) => ({ u, line: lines.find((l) => l.step === u.points) }))
      .filter((x) => x.line && x.u.points > reward[0]!.points)
      .map((x) => x.u.at - x.line!.time * 1000)
      .sort((a, b) => a - b);
    const figure = {
      updates: latencies.length,
      medianMs: latencies[Math.floor(latencies.length / 2)] ?? null,
      p90Ms: latencies[Math.floor(latencies.length * 0.9)] ?? null,
      maxMs: latencies.at(-1) ?? null,
    };
    fs.writeFileSync(path.join(OUTPUT, 'append-to-chart-latency.json'), JSON.stringify(figure, null, 2) + '\n');
    console.log(
      `append→chart latency over ${figure.updates} live updates: median ${figure.medianMs} ms, p90 ${figure.p90Ms} ms, max ${figure.maxMs} ms`,
    );

    // Clone: the form comes back with this run's settings.
    await page.goto(`${server.url}#/launch?from=${encodeURIComponent(runId)}`);
    await page.locator('#field-budget-steps').waitFor();
    await expect
      .poll(() => page.locator('#field-budget-steps').inputValue(), { timeout: 20_000, interval: 200 })
      .toBe(String(STEPS));
    expect(await page.getByTestId('launch-form').textContent()).toContain(runId);
  });

  it('shows a run started from the command line without a reload', async () => {
    await page.goto(`${server.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const rowsBefore = await page.locator('[data-testid="runs-table"] tbody tr[data-run-id]').count();
    await page.evaluate(() => void ((globalThis as Record<string, unknown>)['__sameDocument'] = true));

    let runId: string | undefined;
    const cli = spawnCli(
      ['train', '--preset', 'seqgrpo-increment', '--steps', '5', '--home', home, '--json'],
      {},
      (line) => {
        const message = JSON.parse(line) as { runId?: string };
        runId ??= message.runId;
      },
    );
    expect(await cli.exited).toBe(0);
    expect(runId).toBeDefined();
    const row = page.locator(`tr[data-run-id="${runId}"]`);
    await row.waitFor();
    await row.locator('.badge', { hasText: 'finished' }).waitFor();
    expect(await page.locator('[data-testid="runs-table"] tbody tr[data-run-id]').count()).toBe(rowsBefore + 1);
    expect(await row.textContent()).toContain('seqgrpo-increment');
    expect(await page.evaluate(() => (globalThis as Record<string, unknown>)['__sameDocument'])).toBe(true);
    await shot('runs');
    expect(pageErrors).toEqual([]);
  });

  let marsRun = '';

  it('launches mars-tiny from the form (two small steps), sees its chart receive points, and opens an episode in the inspector', async () => {
    await page.goto(`${server.url}#/launch`);
    await page.getByTestId('preset-mars-tiny').click();
    await page.locator('#field-budget-steps').waitFor();
    await page.locator('#field-budget-steps').fill('2');
    await page.locator('#field-task-questionsPerStep').fill('2');
    await page.locator('#field-task-groupSize').fill('4');
    // Random initial weights: the test does not depend on a pretrained base being present.
    await page.locator('details[data-path="model"] > summary').click();
    await page.locator('#field-model-from').selectOption('random');
    await page.locator('details[data-path="eval"] > summary').click();
    await page.locator('#field-eval-every').fill('0');
    await page.locator('#field-eval-items').fill('7');
    await page.locator('details[data-path="checkpoint"] > summary').click();
    await page.locator('#field-checkpoint-every').fill('1');
    await page.getByText('settings are valid').waitFor();
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/run\//);
    marsRun = decodeURIComponent(new URL(page.url()).hash.replace('#/run/', ''));

    const chart = page.getByTestId('chart-reward');
    await chart.waitFor({ timeout: 60_000 });
    await expect.poll(() => chart.getAttribute('data-points'), { timeout: 150_000, interval: 250 }).toBe('2');
    const updates = (await page.evaluate(() => (globalThis as Record<string, unknown>)['__chartUpdates'])) as {
      name: string;
      points: number;
    }[];
    // the chart grew while the page was open (the last step's point came as a pushed event)
    expect(updates.filter((u) => u.name === 'chart-reward' && u.points === 2).length).toBeGreaterThan(0);
    await page.locator('[data-testid="run-status"]', { hasText: 'finished' }).waitFor({ timeout: 120_000 });
    await shot('mars-run');

    // The Episodes tab: the newest group, side by side; open the best rollout as a conversation.
    await page.getByTestId('tab-episodes').click();
    await page.getByTestId('episode-inspector').waitFor();
    expect(await page.getByTestId('group-item').count()).toBeGreaterThanOrEqual(2); // 2 questions a step (a repeat shares a group)
    expect((await page.getByTestId('group-card').count()) % 4).toBe(0); // G = 4
    await page.getByTestId('group-card').first().click();
    const episode = page.getByTestId('episode');
    await episode.waitFor();
    expect(await episode.getByTestId('turn').count()).toBeGreaterThan(0);
    expect(await episode.getByTestId('outcome').textContent()).toContain('gold');
    await shot('episodes');
    await page.getByTestId('token-mode-logprob').check();
    await page.getByTestId('token-strip').first().locator('.tok').first().hover();
    expect(await page.getByTestId('token-readout').first().textContent()).toContain('log-probability');
    await shot('episodes-tokens');
    expect(pageErrors).toEqual([]);
  });

  it('shows a MARTI run from the command line: its trees grow in the Tree tab node by node, its diversity in the Diversity tab', async () => {
    const config = {
      algorithm: 'marti',
      model: { size: 'tiny' },
      task: { trainTasks: 20 },
      marti: {
        configuration: 'heterogeneous',
        agents: [
          { id: 'alpha', rolePrompt: 'agent alpha :' },
          { id: 'beta', rolePrompt: 'agent beta :' },
        ],
        problemsPerStep: 2,
        nodesPerTree: 5,
        trainBatch: 4,
        evalNodes: 3,
        tplus: { enabled: false },
      },
      budget: { steps: 2 },
      eval: { every: 1, items: 3 },
      checkpoint: { every: 2, keep: 1 },
    };
    const file = path.join(home, 'marti-e2e.json');
    fs.writeFileSync(file, JSON.stringify(config));
    let runId: string | undefined;
    const opened = new Promise<void>((resolve) => {
      const cli = spawnCli(['train', '--config', file, '--home', home, '--json', '--backend', 'cpu'], {}, (line) => {
        const message = JSON.parse(line) as { runId?: string };
        if (!runId && message.runId) {
          runId = message.runId;
          resolve();
        }
      });
      void cli.exited.then((code) => expect(code).toBe(0));
    });
    await opened;
    await page.goto(`${server.url}#/run/${encodeURIComponent(runId!)}/tree`);
    await page.getByTestId('tree-tab').waitFor();
    // a tree of the step in flight, still growing
    await page.locator('[data-testid="tree-view"][data-live="true"]').waitFor({ timeout: 150_000 });
    await shot('tree-growing');
    // both steps' final trees arrive while the tab is open (2 problems per step)
    await expect
      .poll(() => page.locator('[data-testid="tree-item"][data-live="false"]').count(), {
        timeout: 150_000,
        interval: 500,
      })
      .toBe(4);
    await page.locator('[data-testid="run-status"]', { hasText: 'finished' }).waitFor({ timeout: 120_000 });
    expect(await page.getByTestId('tree-item').count()).toBe(4);
    await expect.poll(() => page.getByTestId('tree-view').getAttribute('data-live')).toBe('false');
    const nodes = page.locator('[data-testid="tree-node"]:not([data-root])');
    expect(await nodes.count()).toBe(5);

    // The followed tree grew while its step ran: the same tree with fewer nodes, then more, while still growing (before
    // the step's final record), then its final record with all 5 nodes.
    type TreeState = { tree: string; step: number; nodes: number; live: boolean };
    const states = (await page.evaluate(() => (globalThis as Record<string, unknown>)['__treeStates'])) as TreeState[];
    fs.writeFileSync(path.join(OUTPUT, 'tree-states.json'), JSON.stringify(states, null, 1) + '\n');
    const grown = [...new Set(states.map((x) => x.tree))].filter((tree) => {
      const mine = states.filter((x) => x.tree === tree);
      const finalAt = mine.findIndex((x) => !x.live);
      const growing = mine.slice(0, finalAt < 0 ? mine.length : finalAt).filter((x) => x.live);
      return (
        finalAt > 0 &&
        mine[finalAt]!.nodes === 5 &&
        growing.length >= 2 &&
        growing.some((x, i) => i > 0 && x.nodes > growing[0]!.nodes) &&
        mine.slice(finalAt).every((x) => !x.live)
      );
    });
    expect(grown.length, JSON.stringify(states)).toBeGreaterThan(0);
    for (const x of states.filter((y) => y.live)) expect(x.nodes).toBeLessThanOrEqual(5);
    await nodes.nth(1).click();
    await page.getByTestId('node-program').waitFor();
    expect(await page.getByTestId('node-prompt').textContent()).toContain('problem:');
    await shot('tree');

    await page.getByTestId('tab-diversity').click();
    await page.getByTestId('diversity-tab').waitFor();
    await expect.poll(() => page.getByTestId('diversity-chart').count(), { timeout: 20_000 }).toBeGreaterThan(0);
    // per-agent measures: one line per agent and the team's (which measures exist depends on what the untrained
    // agents wrote: distances need two parsed programs of one problem)
    const lines = await page
      .getByTestId('diversity-chart')
      .evaluateAll((els) => els.map((el) => Number(el.getAttribute('data-lines'))));
    expect(Math.max(...lines)).toBe(3);
    await page.getByTestId('solved-matrix').waitFor();
    expect(await page.locator('[data-testid="solved-matrix"] tbody tr').count()).toBeGreaterThan(0);
    await shot('diversity');
    expect(pageErrors).toEqual([]);
  });

  it('compares the mars-tiny run’s two checkpoints: metrics side by side, paired statistics, one item’s two outputs and episodes', async () => {
    expect(marsRun).not.toBe('');
    await page.goto(
      `${server.url}#/compare?a=${encodeURIComponent(`${marsRun}@1`)}&b=${encodeURIComponent(`${marsRun}@2`)}`,
    );
    await page.getByTestId('compare-view').waitFor();
    await expect.poll(() => page.getByTestId('step-B').inputValue(), { timeout: 20_000 }).toBe('2');
    expect(await page.getByTestId('step-A').inputValue()).toBe('1');
    await page.getByTestId('compare-run').click();
    await page.getByTestId('compare-result').waitFor({ timeout: 180_000 });
    expect(await page.locator('[data-testid="compare-metrics"] tbody tr').count()).toBeGreaterThan(0);
    expect(await page.getByTestId('mcnemar-p').textContent()).toMatch(/\d/);
    if ((await page.getByTestId('compare-item').count()) === 0) {
      await page.getByText('only flipped items').click();
    }
    await page.getByTestId('compare-item').first().click();
    await page.getByTestId('output-A').waitFor();
    await page.getByTestId('output-B').waitFor();
    // both checkpoints' whole episodes for that item, side by side, for the same question
    const itemId = await page.getByTestId('compare-item').first().locator('code').textContent();
    for (const col of ['A', 'B']) {
      const episode = page.locator(`[data-testid="output-${col}"] [data-testid="episode"]`);
      await episode.waitFor();
      expect(await episode.getAttribute('data-question')).toBe(itemId);
    }
    await shot('compare');
    expect(pageErrors).toEqual([]);
  });

  it("shows each run's held-out score in the Runs table by its algorithm's headline metric, with its label", async () => {
    await page.goto(`${server.url}#/runs`);
    await page.getByTestId('runs-table').waitFor();
    const rows = page.locator('[data-testid="runs-table"] tbody tr[data-run-id]');
    await expect.poll(() => rows.count(), { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
    const scoreOf = async (algorithm: string): Promise<string[]> =>
      rows
        .filter({ has: page.locator('td:nth-child(3)', { hasText: new RegExp(`^${algorithm}$`) }) })
        .getByTestId('held-out-score')
        .allTextContents();
    // These runs evaluated at their end: MARS logs eval.exactMatch, MARTI eval.pass1, seqgrpo eval.accuracy.
    for (const [algorithm, label] of [
      ['mars', 'exact match'],
      ['marti', 'pass@1'],
      ['seqgrpo', 'accuracy'],
    ] as const) {
      const cells = await scoreOf(algorithm);
      // (a run stopped before its first evaluation shows '–')
      expect(
        cells.some((cell) => new RegExp(`^\\s*\\d\\S*\\s+${label}\\s*$`).test(cell)),
        `${algorithm}: ${JSON.stringify(cells)}`,
      ).toBe(true);
    }
    await shot('runs-held-out');
    expect(pageErrors).toEqual([]);
  });
});
