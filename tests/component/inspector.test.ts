/**
 * The MARS trajectory inspector (renderer/src/components/EpisodeInspector.svelte and the components it holds) on a
 * recorded trajectories.jsonl (tests/fixtures/mars-episodes.jsonl), in headless Chromium: groups, the group view's
 * order, the conversation with its windows and capacities, balancing's dropped samples, and the token view's values.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, openHarness, readFixture, type Harness } from './harness';
import { withCapacities } from '../../engine/runs/trajectories/trajectoryPages';
import {
  byReward,
  groupEpisodes,
  marsWindowSettings,
  sys1Capacity,
  type MarsEpisode,
} from '../../renderer/src/lib/trajectories';

/** The config of the run that recorded the fixture (its run.json), from which the view takes System 1's window. */
const config = JSON.parse(fs.readFileSync('tests/fixtures/mars-episodes.config.json', 'utf8')) as unknown;
const settings = marsWindowSettings(config);
/** As the host sends them: the fixture predates recorded capacities, which the host fills in (engine/runs/trajectories/trajectoryPages.ts). */
const episodes = withCapacities(readFixture('mars-episodes.jsonl'), config) as unknown as MarsEpisode[];

let h: Harness;

describe.skipIf(!haveChromium)('trajectory inspector (recorded MARS episodes)', () => {
  beforeAll(async () => {
    h = await openHarness();
  });
  afterAll(async () => {
    await h?.close();
  });

  it('the fixture is what the tests need: groups of G rollouts with searches, windows, a right answer and a dropped System 1 sample', () => {
    expect(settings).toMatchObject({
      sys1PromptMax: 96,
      purposeMax: 8,
      sepCost: 1,
      packing: 'ffd',
      missingPurpose: 'query',
    });
    expect(episodes.some((e) => e.reward === 1)).toBe(true);
    const groups = groupEpisodes(episodes);
    expect(groups.length).toBeGreaterThanOrEqual(2);
    for (const g of groups) expect(g.episodes.length).toBeGreaterThan(1);
    const bins = episodes.flatMap((e) => e.turns.flatMap((t) => t.bins));
    expect(bins.length).toBeGreaterThan(0);
    expect(bins.some((b) => b.kept === 0)).toBe(true);
    expect(bins.some((b) => (b.kept ?? 0) > 0)).toBe(true);
    // every window fits the capacity the host computes for its search
    for (const e of episodes) {
      for (const t of e.turns) {
        for (const b of t.bins) expect(b.used).toBeLessThanOrEqual(sys1Capacity(t, settings).capacity!);
      }
    }
  });

  it('an evaluation episode (no step) says where it comes from instead of "step"', async () => {
    const { step: _step, ...evalEpisode } = episodes[0]!;
    const facts = h.page.locator('[data-testid="episode"] .facts');
    await h.mount('EpisodeView', { episode: evalEpisode, settings, origin: 'evaluation of the checkpoint at step 2' });
    await expect.poll(() => facts.textContent()).toMatch(/^\s*evaluation of the checkpoint at step 2 · question /);
    await h.mount('EpisodeView', { episode: evalEpisode, settings });
    await expect.poll(() => facts.textContent()).toMatch(/^\s*question /);
    expect(await facts.textContent()).not.toContain('step');
    await h.mount('EpisodeView', { episode: episodes[0], settings });
    await expect.poll(() => facts.textContent()).toMatch(new RegExp(`^\\s*step ${episodes[0]!.step} · question `));
    expect(h.errors).toEqual([]);
  });

  it('lists the groups newest first and shows a group side by side, sorted by reward', async () => {
    await h.mount('EpisodeInspector', { episodes, settings });
    const groups = groupEpisodes(episodes).sort((a, b) => b.step - a.step);
    await expect.poll(() => h.page.getByTestId('group-item').count()).toBe(groups.length);

    for (const [i, g] of groups.entries()) {
      await h.page.getByTestId('group-item').nth(i).click();
      const cards = h.page.getByTestId('group-card');
      await expect.poll(() => cards.count()).toBe(g.episodes.length);
      const shown = await cards.evaluateAll((els) =>
        els.map((el) => ({
          index: Number(el.getAttribute('data-index')),
          reward: Number(el.getAttribute('data-reward')),
        })),
      );
      // the cards are the group's rollouts in byReward's order: reward descending (then F1), nothing lost
      expect(shown.map((s) => s.index)).toEqual(byReward(g.episodes).map((s) => s.index));
      for (let k = 1; k < shown.length; k++) expect(shown[k]!.reward).toBeLessThanOrEqual(shown[k - 1]!.reward);
      expect(shown.map((s) => s.reward).sort()).toEqual(g.episodes.map((e) => e.reward).sort());
    }
    await h.shot('inspector-group');
    expect(h.errors).toEqual([]);
  });

  it('opens a rollout as a conversation: queries, pages, windows against capacity, System 1 outputs, dropped samples marked', async () => {
    // the episode with the most System 1 windows, some of them dropped by balancing
    const target = [...episodes].sort(
      (x, y) =>
        y.turns.flatMap((t) => t.bins).filter((b) => b.kept === 0).length -
        x.turns.flatMap((t) => t.bins).filter((b) => b.kept === 0).length,
    )[0]!;
    const groups = groupEpisodes(episodes).sort((a, b) => b.step - a.step);
    const gi = groups.findIndex((g) => g.questionId === target.questionId && g.step === target.step);
    const index = groups[gi]!.episodes.indexOf(target);
    await h.mount('EpisodeInspector', { episodes, settings });
    await h.page.getByTestId('group-item').nth(gi).click();
    await h.page.locator(`[data-testid="group-card"][data-index="${index}"]`).click();
    const view = h.page.getByTestId('episode');
    await view.waitFor();

    expect(await view.getByTestId('turn').count()).toBe(target.turns.length);
    const searches = target.turns.filter((t) => t.query !== null);
    expect(await view.getByTestId('query').allTextContents()).toEqual(searches.map((t) => t.query));
    const bins = target.turns.flatMap((t) => t.bins);
    const binEls = view.getByTestId('bin');
    expect(await binEls.count()).toBe(bins.length);
    const kept = await binEls.evaluateAll((els) => els.map((el) => el.getAttribute('data-kept')));
    expect(kept).toEqual(bins.map((b) => String(b.kept ?? '')));
    // a dropped sample says so; a kept one says how often
    for (const [i, b] of bins.entries()) {
      const text = await binEls.nth(i).textContent();
      expect(text).toContain(b.kept === 0 ? 'dropped by balancing' : `kept ×${b.kept}`);
      expect(text).toContain(b.output || '(empty output)');
    }
    // used / capacity per window, the capacity from the run's settings and the turn's purpose
    const used = await view.getByTestId('bin-used').allTextContents();
    expect(used.map(Number)).toEqual(bins.map((b) => b.used));
    const caps = await view.getByTestId('capacity').allTextContents();
    expect(caps.map(Number)).toEqual(
      target.turns
        .filter((t) => t.query !== null && t.results.length > 0)
        .map((t) => sys1Capacity(t, settings).capacity),
    );

    const outcome = await view.getByTestId('outcome').textContent();
    for (const g of target.gold) expect(outcome).toContain(g);
    if (target.answer !== null) expect(await view.getByTestId('answer').textContent()).toBe(target.answer);
    await h.shot('inspector-episode');
    expect(h.errors).toEqual([]);
  });

  it('token view: each token shows its own log-probability on hover and in its label, and the keyboard reads them out', async () => {
    const target = episodes.find((e) => e.turns.some((t) => t.bins.length > 0))!;
    const groups = groupEpisodes(episodes).sort((a, b) => b.step - a.step);
    const gi = groups.findIndex((g) => g.questionId === target.questionId && g.step === target.step);
    await h.mount('EpisodeInspector', { episodes, settings });
    await h.page.getByTestId('group-item').nth(gi).click();
    await h.page.locator(`[data-testid="group-card"][data-index="${groups[gi]!.episodes.indexOf(target)}"]`).click();
    await h.page.getByTestId('token-mode-logprob').check();
    const strips = h.page.getByTestId('token-strip');
    // one strip per System 2 turn and per System 1 window
    const expected = target.turns.flatMap((t) => [
      { tokens: t.tokens, logProbs: t.logProbs },
      ...t.bins.map((b) => ({ tokens: b.outputTokens, logProbs: b.outputLogProbs })),
    ]);
    await expect.poll(() => strips.count()).toBe(expected.length);
    for (const [s, want] of expected.entries()) {
      const toks = strips.nth(s).locator('.tok');
      expect(await toks.count()).toBe(want.tokens.length);
      for (const i of [0, Math.floor(want.tokens.length / 2), want.tokens.length - 1]) {
        if (i < 0 || i >= want.tokens.length) continue;
        const tok = toks.nth(i);
        expect(await tok.textContent()).toBe(want.tokens[i]);
        expect(Number(await tok.getAttribute('data-logprob'))).toBe(want.logProbs[i]);
        expect(await tok.getAttribute('title')).toContain(`log p = ${want.logProbs[i]!.toFixed(3)}`);
        expect(await tok.getAttribute('aria-label')).toContain(`log-probability ${want.logProbs[i]!.toFixed(3)}`);
      }
    }
    // hover shows the value in the read-out line
    const first = strips.nth(0).locator('.tok').nth(1);
    await first.hover();
    expect(await h.page.getByTestId('token-readout').first().textContent()).toContain(
      expected[0]!.logProbs[1]!.toFixed(3),
    );
    // keyboard: focus the strip, → twice reads the second token
    await h.page.mouse.move(0, 0);
    await strips.nth(0).focus();
    await h.page.keyboard.press('ArrowRight');
    await h.page.keyboard.press('ArrowRight');
    expect(await h.page.getByTestId('token-readout').first().textContent()).toContain(
      `token 2 of ${expected[0]!.tokens.length}`,
    );
    await h.shot('inspector-tokens-logprob');

    // advantage colouring: a System 1 strip carries that sample's advantage
    await h.page.getByTestId('token-mode-advantage').check();
    const turnWithBins = target.turns.findIndex((t) => t.bins.length > 0);
    const stripOfBin = target.turns.slice(0, turnWithBins).reduce((n, t) => n + 1 + t.bins.length, 0) + 1;
    const bin = target.turns[turnWithBins]!.bins[0]!;
    if (bin.outputTokens.length > 0 && bin.advantage !== null && bin.advantage !== undefined) {
      expect(await strips.nth(stripOfBin).getAttribute('data-mode')).toBe('advantage');
      expect(await strips.nth(stripOfBin).locator('.tok').first().getAttribute('title')).toContain(
        `advantage ${bin.advantage.toFixed(3)}`,
      );
    }
    await h.shot('inspector-tokens-advantage');
    expect(h.errors).toEqual([]);
  });

  it('keyboard: ↓ in the group list changes the group, → and Enter open the next rollout', async () => {
    await h.mount('EpisodeInspector', { episodes, settings });
    const groups = groupEpisodes(episodes).sort((a, b) => b.step - a.step);
    await h.page.getByTestId('group-item').first().focus();
    await h.page.keyboard.press('ArrowDown');
    await expect
      .poll(() => h.page.locator('[data-testid="group-item"][aria-selected="true"]').getAttribute('data-key'))
      .toBe(groups[1]!.key);
    const order = byReward(groups[1]!.episodes).map((s) => s.index);
    await h.page.getByTestId('group-card').first().focus();
    await h.page.keyboard.press('Enter');
    await h.page.keyboard.press('ArrowRight');
    await expect
      .poll(() => h.page.locator('[data-testid="group-card"][aria-selected="true"]').getAttribute('data-index'))
      .toBe(String(order[1]));
    expect(await h.page.getByTestId('episode').getAttribute('data-question')).toBe(groups[1]!.questionId);
    expect(h.errors).toEqual([]);
  });
});
