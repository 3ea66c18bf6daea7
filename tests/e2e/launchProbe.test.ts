/**
 * Launch's "Measure time per step" (issue 33, item 3) in a real headless Chromium (Debian's, via playwright-core)
 * against web mode, with the real SmolLM2-135M-Instruct (skips without it unless MARS_LAB_EXPECT_MODELS=1): for the
 * preset chatgrpo-addition the button sits beside the memory gauge, shows the worker's progress while it measures, then
 * the estimate (sampling + update seconds a step) with what it was measured on and the sentence that it is an
 * extrapolation; an edited setting marks the figure as measured for earlier settings; a second measurement can be
 * cancelled, which brings the button back without an error; settings with a problem disable it. A seqgrpo preset offers no
 * probe. Needs the built renderer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/chromium';
import { openWebUi, type WebUi } from '../helpers/webUi';
import { realModelOrSkipReason } from '../fixtures/gguf/ggufKit';

let home: string;
let ui: WebUi;
const { path: MODEL } = realModelOrSkipReason();

beforeAll(async () => {
  if (!haveChromium) return;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-probe-e2e-'));
  ui = await openWebUi(home);
}, 60_000);

afterAll(async () => {
  await ui?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)('the Launch form’s time probe', () => {
  it.skipIf(!MODEL)(
    'measures chatgrpo-addition and shows the estimate and its basis',
    { timeout: 240_000 },
    async () => {
      const { page, server, pageErrors } = ui;
      await page.goto(`${server.url}#/launch?preset=chatgrpo-addition`);
      await page.getByTestId('memory-plan').waitFor();
      await page.getByTestId('step-probe-measure').click();
      await expect.poll(() => page.getByTestId('step-probe-progress').textContent()).toMatch(/measuring: \w/);
      const estimate = page.getByTestId('step-probe-estimate');
      await estimate.waitFor({ timeout: 200_000 });
      expect(await estimate.textContent()).toMatch(
        /≈ \d+(\.\d)? s a step\s*\(sampling \d+(\.\d)? s \+ update \d+(\.\d)? s\)/,
      );
      const basis = ((await page.getByTestId('step-probe-basis').textContent()) ?? '').replace(/\s+/g, ' ');
      expect(basis).toMatch(/Measured on (wasm|cpu|tensorflow|webgpu), .+ kernel, \d+ threads?: 16 rows sampled/);
      expect(basis).toMatch(/extrapolation/);
      expect(await page.getByTestId('step-probe-error').count()).toBe(0);
      fs.mkdirSync('tests/output', { recursive: true });
      await page.getByTestId('launch-form').screenshot({ path: 'tests/output/launch-probe.png' });

      // an edited setting: the figure was measured for the earlier ones
      await page.getByLabel('Group size (G)').fill('12');
      await expect.poll(() => estimate.textContent()).toMatch(/measured for earlier settings/);

      // a second measurement, cancelled
      await page.getByTestId('step-probe-measure').click();
      await page.getByTestId('step-probe-cancel').click();
      await page.getByTestId('step-probe-measure').waitFor();
      expect(await page.getByTestId('step-probe-error').count()).toBe(0);

      // settings with a problem: nothing to measure until it is fixed
      await page.getByLabel('Group size (G)').fill('1');
      await expect.poll(() => page.getByTestId('step-probe-measure').isDisabled()).toBe(true);
      await page.getByLabel('Group size (G)').fill('8');
      await expect.poll(() => page.getByTestId('step-probe-measure').isDisabled()).toBe(false);
      expect(pageErrors).toEqual([]);
    },
  );

  it('offers no probe for a run of mars-lab’s own models', async () => {
    const { page, server } = ui;
    await page.goto(`${server.url}#/launch?preset=seqgrpo-copy`);
    await page.getByTestId('launch-form').waitFor();
    expect(await page.getByTestId('step-probe').count()).toBe(0);
  });
});
