/**
 * How the Replies tab draws a real model's text (issue 33, item 5) in a real headless Chromium against web mode: a
 * seqgrpo run trained by the CLI into a temporary home, with one group appended to its trajectories.jsonl whose replies
 * are what a chat model writes (a ```python block ended by its template's `<|im_end|>`, a long reply). Special tokens
 * are hidden by default (and counted) and shown, where they stood, when "special tokens" is ticked; fenced Python is
 * highlighted; a long reply is folded to its first lines until opened.
 * Needs the built renderer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/chromium';
import { cli } from '../helpers/cli';
import { openWebUi, type WebUi } from '../helpers/webUi';

const PROMPT = 'Write a Python function that doubles x.';
const PYTHON_REPLY =
  'Sure:\n```python\ndef double(x):\n    # twice x\n    return 2 * x\n```<|im_end|>\n<|im_start|>assistant\n';
const LONG_REPLY = Array.from({ length: 30 }, (_, i) => `line ${i + 1} of a long answer`).join('\n');
let home: string;
let ui: WebUi;
let runId = '';

beforeAll(async () => {
  if (!haveChromium) return;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-replies-text-'));
  const r = await cli(['train', '--preset', 'seqgrpo-copy', '--steps', '2', '--set', 'eval.every=0', '--home', home]);
  if (r.code !== 0) throw new Error(`train: ${r.stderr}`);
  runId = fs.readdirSync(path.join(home, 'runs'))[0]!;
  const group = {
    kind: 'seqgrpo.group',
    version: 1,
    step: 2,
    input: PROMPT,
    target: 'def double(x): return 2 * x',
    rollouts: [
      { output: PYTHON_REPLY, reward: 1, advantage: 1, logProbs: [-0.1, -0.2] },
      { output: LONG_REPLY, reward: 0, advantage: -1, logProbs: [-0.3] },
    ],
  };
  fs.appendFileSync(path.join(home, 'runs', runId, 'trajectories.jsonl'), JSON.stringify(group) + '\n');
  ui = await openWebUi(home);
}, 300_000);

afterAll(async () => {
  await ui?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)("the Replies tab draws a chat model's text", () => {
  it('hides special tokens by default and shows them on demand; highlights fenced Python', async () => {
    const { page, server } = ui;
    await page.goto(`${server.url}#/run/${runId}/replies`);
    const group = page.getByTestId('reply-group').filter({ hasText: PROMPT });
    await group.waitFor();
    const python = group.getByTestId('reply').first();
    expect(await page.getByTestId('show-special-tokens').isChecked()).toBe(false);
    expect(await python.getByTestId('special-token').count()).toBe(0);
    expect(await python.getByTestId('reply-text').textContent()).not.toContain('<|im_end|>');
    expect(await python.textContent()).toContain('2 special tokens hidden');

    const code = python.getByTestId('reply-code');
    expect(await code.getAttribute('data-lang')).toBe('python');
    expect(await code.locator('.hljs-keyword').allTextContents()).toEqual(['def', 'return']);
    expect(await code.locator('.hljs-comment').allTextContents()).toEqual(['# twice x']);
    expect(await code.locator('.hljs-number').allTextContents()).toEqual(['2']);

    await page.getByTestId('show-special-tokens').check();
    await expect
      .poll(() => python.getByTestId('special-token').allTextContents())
      .toEqual(['<|im_end|>', '<|im_start|>']);
    expect(await python.textContent()).not.toContain('hidden');
    // the Python block is still drawn, before the token that ended the turn
    expect(await python.getByTestId('reply-code').locator('.hljs-keyword').count()).toBe(2);
    await page.getByTestId('show-special-tokens').uncheck();
    await expect.poll(() => python.getByTestId('special-token').count()).toBe(0);
    expect(ui.pageErrors).toEqual([]);
  });

  it('folds a long reply to its first lines until opened', async () => {
    const { page } = ui;
    const long = page.getByTestId('reply-group').filter({ hasText: PROMPT }).getByTestId('reply').nth(1);
    expect(await long.getAttribute('data-folded')).toBe('true');
    const folded = (await long.getByTestId('reply-text').textContent())!;
    expect(folded).toContain('line 12 of a long answer');
    expect(folded).not.toContain('line 13 ');
    await long.getByTestId('reply-unfold').click();
    await expect.poll(() => long.getAttribute('data-folded')).toBe('false');
    expect(await long.getByTestId('reply-text').textContent()).toBe(LONG_REPLY);
    await long.getByTestId('reply-fold').click();
    await expect.poll(() => long.getAttribute('data-folded')).toBe('true');
    expect(ui.pageErrors).toEqual([]);
  });
});
