/**
 * The mars-overflow worlds carry MARS's premise (issue 17): the raw search results overflow System 2's context, so with
 * System 1 off the support fact is usually cut away, while every support page is whole, answers its hop, and fits one
 * System 1 window. The same measure on the mars-ablations worlds shows why the old study could not see System 1 earn
 * its place there: the best page fits System 2's raw budget, so the fact almost always survives.
 *
 * "Survives" is measured the way rollout.ts builds System 2's <info> with System 1 off: the pages a search for the
 * hop's entity (its page title, the query a good policy writes) returns, in rank order, concatenated and cut to
 * mars.rawInfoBudget tokens; the support sentence (sys1Measures.ts) must be whole in it.
 */
import { describe, expect, it } from 'vitest';
import type { MarsConfig } from '../../../engine/mars/configSchema';
import { solveFromSupport } from '../../../engine/mars/questions';
import { SearchIndex } from '../../../engine/mars/search';
import { containsTokens, rawInfoText, supportSentences } from '../../../engine/mars/sys1Measures';
import { generateWorld, tokenCount } from '../../../engine/mars/world';
import { evalWorldSeeds, trainWorldSeeds } from '../../../engine/mars/worldSplits';
import { resolvePresetConfig } from '../../../engine/runs/presets/presets';

interface Measured {
  /** Hops whose support sentence is whole in System 2's raw view. */
  survived: number;
  hops: number;
  /** Result pages (ranks 2..topK) that hold no support sentence of the question. */
  distractors: number;
  laterResults: number;
  /** Support pages too long for one System 1 window, questions not solvable from their pages, hops without a sentence. */
  tooLong: number;
  unsolvable: number;
  noSentence: number;
  questions: number;
  minPage: number;
}

function measure(cfg: MarsConfig, worlds = 4): Measured {
  const m: Measured = {
    survived: 0,
    hops: 0,
    distractors: 0,
    laterResults: 0,
    tooLong: 0,
    unsolvable: 0,
    noSentence: 0,
    questions: 0,
    minPage: Infinity,
  };
  const { topK, rawInfoBudget, sys1PromptMax, purposeMax, sepCost } = cfg.mars;
  const capacity = sys1PromptMax - 3 - purposeMax; // §2.3's C with the longest purpose
  const seeds = [...trainWorldSeeds(cfg.task.worldSeed, worlds / 2), ...evalWorldSeeds(cfg.task.worldSeed, worlds / 2)];
  for (const seed of seeds) {
    const world = generateWorld(seed, cfg.task.world);
    const index = new SearchIndex(world.pages);
    const pagesById = new Map(world.pages.map((p) => [p.id, p]));
    const names = new Map(world.entities.map((e) => [e.id, e.name]));
    for (const p of world.pages) if (p.kind === 'entity') m.minPage = Math.min(m.minPage, tokenCount(p.text));
    for (const q of world.questions.filter((x) => cfg.task.families.includes(x.family))) {
      m.questions++;
      if (solveFromSupport(q, pagesById) === null) m.unsolvable++;
      const sentences = supportSentences(q, pagesById, names);
      q.support.forEach((pageId, i) => {
        const page = pagesById.get(pageId)!;
        if (tokenCount(page.text) + sepCost > capacity) m.tooLong++;
        const sentence = sentences[i];
        if (sentence === null || sentence === undefined) {
          m.noSentence++;
          return;
        }
        const results = index.search(page.title, topK);
        m.hops++;
        if (containsTokens(rawInfoText(results, rawInfoBudget), sentence)) m.survived++;
        for (const r of results.slice(1)) {
          m.laterResults++;
          if (!sentences.some((s) => s !== null && containsTokens(r.text, s))) m.distractors++;
        }
      });
    }
  }
  return m;
}

