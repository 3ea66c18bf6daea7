/**
 * An imported verl run in the app's own inspector components (renderer/src/components/EpisodeInspector.svelte, in
 * headless Chromium through tests/component/harness.ts): the records `import verl` writes list as groups of rollout.n
 * by prompt, each card with its reward and recomputed advantage, and a rollout opens with its response as a token
 * strip of text pieces; and an imported MARTI tree draws in the tree view with its inferred parents and unknown
 * scores — with no error on the page.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { importMarti } from '../../../engine/interop/import/marti';
import { importVerl } from '../../../engine/interop/import/verl';
import { readJsonl } from '../../../engine/runs/folder/jsonl';
import { num } from '../../../renderer/src/lib/format';
import {
  groupEpisodes,
  marsWindowSettings,
  type MarsEpisode,
  type MartiTreeRecord,
} from '../../../renderer/src/lib/trajectories';
import { haveChromium, openHarness, type Harness } from '../../component/harness';
import { chatPrompt, martiCodePrompt, PyFloat, writeMartiCall, writeVerlStep } from './trainerFormats';

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
      [0, 1, 2, 3].flatMap((k) =>
        prompts.map((input, p) => ({
          input,
          output: `Let me think. Step ${k}. #### ${k === p ? (p ? 'Paris' : '42') : 'no idea'}`,
          gts: p ? 'Paris' : '42',
          score: new PyFloat(k === p ? 1 : 0),
        })),
      ),
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
    const rewards = await Promise.all(
      [0, 1, 2, 3].map(async (i) => Number(await cards.nth(i).getAttribute('data-reward'))),
    );
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

describe.skipIf(!haveChromium)('an imported MARTI tree in the tree view', () => {
  let hh: Harness;
  let dir: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-marti-view-'));
    hh = await openHarness();
  });
  afterAll(async () => {
    await hh?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('draws every node and the inferred parent links, unknown scores as unknown, with no page error', async () => {
    const save = path.join(dir, 'workflow');
    const problem = 'Reverse the list.';
    const a = 'def f(x):\n    return x';
    writeMartiCall(save, 0, {
      agentId: '0',
      messages: martiCodePrompt(problem),
      actionText: '```python\n' + a + '\n```',
      actionTokens: [1],
      actionLogProbs: null,
      stamp: '20260401_120000_001',
    });
    writeMartiCall(save, 0, {
      agentId: '1',
      messages: martiCodePrompt(problem, a),
      actionText: '```python\ndef f(x):\n    return x[::-1]\n```',
      actionTokens: [2],
      actionLogProbs: null,
      stamp: '20260401_120000_002',
    });
    const r = await importMarti({ home: path.join(dir, 'home'), dir: save });
    const [tree] = readJsonl<MartiTreeRecord>(path.join(r.dir, 'trajectories.jsonl')).records;
    await hh.mount('TreeView', { tree });
    const nodes = hh.page.getByTestId('tree-node');
    await expect.poll(() => nodes.count()).toBe(3);
    // node 2 refines node 1: an edge from the root to 1 and from 1 to 2
    expect(await hh.page.getByTestId('tree-edge').count()).toBe(2);
    expect(await hh.page.locator('[data-testid="tree-edge"]:not(.fresh)').count()).toBe(1);
    await nodes.nth(2).click();
    await expect.poll(() => hh.page.getByTestId('node-score').textContent()).toBe(num(null));
    expect(hh.errors).toEqual([]);
  });
});
