/**
 * The Models view (issue 33, item 1) in a real headless Chromium (Debian's, via playwright-core) against web mode: the
 * list shows the catalogue's models and the shipped bases; a base's card shows model info's facts and three memory
 * gauges; a path outside the allowed folders is refused in one line, a model folder inside the home is added and its
 * card opened; a catalogue model in the cache opens its card (licence, template), and a shape no machine here holds
 * turns its full-training gauge to "does not fit"; one not in the cache offers Fetch. The chat playground (item 2)
 * streams SmolLM2's answer with its tokens per second, Stop ends a long one, and a model without a chat template
 * offers no playground. Needs the built renderer.
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
let server: WebUi['server'];
let page: WebUi['page'];
let pageErrors: string[];
const { path: MODEL } = realModelOrSkipReason();

beforeAll(async () => {
  if (!haveChromium) return;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-models-e2e-'));
  ui = await openWebUi(home);
  ({ server, page, pageErrors } = ui);
}, 60_000);

afterAll(async () => {
  await ui?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)('the Models view', () => {
  it("lists the models and shows a base's card with its memory gauges", async () => {
    await page.goto(`${server.url}#/models`);
    await page.getByTestId('model-entry').first().waitFor();
    const ids = await page.getByTestId('model-entry').evaluateAll((els) => els.map((e) => e.getAttribute('data-id')));
    expect(ids).toEqual(expect.arrayContaining(['fetch:smollm2-135m-instruct', 'base:marti/base-tiny']));
    await page.locator('[data-id="base:marti/base-tiny"]').click();
    await page.getByTestId('card-memory').waitFor();
    expect(await page.getByTestId('card-architecture').textContent()).toBe('LlamaForCausalLM');
    expect(await page.getByTestId('card-parameters').textContent()).toBe('417,920');
    const rows = page.getByTestId('card-memory').locator('tr');
    expect(await rows.count()).toBe(3);
    expect(await page.getByTestId('card-memory').textContent()).not.toContain('does not fit');
  });

  it('refuses a path outside the allowed folders in one line, and adds a model folder inside the home', async () => {
    const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-models-outside-'));
    try {
      fs.cpSync(path.resolve('resources/mars/base-tiny'), path.join(outside, 'm'), { recursive: true });
      await page.getByTestId('model-path').fill(path.join(outside, 'm'));
      await page.getByRole('button', { name: 'Add' }).click();
      const error = page.getByTestId('add-error');
      await error.waitFor();
      expect(await error.textContent()).toMatch(/outside the folders a window may use/);
      expect((await error.textContent())!.split('\n')).toHaveLength(1);
    } finally {
      fs.rmSync(outside, { recursive: true, force: true });
    }
    const inside = path.join(home, 'models', 'mine');
    fs.cpSync(path.resolve('resources/mars/base-tiny'), inside, { recursive: true });
    await page.getByTestId('model-path').fill(inside);
    await page.getByRole('button', { name: 'Add' }).click();
    const added = page.locator(`[data-id="path:${fs.realpathSync(inside)}"]`);
    await added.waitFor();
    expect(await added.getAttribute('aria-selected')).toBe('true');
    await expect.poll(() => page.getByTestId('model-card').textContent()).toContain(fs.realpathSync(inside));
  });

  it("shows the fetched SmolLM2's card, or offers to fetch it", async () => {
    const entry = page.locator('[data-id="fetch:smollm2-135m-instruct"]');
    if (!MODEL) {
      expect(await entry.getByTestId('fetch-model').textContent()).toMatch(/Fetch \(98\.4 MB\)/);
      return;
    }
    await entry.click();
    await expect.poll(() => page.getByTestId('card-license').textContent()).toBe('apache-2.0');
    expect(await page.getByTestId('card-architecture').textContent()).toBe('llama');
    expect(await page.getByTestId('model-card').textContent()).toMatch(/roles system, user, assistant/);
    // a shape no machine here holds: full training's gauge turns red
    await page.getByLabel('Rows').fill('4096');
    await page.getByLabel('Tokens a row').fill('8192');
    await page.getByRole('button', { name: 'Recompute' }).click();
    const full = page.getByTestId('card-memory').locator('tr', { hasText: 'Train every weight' });
    await expect.poll(() => full.textContent()).toContain('does not fit');
    expect(await full.locator('.gauge > span.over').count()).toBe(1);
    expect(pageErrors).toEqual([]);
  });

  it.skipIf(!MODEL)(
    'chats with SmolLM2 in the playground: a streamed answer with its speed, and Stop',
    async () => {
      await page.locator('[data-id="fetch:smollm2-135m-instruct"]').click();
      const playground = page.getByTestId('chat-playground');
      await playground.waitFor();
      await page.getByLabel('Temperature').fill('0');
      await page.getByTestId('chat-max-tokens').fill('24');
      await page.getByTestId('chat-input').fill('What is the capital of France?');
      await page.getByTestId('chat-send').click();
      const status = page.getByTestId('chat-status');
      await expect.poll(() => status.textContent(), { timeout: 120_000 }).toMatch(/tokens\/s/);
      const answer = page.locator('[data-testid="chat-turn"][data-role="assistant"]').last();
      expect(await answer.textContent()).toMatch(/Paris/);

      await page.getByTestId('chat-max-tokens').fill('4000');
      await page.getByLabel('Temperature').fill('1');
      await page.getByTestId('chat-input').fill('Write a very long story about a lighthouse keeper.');
      await page.getByTestId('chat-send').click();
      await expect.poll(() => status.textContent(), { timeout: 60_000 }).toMatch(/^\d+ tokens…$/);
      await page.getByTestId('chat-stop').click();
      await expect.poll(() => status.textContent(), { timeout: 5_000 }).toMatch(/stopped/);
      expect(await page.getByTestId('chat-turn').count()).toBe(4);
      expect(pageErrors).toEqual([]);
    },
    180_000,
  );

  it('says a model without a chat template cannot chat', async () => {
    await page.locator('[data-id="base:marti/base-tiny"]').click();
    await expect.poll(() => page.getByTestId('model-card').textContent()).toContain('No chat template');
    expect(await page.getByTestId('chat-playground').count()).toBe(0);
  });

  it.skipIf(!MODEL)("shows a real-model launch's memory plan as a gauge against this machine", async () => {
    await page.goto(`${server.url}#/launch?preset=chatgrpo-addition`);
    const plan = page.getByTestId('memory-plan');
    await plan.waitFor();
    expect(await plan.getAttribute('data-fits')).toBe('true');
    expect(await plan.textContent()).toMatch(/memory a step ≈ [\d.]+ [MG]B of [\d.]+ GB/);
  });
});
