/**
 * The Replies tab on a real chatgrpo run (issue 33, item 5) in a real headless Chromium against web mode: one step of
 * the chatgrpo-addition preset on the fetched SmolLM2-135M-Instruct, trained by the CLI into a temporary home. Its
 * replies are recorded decoded without special tokens (what is scored) and as the model wrote them (`raw`): by
 * default a reply that stopped on the template's end-of-turn token shows no marker and says one is hidden; with
 * "special tokens" ticked the `<|im_end|>` it stopped on is drawn at its end. Skips without the model unless
 * MARS_LAB_EXPECT_MODELS=1. Needs the built renderer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/chromium';
import { cli } from '../helpers/cli';
import { openWebUi, type WebUi } from '../helpers/webUi';
import { realModelOrSkipReason } from '../fixtures/gguf/ggufKit';

const { path: MODEL, reason } = realModelOrSkipReason();
let home: string;
let ui: WebUi;
let runId = '';

beforeAll(async () => {
  if (!haveChromium || !MODEL) return;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-replies-chatgrpo-'));
  const r = await cli([
    'train',
    '--preset',
    'chatgrpo-addition',
    '--steps',
    '1',
    '--set',
    `model.path=${MODEL}`,
    '--set',
    'eval.every=0',
    '--home',
    home,
  ]);
  if (r.code !== 0) throw new Error(`train: ${r.stderr}`);
  runId = fs.readdirSync(path.join(home, 'runs'))[0]!;
  ui = await openWebUi(home);
}, 600_000);

afterAll(async () => {
  await ui?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe.skipIf(!haveChromium || !MODEL)(`the Replies tab on a real chatgrpo run ${reason}`, () => {
  it('shows the end-of-turn token a reply stopped on only when special tokens are ticked', async () => {
    const { page, server } = ui;
    await page.goto(`${server.url}#/run/${runId}/replies`);
    await page.getByTestId('reply-group').first().waitFor();
    expect(await page.getByTestId('reply').count()).toBe(16); // 2 questions × 8 replies
    // "Answer with the number only" within 16 tokens: most replies end their turn; those say so.
    const texts = await page.getByTestId('reply').allTextContents();
    const at = texts.findIndex((t) => t.includes('1 special token hidden'));
    expect(at, texts.join('\n')).toBeGreaterThanOrEqual(0);
    const reply = page.getByTestId('reply').nth(at);
    expect(await reply.getByTestId('special-token').count()).toBe(0);
    expect(await reply.getByTestId('reply-text').textContent()).not.toContain('<|im_end|>');

    await page.getByTestId('show-special-tokens').check();
    await expect.poll(() => reply.getByTestId('special-token').allTextContents()).toEqual(['<|im_end|>']);
    expect(await reply.getByTestId('reply-text').textContent()).toMatch(/<\|im_end\|>$/);
    expect(await reply.textContent()).not.toContain('hidden');
    await page.getByTestId('show-special-tokens').uncheck();
    await expect.poll(() => reply.getByTestId('special-token').count()).toBe(0);
    expect(ui.pageErrors).toEqual([]);
  });
});
