/**
 * Finding the bad trajectory (issue 19) in the Run page's tabs, in headless Chromium over a real host
 * (tabsHarness.ts) and a run folder of recorded episodes (tests/fixtures/mars-episodes.jsonl) repeated over 60 steps:
 * an address with ?step=N opens that step, however old; the finder's filters narrow the list; an opened rollout shows
 * the text of its pages next to System 1's windows with the gold answer marked, and says where the answer appears;
 * the token heat map has a legend; the labels are words. The Tree tab opens a step of recorded MARTI trees.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { haveChromium, readFixture } from './harness';
import { openTabsHarness, type TabsHarness } from './tabsHarness';

const episodes = readFixture('mars-episodes.jsonl');
const trees = readFixture('marti-trees.jsonl');
const config = JSON.parse(fs.readFileSync(path.resolve('tests/fixtures/mars-episodes.config.json'), 'utf8')) as Record<
  string,
  unknown
>;
const STEPS = 60;

let h: TabsHarness;
let marsRun: string;
let martiRun: string;

describe.skipIf(!haveChromium)('finding a trajectory in the Episodes and Tree tabs', () => {
  beforeAll(async () => {
    h = await openTabsHarness();
    const mars = createRunFolder(h.home, {
      algorithm: 'mars',
      config,
      engineVersion: '0',
      seed: 0,
      tags: [],
      notes: '',
    });
    marsRun = mars.id;
    let lines = '';
    // each step: the fixture's groups, their step replaced (step s holds the groups of fixture steps 1 and 2)
    for (let s = 1; s <= STEPS; s++) for (const e of episodes) lines += `${JSON.stringify({ ...e, step: s })}\n`;
    fs.writeFileSync(path.join(mars.dir, 'trajectories.jsonl'), lines);
    const marti = createRunFolder(h.home, {
      algorithm: 'marti',
      config: {},
      engineVersion: '0',
      seed: 0,
      tags: [],
      notes: '',
    });
    martiRun = marti.id;
    let treeLines = '';
    for (let s = 1; s <= STEPS; s++) for (const t of trees) treeLines += `${JSON.stringify({ ...t, step: s })}\n`;
    fs.writeFileSync(path.join(marti.dir, 'trajectories.jsonl'), treeLines);
  }, 120_000);
  afterAll(async () => {
    await h?.close();
  });

  const groupSteps = async (): Promise<string[]> => h.page.getByTestId('group-item').locator('.step').allTextContents();

  it('an address with ?step=N opens that step’s episodes, far beyond the newest page', async () => {
    await h.mountTab(
      'EpisodesTab',
      { runId: marsRun, config, status: 'completed' },
      `#/run/${marsRun}/episodes?step=3`,
    );
    await expect.poll(() => h.page.getByTestId('finder-status').textContent()).toContain('Step 3');
    await expect.poll(groupSteps).toEqual(['step 3', 'step 3', 'step 3']);
    // the previous and next steps are one click away
    await h.page.getByTestId('finder-next').click();
    await expect.poll(groupSteps).toEqual(['step 4', 'step 4', 'step 4']);
    await expect
      .poll(() => h.page.evaluate(() => (globalThis as unknown as { location: { hash: string } }).location.hash))
      .toBe(`#/run/${marsRun}/episodes?step=4`);
    // and the newest again
    await h.page.getByTestId('finder-newest').click();
    await expect.poll(async () => (await groupSteps())[0]).toBe(`step ${STEPS}`);
    await h.shot('episodes-step');
    expect(h.errors).toEqual([]);
  });

  it('the finder’s filters narrow the list', async () => {
    await h.mountTab('EpisodesTab', { runId: marsRun, config, status: 'completed' }, `#/run/${marsRun}/episodes`);
    await expect.poll(async () => (await groupSteps()).length).toBeGreaterThan(3);
    const before = await h.page.getByTestId('group-item').count();
    await h.page.getByTestId('finder-choice').selectOption('direct');
    await h.page.getByTestId('finder-step-min').fill('10');
    await h.page.getByTestId('finder-step-max').fill('12');
    await h.page.getByTestId('finder-search').click();
    await expect.poll(() => h.page.getByTestId('finder-status').getAttribute('data-mode')).toBe('search');
    await expect.poll(groupSteps).toEqual(['step 12', 'step 11', 'step 10']);
    const metas = await h.page.getByTestId('group-item').locator('.meta').allTextContents();
    expect(metas.every((m) => m.startsWith('direct'))).toBe(true);
    expect(await h.page.getByTestId('group-item').count()).toBeLessThan(before);
    // right answers only: the one right rollout of each step's paraphrase-006
    await h.page.getByTestId('finder-choice').selectOption('');
    await h.page.getByTestId('finder-outcome').selectOption('solved');
    await h.page.getByTestId('finder-search').click();
    await expect
      .poll(async () =>
        (await h.page.getByTestId('group-item').locator('.meta').allTextContents()).every((m) =>
          m.includes('1 rollout · 1 right'),
        ),
      )
      .toBe(true);
    await expect.poll(() => h.page.getByTestId('group-item').count()).toBe(3);
    // text
    await h.page.getByTestId('finder-outcome').selectOption('');
    await h.page.getByTestId('finder-text').fill('lotaitour');
    await h.page.getByTestId('finder-search').click();
    await expect
      .poll(async () =>
        (await h.page.getByTestId('group-item').locator('.q').allTextContents()).every(
          (q) => q === String(episodes[8]!['question']),
        ),
      )
      .toBe(true);
    await h.shot('episodes-search');
    expect(h.errors).toEqual([]);
  });

  it('shows the pages’ text next to each System 1 window, marks the gold answer, and says where it appears', async () => {
    await h.mountTab(
      'EpisodesTab',
      { runId: marsRun, config, status: 'completed' },
      `#/run/${marsRun}/episodes?step=1`,
    );
    await expect.poll(groupSteps).toEqual(['step 1', 'step 1', 'step 1']);
    // a rollout whose search found a page with the gold answer, and which answered wrong
    const lost = episodes[4]!;
    expect(lost['questionId']).toBe('w1710988496:paraphrase-016');
    await h.page.locator(`[data-testid="group-item"][data-key="1|${String(lost['questionId'])}"]`).click();
    await h.page.locator('[data-testid="group-card"][data-index="0"]').click();
    const ep = h.page.getByTestId('episode');
    await expect.poll(() => ep.getByTestId('page-text').count()).toBeGreaterThan(0);
    const texts = await ep.getByTestId('page-text').allTextContents();
    expect(texts.every((t) => t.split(' ').length > 5)).toBe(true);
    const page = ep.locator('[data-testid="page-text"][data-page="page-city-003"]').first();
    expect(await page.getByTestId('gold-mark').allTextContents()).toContain('taistas');
    expect(await ep.getByTestId('gold-in-pages').textContent()).toContain('✓');
    expect(await ep.getByTestId('gold-in-answer').textContent()).toContain('✗');
    expect(await ep.getByTestId('gold-in-summary').textContent()).toContain('✗');
    expect(await ep.getByTestId('bin-verdict').count()).toBe(
      (lost['turns'] as { bins: unknown[] }[]).flatMap((t) => t.bins).length,
    );
    await h.shot('episodes-pages-gold');
    // the right rollout of the other question: its answer is marked as the gold
    const right = episodes.find((e) => e['reward'] === 1)!;
    await h.page.locator(`[data-testid="group-item"][data-key="1|${String(right['questionId'])}"]`).click();
    await h.page.locator('[data-testid="group-card"][data-reward="1"]').click();
    await expect
      .poll(() => ep.getByTestId('answer').getByTestId('gold-mark').textContent())
      .toBe(String(right['answer']));
    expect(await ep.getByTestId('gold-in-answer').textContent()).toContain('✓');
    // plain labels: no A₂, 1w or ✕
    const all = (await h.page.getByTestId('episodes-tab').textContent())!;
    expect(all).not.toMatch(/A₂|A₁|\d+w\b|✕/);
    expect(all).toContain('advantage (System 2)');
    // the heat map's legend
    expect(await h.page.getByTestId('token-legend').count()).toBe(0);
    await h.page.getByTestId('token-mode-logprob').check();
    await expect.poll(() => h.page.getByTestId('token-legend').getAttribute('data-mode')).toBe('logProb');
    expect(await h.page.getByTestId('token-legend').textContent()).toContain('0 (certain)');
    await h.page.getByTestId('token-mode-advantage').check();
    await expect.poll(() => h.page.getByTestId('token-legend').getAttribute('data-mode')).toBe('advantage');
    await h.shot('episodes-token-legend');
    expect(h.errors).toEqual([]);
  });

  it('the Tree tab opens a step of a long run from its address (the /runs/ form too)', async () => {
    await h.mountTab('TreeTab', { runId: martiRun, status: 'completed' }, `#/runs/${martiRun}/tree?step=2`);
    await expect.poll(() => h.page.getByTestId('finder-status').textContent()).toContain('Step 2');
    const keys = await h.page.getByTestId('tree-item').evaluateAll((els) => els.map((e) => e.getAttribute('data-key')));
    expect(keys.sort()).toEqual(trees.map((t) => `2|${String(t['treeId'])}`).sort());
    // a search by agent and outcome
    await h.page.getByTestId('finder-outcome').selectOption('solved');
    await h.page.getByTestId('finder-step-min').fill('59');
    await h.page.getByTestId('finder-search').click();
    await expect
      .poll(() => h.page.getByTestId('tree-item').count())
      .toBe(2 * trees.filter((t) => (t['metrics'] as { passN: number }).passN > 0).length);
    await h.shot('tree-search');
    expect(h.errors).toEqual([]);
  });
});
