import { describe, expect, it } from 'vitest';
import { SearchIndex } from '../../../engine/mars/search';
import { generateWorld, tokenCount, type Page, type World } from '../../../engine/mars/world';

const worlds: World[] = [0, 1, 2, 3].map((s) => generateWorld(s));
const indexes = worlds.map((w) => new SearchIndex(w.pages));

const tokens = (pages: readonly Page[]) => pages.reduce((n, p) => n + tokenCount(p.text), 0);

function page(id: string, title: string, text: string): Page {
  return { id, title, entityId: null, kind: 'mention', text };
}

describe('SearchIndex', () => {
  it("returns an entity's own page first when searching its name", () => {
    let first = 0;
    let total = 0;
    worlds.forEach((w, i) => {
      for (const e of w.entities) {
        total++;
        if (indexes[i]!.search(e.name, 5)[0]?.entityId === e.id) first++;
      }
    });
    expect(first / total).toBeGreaterThanOrEqual(0.9);
  });

  it('returns more than a 128-token budget in its top 5, for popular names and for every question', () => {
    worlds.forEach((w, i) => {
      const index = indexes[i]!;
      // Long-tail names are on only one or two pages by design (PopQA-like), so only popular names are held to it.
      for (const e of w.entities.filter((x) => !x.longTail)) {
        expect(tokens(index.search(e.name, 5)), e.name).toBeGreaterThan(128);
      }
      for (const q of w.questions) {
        const top = index.search(q.text, 5);
        expect(top).toHaveLength(5);
        expect(tokens(top), q.text).toBeGreaterThan(128);
      }
    });
  });

  it("finds a question's first support page in the top 5 for most questions", () => {
    let hit = 0;
    let total = 0;
    worlds.forEach((w, i) => {
      for (const q of w.questions) {
        total++;
        if (indexes[i]!.search(q.text, 5).some((p) => p.id === q.support[0])) hit++;
      }
    });
    expect(hit / total).toBeGreaterThan(0.8);
  });

  it('returns the full page objects, at most k of them', () => {
    const w = worlds[0]!;
    const top = indexes[0]!.search(w.entities[0]!.name, 3);
    expect(top.length).toBeLessThanOrEqual(3);
    for (const p of top) expect(w.pages).toContain(p);
    expect(indexes[0]!.search(w.entities[0]!.name, 0)).toEqual([]);
  });

  it('returns nothing for an empty, blank or all-stop-word query, or an unknown word', () => {
    const index = indexes[0]!;
    expect(index.search('', 5)).toEqual([]);
    expect(index.search('   ', 5)).toEqual([]);
    expect(index.search('where was the ?', 5)).toEqual([]);
    expect(index.search('zzzzqx', 5)).toEqual([]);
  });

  it('ranks by BM25 (rarer terms and title matches count more) and breaks ties by page id', () => {
    const pages = [
      page('c', 'notes', 'apple pie and apple tart .'),
      page('a', 'notes', 'apple pie and apple tart .'),
      page('b', 'notes', 'apple pie and apple tart .'),
      page('d', 'pear', 'a note about fruit .'),
      page('e', 'notes', 'pear trees grow here among many other trees and shrubs .'),
    ];
    const index = new SearchIndex(pages);
    expect(index.search('apple', 5).map((p) => p.id)).toEqual(['a', 'b', 'c']);
    expect(index.search('pear', 5).map((p) => p.id)).toEqual(['d', 'e']);
    expect(index.search('pie pear', 2).map((p) => p.id)).toEqual(['d', 'e']);
    expect(() => new SearchIndex([pages[0]!, pages[0]!])).toThrow(/unique/);
  });

  it('is deterministic: the same corpus and query give the same ranking', () => {
    const w = worlds[1]!;
    const again = new SearchIndex(w.pages);
    for (const q of w.questions.slice(0, 30)) {
      expect(again.search(q.text, 5).map((p) => p.id)).toEqual(indexes[1]!.search(q.text, 5).map((p) => p.id));
    }
  });
});
