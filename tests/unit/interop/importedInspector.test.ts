/**
 * An imported verl run in the app's own inspector components (renderer/src/components/EpisodeInspector.svelte, in
 * headless Chromium through tests/component/harness.ts): the records `import verl` writes list as groups of rollout.n
 * by prompt, each card with its reward and recomputed advantage, and a rollout opens with its response as a token
 * strip of text pieces — with no error on the page.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importVerl } from '../../../engine/interop/import/verl';
import { readJsonl } from '../../../engine/runs/jsonl';
import { groupEpisodes, marsWindowSettings, type MarsEpisode } from '../../../renderer/src/lib/trajectories';
import { haveChromium, openHarness, type Harness } from '../../component/harness';
import { chatPrompt, PyFloat, writeVerlStep } from './trainerFormats';

let h: Harness;
let tmp: string;
let episodes: MarsEpisode[];

describe.skipIf(!haveChromium)('an imported verl run in the episode inspector', () => {
  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-verl-view-'));
    const dump = path.join(tmp, 'rollouts');
    const prompts = [chatPrompt('What is 17 + 25?'), chatPrompt('Name the capital of France.')];
    writeVerlStep(
      dump,
      5,
      [0, 1, 2, 3].flatMap((k) => prompts.map((input, p) => ({ input, output: `Let me think. Step ${k}. #### ${k === p ? (p ? 'Paris' : '42') : 'no idea'}`, gts: p ? 'Paris' : '42', score: new PyFloat(k === p ? 1 : 0) }))),
    );
    const r = await importVerl({ home: path.join(tmp, 'home'), dir: dump });
    episodes = readJsonl<MarsEpisode>(path.join(r.dir, 'trajectories.jsonl')).records;
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('lists a group per prompt, cards with reward and advantage, and a rollout as a token strip', async () => {
    await h.mount('EpisodeInspector', { episodes, settings: marsWindowSettings(null) });
    const groups = groupEpisodes(episodes);
    expect(groups.map((g) => g.episodes.length)).toEqual([4, 4]);
    await expect.poll(() => h.page.getByTestId('group-item').count()).toBe(2);
    await h.page.getByTestId('group-item').nth(0).click();
    const cards = h.page.getByTestId('group-card');
    await expect.poll(() => cards.count()).toBe(4);
    const rewards = await Promise.all([0, 1, 2, 3].map(async (i) => Number(await cards.nth(i).getAttribute('data-reward'))));
    expect(rewards).toEqual([1, 0, 0, 0]);
    // the right answer's card shows its recomputed advantage: (1 − 0.25) / (0.5 + 1e-6)
    expect(await cards.nth(0).textContent()).toContain((0.75 / (0.5 + 1e-6)).toFixed(3));
    await cards.nth(0).click();
    const view = h.page.getByTestId('episode');
    await view.waitFor();
    const right = groups[0]!.episodes.find((e) => e.reward === 1)!;
    // as text, then as tokens coloured by the (recomputed) advantage: the dump has no log-probabilities
    expect(await view.locator('.turn .text').first().textContent()).toBe(right.turns[0]!.text);
    // no `pred` in this dump: the answer is the response, where the gold answer is found
    expect(await view.getByTestId('answer').textContent()).toBe(right.turns[0]!.text);
    await h.page.getByTestId('token-mode-advantage').check();
    const toks = view.getByTestId('token-strip').first().locator('.tok');
    expect(await toks.count()).toBe(right.turns[0]!.tokens.length);
    expect((await toks.allTextContents()).join('')).toBe(right.turns[0]!.text);
    await h.shot('imported-verl-group');
    expect(h.errors).toEqual([]);
  });
});
