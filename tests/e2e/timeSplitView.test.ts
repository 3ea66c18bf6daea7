/**
 * The run page shows where a step's time goes (issue 33, item 4) in a real headless Chromium (Debian's, via
 * playwright-core) against web mode: a real seqgrpo run trained by the CLI into a temporary home; its page draws the
 * mean split as a bar with a legend whose shares are `mars-lab show --json`'s (the page rebuilds the lines from the
 * series it was sent, the CLI from metrics.jsonl) and the per-step stacked chart, one band per part.
 * Needs the built renderer (`npm run build`). Screenshots go to tests/output/e2e/ (git-ignored).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser, type Page } from 'playwright-core';
import { haveChromium, launchChromium } from '../helpers/chromium';
import { cli } from '../helpers/cli';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { DEFAULT_RENDERER_DIR, startWebServer, type WebServer } from '../../engine/api/web/webServer';
import { TIME_PARTS, type MeanTimeSplit } from '../../engine/pure/timeSplit';

const OUTPUT = path.resolve('tests/output/e2e');

let home: string;
let runId: string;
let split: MeanTimeSplit;
let host: Host;
let server: WebServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

beforeAll(async () => {
  const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
  if (!fs.existsSync(index)) {
    throw new Error(`the built renderer is missing (${index}): run \`npm run build\` before these tests`);
  }
  fs.mkdirSync(OUTPUT, { recursive: true });
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-time-split-e2e-'));
  const trained = await cli(
    ['train', '--preset', 'seqgrpo-copy', '--home', home].concat([
      '--set',
      'budget.steps=12',
      '--set',
      'checkpoint.every=3',
      '--set',
      'eval.every=6',
    ]),
  );
  expect(trained.code, trained.stderr).toBe(0);
  runId = fs.readdirSync(path.join(home, 'runs'))[0]!;
  split = (JSON.parse((await cli(['show', runId, '--json', '--home', home])).stdout) as { timeSplit: MeanTimeSplit })
    .timeSplit;
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  server = await startWebServer({ host, port: 0 });
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 1440, height: 1000 } });
  page.on('pageerror', (error) => pageErrors.push(error.message));
}, 120_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await host?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)("a run's time split on its page", () => {
  it('shows the mean split as show computes it, and the stacked chart of every step', async () => {
    await page.goto(`${server.url}#/run/${runId}`);
    const block = page.getByTestId('time-split');
    await block.waitFor();
    expect(await block.textContent()).toContain('mean of 12 steps');
    const parts = TIME_PARTS.filter((p) => split.meanMs[p] > 0);
    expect(parts).toEqual(expect.arrayContaining(['sampling', 'update', 'evaluation', 'checkpoint']));
    for (const p of parts) {
      const text = await page.getByTestId(`time-part-${p}`).textContent();
      expect(text).toContain(`${(100 * split.share[p]).toFixed(1)}%`);
    }
    expect(await page.getByTestId('time-tokens-per-sec').textContent()).toContain(split.tokensPerSec!.toFixed(0));
    const chart = page.getByTestId('time-split-chart');
    await expect.poll(() => chart.getAttribute('data-lines')).toBe(String(parts.length));
    expect(await chart.getAttribute('data-bands')).toBe(String(parts.length));
    await block.screenshot({ path: path.join(OUTPUT, 'time-split.png') });
    expect(pageErrors).toEqual([]);
  });
});
