/**
 * The app's Ray cluster parts in a real headless Chromium (Debian's, through playwright-core) against web mode on a
 * temporary home (issue 18): the launch form's "where" choice (a Ray cluster's fields, the study's size from variants ×
 * seeds, a bad seed list refused beside the button, and a launch at a cluster that is not there refused in one line,
 * nothing recorded); the Runs view's cluster jobs for a study whose cluster is unreachable (a closed loopback port):
 * the state "cluster unreachable — nothing lost; retry", the runs as the record keeps them, and Retry; and, when the
 * project's Ray is installed (tests/ray/rayHead.ts, MARS_LAB_EXPECT_RAY as there), a study submitted from the form to a
 * real single-node Ray head, its jobs' status and live log in the Runs view, and its runs in the table through the
 * shared home.
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
import { listStudyIds, writeStudy } from '../../engine/cluster/studies/studyRecord';
import { planStudy, PROJECT_DIR } from '../../engine/cluster/studies/studyPlan';
import { expectRay, freePorts, rayMissing, startRayHead, type RayHead } from '../ray/rayHead';

const OUTPUT = path.resolve('tests/output/e2e');
const rayGone = rayMissing();

if (!haveChromium) {
  console.warn(
    `tests/e2e/clusterUi.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`,
  );
}

let home: string;
let host: Host;
let server: WebServer;
let browser: Browser;
let page: Page;
const pageErrors: string[] = [];

describe.skipIf(!haveChromium)('Ray cluster in the app (web mode, a browser)', () => {
  beforeAll(async () => {
    const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
    if (!fs.existsSync(index)) {
      throw new Error(`the built renderer is missing (${index}): run \`npm run build\` before these tests`);
    }
    fs.mkdirSync(OUTPUT, { recursive: true });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-e2e-ray-'));
    host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
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

  it('the launch form offers a Ray cluster, sizes the study, and refuses an unreachable one in one line, recording nothing', async () => {
    const [closed] = await freePorts(1);
    await page.goto(`${server.url}#/launch?preset=mars-ablations`);
    await page.getByTestId('launch-form').waitFor();
    const where = page.getByTestId('launch-where');
    expect(await page.getByTestId('where-here').isChecked()).toBe(true);
    expect(await page.getByTestId('ray-url').count()).toBe(0);
    await page.getByTestId('where-ray').check();
    await page.getByTestId('ray-url').fill(`http://127.0.0.1:${closed}`);
    await page.getByTestId('study-seeds').fill('3');
    // the preset's variants come from the host; two picked × 3 seeds
    const variants = page.getByTestId('study-variants').locator('input[type=checkbox]');
    await variants.first().waitFor();
    expect(await variants.count()).toBeGreaterThanOrEqual(2);
    await variants.nth(0).check();
    await variants.nth(1).check();
    await expect.poll(() => page.getByTestId('study-size').textContent()).toBe('6 runs, each a Ray job');
    expect(await page.getByTestId('start-run').textContent()).toContain('Submit to the cluster');
    // a seed list that is not one: said beside the button, which is disabled
    await page.getByTestId('study-seeds').fill('1,x');
    expect(await page.getByTestId('where-problem').textContent()).toMatch(/^seeds: a count/);
    expect(await page.getByTestId('start-run').isDisabled()).toBe(true);
    await page.getByTestId('study-seeds').fill('0,4');
    await page.getByTestId('start-run').click();
    const alert = page.locator('[data-testid="launch-form"] .actions .error[role="alert"]');
    await alert.waitFor();
    expect(await alert.textContent()).toMatch(
      new RegExp(`^Ray cluster at http://127\\.0\\.0\\.1:${closed} is unreachable \\(ECONNREFUSED`),
    );
    expect((await alert.textContent())!.split('\n')).toHaveLength(1);
    expect(listStudyIds(home)).toEqual([]);
    expect(page.url()).toContain('#/launch'); // stayed on the form
    await where.screenshot({ path: path.join(OUTPUT, 'cluster-where.png') });
  });

  it("shows a study whose cluster is unreachable: 'nothing lost; retry', the runs as recorded, and Retry", async () => {
    const [closed] = await freePorts(1);
    const url = `http://127.0.0.1:${closed}`;
    const record = planStudy({
      preset: 'seqgrpo-copy',
      variants: [null],
      seeds: [0, 1],
      sets: ['budget.steps=40'],
      where: { kind: 'ray', url, rayHome: home, project: PROJECT_DIR, node: 'node', cpusPerJob: 1 },
    });
    record.runs[0]!.state = 'finished';
    record.runs[0]!.jobStatus = 'SUCCEEDED';
    record.runs[1]!.state = 'unknown';
    record.runs[1]!.jobStatus = 'RUNNING';
    record.runs[1]!.step = 12;
    record.runs[1]!.totalSteps = 40;
    writeStudy(home, record);
    await page.goto(`${server.url}#/runs`);
    const study = page.locator(`[data-testid="cluster-study"][data-study="${record.id}"]`);
    await study.waitFor();
    // opening the view re-attaches from the record; the cluster is not there
    await expect.poll(() => study.getAttribute('data-link'), { timeout: 20_000 }).toBe('unreachable');
    const state = study.getByTestId('cluster-unreachable');
    expect(await state.textContent()).toMatch(
      /^cluster unreachable — nothing lost; retry\. Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable/,
    );
    const rows = study.getByTestId('cluster-run');
    expect(await rows.count()).toBe(2);
    expect(await rows.nth(0).getAttribute('data-state')).toBe('finished');
    expect(await rows.nth(1).getAttribute('data-state')).toBe('unknown');
    expect(await rows.nth(1).textContent()).toContain('12/40');
    expect(await study.getByTestId('cluster-stop').count()).toBe(0); // nothing to stop while it cannot be reached
    await study.getByTestId('cluster-retry').click();
    await expect.poll(() => study.getAttribute('data-link')).toBe('unreachable');
    expect(await study.getByTestId('cluster-unreachable').isVisible()).toBe(true);
    await study.screenshot({ path: path.join(OUTPUT, 'cluster-unreachable.png') });
  });

  describe.runIf(expectRay || !rayGone)('with a real Ray head', () => {
    let head: RayHead;
    beforeAll(async () => {
      if (rayGone) throw new Error(`MARS_LAB_EXPECT_RAY=1 but ${rayGone}`);
      head = await startRayHead();
    }, 120_000);
    afterAll(async () => {
      await head?.stop();
    }, 60_000);

    it('submits a study from the form; the Runs view shows its jobs, a live log, and its runs through the shared home', async () => {
      await page.goto(`${server.url}#/launch?preset=seqgrpo-copy`);
      await page.getByTestId('launch-form').waitFor();
      const steps = page.locator('[data-path="budget.steps"] input').first();
      await steps.fill('6');
      await page.getByTestId('where-ray').check();
      await page.getByTestId('ray-url').fill(head.url);
      await page.getByTestId('study-seeds').fill('2');
      await expect.poll(() => page.getByTestId('start-run').isDisabled()).toBe(false);
      await page.getByTestId('start-run').click();
      await page.waitForURL(/#\/runs/);
      const [id] = listStudyIds(home).filter(
        (s) =>
          s.includes('seqgrpo-copy') &&
          fs.readFileSync(path.join(home, 'studies', `${s}.json`), 'utf8').includes(head.url),
      );
      expect(id).toBeDefined();
      const study = page.locator(`[data-testid="cluster-study"][data-study="${id}"]`);
      await study.waitFor();
      await study.getByTestId('cluster-log-toggle').first().click();
      const log = study.getByTestId('cluster-log');
      await expect.poll(() => log.textContent(), { timeout: 120_000 }).toContain('"type":"progress"');
      await expect.poll(() => study.getAttribute('data-link'), { timeout: 150_000 }).toBe('idle');
      const rows = study.getByTestId('cluster-run');
      for (let i = 0; i < 2; i++) {
        expect(await rows.nth(i).getAttribute('data-state')).toBe('finished');
        expect(await rows.nth(i).textContent()).toContain('(SUCCEEDED)');
        expect(await rows.nth(i).textContent()).toContain('6/6');
      }
      expect(await log.textContent()).toContain('"type":"done"');
      // the runs in the shared home: rows of the runs table, as local runs are
      const runId = await rows.nth(0).getAttribute('data-run');
      await expect
        .poll(() => page.locator(`[data-testid="runs-view"] table a[href="#/run/${runId}"]`).count())
        .toBeGreaterThan(0);
      await study.screenshot({ path: path.join(OUTPUT, 'cluster-jobs.png') });
    }, 240_000);
  });

  it('raised no page errors', () => {
    expect(pageErrors).toEqual([]);
  });
});
