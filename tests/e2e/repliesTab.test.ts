/**
 * The Replies tab of seqgrpo and chatgrpo runs (issue 33, item 5) in a real headless Chromium against web mode: a real
 * seqgrpo run and (with the real model fetched) a one-step chatgrpo run trained by the CLI into a temporary home. The
 * tab shows each step's groups with the prompt, the target and the replies sorted by reward, as trajectories.jsonl
 * holds them; `?step=N` shows that step alone; a group whose replies all scored alike is marked as giving no signal.
 * Needs the built renderer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium } from '../helpers/chromium';
import { openWebUi, type WebUi } from '../helpers/webUi';
import { cli } from '../helpers/cli';
import { realModelOrSkipReason } from '../fixtures/gguf/ggufKit';

const { path: MODEL } = realModelOrSkipReason();
let home: string;
let ui: WebUi;
let server: WebUi['server'];
let page: WebUi['page'];
let pageErrors: string[];
const runs = { seq: '', chat: '' };

interface Group {
  step: number;
  input: string;
  target: string;
  rollouts: { output: string; reward: number }[];
}
const groupsOf = (runId: string): Group[] =>
  fs
    .readFileSync(path.join(home, 'runs', runId, 'trajectories.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Group);

async function train(args: string[]): Promise<string> {
  const before = new Set(fs.existsSync(path.join(home, 'runs')) ? fs.readdirSync(path.join(home, 'runs')) : []);
  const r = await cli(['train', ...args, '--home', home]);
  if (r.code !== 0) throw new Error(`train ${args.join(' ')}: ${r.stderr}`);
  return fs.readdirSync(path.join(home, 'runs')).find((d) => !before.has(d))!;
}

beforeAll(async () => {
  if (!haveChromium) return;
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-replies-e2e-'));
  runs.seq = await train(['--preset', 'seqgrpo-copy', '--set', 'budget.steps=3', '--set', 'eval.every=3']);
  if (MODEL) {
    runs.chat = await train(['--preset', 'chatgrpo-addition', '--set', 'budget.steps=1', '--set', 'eval.items=4']);
  }
  ui = await openWebUi(home);
  ({ server, page, pageErrors } = ui);
}, 600_000);

afterAll(async () => {
  await ui?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)('the Replies tab', () => {
  it("shows a seqgrpo run's groups step by step, replies sorted by reward", async () => {
    const groups = groupsOf(runs.seq);
    await page.goto(`${server.url}#/run/${runs.seq}/replies`);
    await page.getByTestId('reply-group').first().waitFor();
    expect(await page.getByTestId('reply-group').count()).toBe(groups.length);
    const newest = groups.filter((g) => g.step === 3)[0]!;
    const first = page.getByTestId('reply-group').first();
    expect(await first.getByTestId('reply-prompt').textContent()).toBe(newest.input);
    const rewards = await first
      .getByTestId('reply')
      .evaluateAll((els) => els.map((e) => Number(/reward (-?[\d.]+)/.exec(e.textContent ?? '')![1])));
    expect(rewards).toHaveLength(newest.rollouts.length);
    expect(rewards).toEqual([...rewards].sort((a, b) => b - a));
    const alike = groups.filter((g) => g.rollouts.every((r) => r.reward === g.rollouts[0]!.reward)).length;
    expect(await page.getByText('all alike: no signal').count()).toBe(alike);

    await page.goto(`${server.url}#/run/${runs.seq}/replies?step=2`);
    await expect
      .poll(() => page.locator('section[data-testid="replies-tab"] h3').allTextContents())
      .toEqual(['Step 2']);
    expect(await page.getByTestId('reply-group').count()).toBe(groups.filter((g) => g.step === 2).length);
    expect(pageErrors).toEqual([]);
  });

  it.skipIf(!MODEL)("shows a chatgrpo run's questions and SmolLM2's replies as written", async () => {
    const [group] = groupsOf(runs.chat);
    await page.goto(`${server.url}#/run/${runs.chat}/replies`);
    await page.getByTestId('reply-group').first().waitFor();
    expect(await page.getByTestId('reply-prompt').first().textContent()).toBe(group!.input);
    for (const unfold of await page.getByTestId('reply-unfold').all()) await unfold.click();
    // the text as written, but for the fence lines, which the tab draws as lines of their own
    const bare = (t: string) => t.replace(/\s+/g, '');
    const shown = (await page.getByTestId('reply-text').allTextContents()).map(bare);
    for (const r of group!.rollouts) expect(shown).toContain(bare(r.output === '' ? '(empty)' : r.output));
  });
});
