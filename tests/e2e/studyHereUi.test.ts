/**
 * Issue 18's two app parts that need no Ray, in a real headless Chromium against web mode on a temporary home:
 * - the launch form's "this machine" with two seeds starts a study here (its runs processes of the host, shown in the
 *   Runs view's studies as running here, then finished), where one seed starts one run as before;
 * - Compare with only imported runs (verl rollout dumps generated to verl's format, imported) says they have no
 *   checkpoints and leads to the logged-rollouts mode, which pairs two of them by prompt.
 *
 * Needs the built renderer (`npm run build`). Screenshots go to tests/output/e2e/ (git-ignored).
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
import { importVerl } from '../../engine/interop/import/verl';
import { listStudyIds, readStudy } from '../../engine/cluster/studies/studyRecord';
import { chatPrompt, PyFloat, writeVerlStep } from '../unit/interop/trainerFormats';

const OUTPUT = path.resolve('tests/output/e2e');

if (!haveChromium) {
  console.warn(
    `tests/e2e/studyHereUi.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`,
  );
}

let home: string;
let host: Host;
let server: WebServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

describe.skipIf(!haveChromium)('a study here and imported runs compared (web mode, a browser)', () => {
  beforeAll(async () => {
    const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
    if (!fs.existsSync(index)) {
      throw new Error(`the built renderer is missing (${index}): run \`npm run build\` before these tests`);
    }
    fs.mkdirSync(OUTPUT, { recursive: true });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-e2e-here-'));
    host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web', maxWorkers: 2 });
    server = await startWebServer({ host, port: 0 });
    browser = await launchChromium();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('pageerror', (error) => pageErrors.push(error.message));
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    await host?.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('compares two imported verl runs on their shared prompts, from Compare’s note that they have no checkpoints', async () => {
    const dumps = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-e2e-verl-'));
    try {
      const q = ['What is 6 × 7?', 'What is 2 + 3?', 'What is 10 − 4?'].map(chatPrompt);
      const sample = (p: number, score: number) => ({
        input: q[p]!,
        output: `#### ${score}`,
        gts: '1',
        score: new PyFloat(score),
      });
      writeVerlStep(path.join(dumps, 'a'), 1, [sample(0, 1), sample(1, 0), sample(2, 0)]);
      writeVerlStep(path.join(dumps, 'b'), 1, [sample(0, 1), sample(1, 1), sample(2, 1)]);
      await importVerl({ home, dir: path.join(dumps, 'a'), id: 'verl-a' });
      await importVerl({ home, dir: path.join(dumps, 'b'), id: 'verl-b' });
    } finally {
      fs.rmSync(dumps, { recursive: true, force: true });
    }
    await page.goto(`${server.url}#/compare`);
    const only = page.getByTestId('compare-imported-only');
    await only.waitFor();
    expect(await only.textContent()).toMatch(/2 runs were imported from another trainer \(verl\)/);
    await only.getByRole('link', { name: 'compare logged rollouts' }).click();
    await page.getByTestId('rollout-pick').waitFor();
    await page.getByTestId('rollout-run-A').selectOption('verl-a');
    await page.getByTestId('rollout-run-B').selectOption('verl-b');
    await page.getByTestId('rollout-compare-run').click();
    const result = page.getByTestId('rollout-result');
    await result.waitFor();
    // 3 shared prompts, 0/1 each: A 1 0 0, B 1 1 1 → two flipped to right
    expect(await page.getByTestId('rollout-diff').textContent()).toBe('+0.667');
    expect(await page.getByTestId('rollout-mcnemar').textContent()).toBe('0.500');
    expect(await page.getByTestId('rollout-prompt').count()).toBe(3);
    expect(page.url()).toContain('mode=rollouts');
    expect(page.url()).toContain('ra=verl-a');
    await page.screenshot({ path: path.join(OUTPUT, 'compare-rollouts.png'), fullPage: true });
    expect(pageErrors).toEqual([]);
  });

  it('starts a study of two seeds on this machine from the launch form, and shows it in Runs until it ends', async () => {
    await page.goto(`${server.url}#/launch?preset=seqgrpo-copy`);
    await page.getByTestId('launch-form').waitFor();
    expect(await page.getByTestId('where-here').isChecked()).toBe(true);
    expect(await page.getByTestId('study-size').textContent()).toBe('One run, with the seed in the settings above');
    expect(await page.getByTestId('start-run').textContent()).toContain('Start run');
    const steps = page.locator('[data-path="budget.steps"] input').first();
    await steps.fill('3');
    await page.getByTestId('study-seeds').fill('2');
    await expect.poll(() => page.getByTestId('study-size').textContent()).toMatch(/^2 runs here, each its own process/);
    expect(await page.getByTestId('start-run').textContent()).toContain('Start the study');
    await expect.poll(() => page.getByTestId('start-run').isDisabled()).toBe(false);
    await page.getByTestId('start-run').click();
    await page.waitForURL(/#\/runs/);
    const study = page.getByTestId('cluster-study').first();
    await study.waitFor();
    expect(await study.textContent()).toContain('this machine');
    await expect
      .poll(
        () => study.getByTestId('cluster-run').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-state'))),
        {
          timeout: 120_000,
        },
      )
      .toEqual(['finished', 'finished']);
    await expect.poll(() => study.getByTestId('cluster-link').textContent()).toMatch(/ended/);
    const [id] = listStudyIds(home);
    const record = readStudy(home, id!);
    expect(record.where.kind).toBe('local');
    expect(record.seeds).toEqual([0, 1]);
    expect(record.sets).toContain('budget.steps=3');
    for (const run of record.runs) {
      const meta = JSON.parse(fs.readFileSync(path.join(home, 'runs', run.runId, 'run.json'), 'utf8'));
      expect(meta).toMatchObject({ status: 'finished', seed: run.seed });
    }
    await study.screenshot({ path: path.join(OUTPUT, 'study-here.png') });
    expect(pageErrors).toEqual([]);
  });
});