describe('world settings for long pages and long distractors', () => {
  it('pageTokens longer than a type has fillers repeats them, so every entity page reaches its minimum', () => {
    const w = generateWorld(3, { pageTokens: [400, 480] });
    const lengths = w.pages.filter((p) => p.kind === 'entity').map((p) => tokenCount(p.text));
    expect(Math.min(...lengths)).toBeGreaterThanOrEqual(400);
    expect(Math.max(...lengths)).toBeLessThanOrEqual(480);
    expect(w.questions.every((q) => solveFromSupport(q, new Map(w.pages.map((p) => [p.id, p]))) !== null)).toBe(true);
  });

  it('mentionPageTokens pads distractor pages; unset, the world is exactly what it was', () => {
    const padded = generateWorld(3, { mentionPageTokens: 100 });
    const mentions = padded.pages.filter((p) => p.kind === 'mention');
    expect(mentions.length).toBeGreaterThan(0);
    expect(Math.min(...mentions.map((p) => tokenCount(p.text)))).toBeGreaterThanOrEqual(100);
    // padding adds filler only: entity pages, facts and questions are those of the unpadded world
    const plain = generateWorld(3);
    expect(padded.pages.filter((p) => p.kind === 'entity')).toEqual(plain.pages.filter((p) => p.kind === 'entity'));
    expect(padded.questions).toEqual(plain.questions);
    expect(generateWorld(3, { mentionPageTokens: 0 }).pages).toEqual(plain.pages);
    expect(Math.max(...plain.pages.filter((p) => p.kind === 'mention').map((p) => tokenCount(p.text)))).toBeLessThan(
      100,
    );
  });
});

describe('mars-overflow worlds: raw results overflow System 2, System 1 can read them', () => {
  it('with System 1 off, few support facts survive truncation; every support page is whole and fits a System 1 window', () => {
    const cfg = resolvePresetConfig('mars-overflow') as MarsConfig;
    const { topK, rawInfoBudget } = cfg.mars;
    expect(topK).toBeGreaterThan(1);
    const m = measure(cfg);
    expect(m.questions).toBeGreaterThan(300);
    // Every entity page is longer than the raw budget: the fact cannot always sit in what System 2 sees.
    expect(m.minPage).toBeGreaterThanOrEqual(cfg.task.world.pageTokens[0]);
    expect(m.minPage).toBeGreaterThan(2 * rawInfoBudget);
    // A support sentence survives only if it ends inside the first rawInfoBudget tokens of a page of at least
    // pageTokens[0] tokens whose sentences (after its one-sentence intro) are in random order: at most
    // rawInfoBudget / pageTokens[0] of them on average.
    const bound = rawInfoBudget / cfg.task.world.pageTokens[0];
    const share = m.survived / m.hops;
    expect(share).toBeLessThan(bound);
    expect(share).toBeGreaterThan(0); // the budget is not zero: some facts do survive
    // What the question needs is all there: each question is solved mechanically from its support pages, each hop's
    // fact is stated by one sentence, and each support page fits whole into one System 1 window.
    expect(m.unsolvable).toBe(0);
    expect(m.noSentence).toBe(0);
    expect(m.tooLong).toBe(0);
    // Distractor-rich: most results after the first hold none of the question's support sentences.
    expect(m.distractors / m.laterResults).toBeGreaterThan(0.5);
  });

  it('the long-page preset cuts deeper (the scaling direction)', () => {
    const short = resolvePresetConfig('mars-overflow') as MarsConfig;
    const long = resolvePresetConfig('mars-overflow-long') as MarsConfig;
    expect(long.task.world.pageTokens[0]).toBeGreaterThan(short.task.world.pageTokens[1]);
    const [ms, ml] = [measure(short), measure(long)];
    expect(ml.tooLong).toBe(0);
    expect(ml.unsolvable).toBe(0);
    expect(ml.survived / ml.hops).toBeLessThan(long.mars.rawInfoBudget / long.task.world.pageTokens[0]);
    expect(ml.survived / ml.hops).toBeLessThan(ms.survived / ms.hops);
  });

  it('in the mars-ablations worlds, by contrast, the support fact nearly always survives (no overflow)', () => {
    const m = measure(resolvePresetConfig('mars-ablations') as MarsConfig);
    expect(m.survived / m.hops).toBeGreaterThan(0.8);
  });
});
