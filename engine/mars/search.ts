/**
 * The search tool of the MARS worlds (docs/algorithms.md §2.1: `search(query) → Document[]`, full pages like the paper's
 * search results): BM25 over page title and text, by minisearch (its default scoring is BM25+, k1 = 1.2, b = 0.7).
 *
 * Function words and question words are stop words, so "where was vorana born ?" searches for "vorana born". The
 * title is boosted so that an entity's own page outranks pages that merely mention it. Results are whole pages;
 * equal scores are ordered by page id, so the ranking is deterministic.
 */
import MiniSearch from 'minisearch';
import type { Page } from './world';

/** Words that carry no topic in this world's language (templates and questions). */
export const SEARCH_STOP_WORDS: ReadonlySet<string> = new Set([
  'a',
  'an',
  'the',
  'of',
  'in',
  'on',
  'at',
  'to',
  'by',
  'for',
  'from',
  'with',
  'and',
  'or',
  'as',
  'is',
  'was',
  'are',
  'were',
  'be',
  'been',
  'has',
  'have',
  'had',
  'does',
  'did',
  'do',
  'its',
  'it',
  'this',
  'that',
  'which',
  'what',
  'who',
  'whom',
  'where',
  'when',
  'how',
]);

/** Title matches count this many times a text match. */
const TITLE_BOOST = 3;

interface IndexedPage {
  id: string;
  title: string;
  text: string;
}

function processTerm(term: string): string | null {
  const t = term.toLowerCase();
  return t === '' || SEARCH_STOP_WORDS.has(t) ? null : t;
}

export class SearchIndex {
  private readonly engine: MiniSearch<IndexedPage>;
  private readonly byId: Map<string, Page>;

  constructor(pages: readonly Page[]) {
    this.byId = new Map();
    for (const p of pages) {
      if (this.byId.has(p.id)) {
        throw new Error(`SearchIndex: two pages share the id "${p.id}"; page ids must be unique`);
      }
      this.byId.set(p.id, p);
    }
    this.engine = new MiniSearch<IndexedPage>({
      fields: ['title', 'text'],
      idField: 'id',
      storeFields: [],
      processTerm,
      searchOptions: { boost: { title: TITLE_BOOST }, combineWith: 'OR', prefix: false, fuzzy: false },
    });
    this.engine.addAll(pages.map((p) => ({ id: p.id, title: p.title, text: p.text })));
  }

  /** The top `k` full pages for `query` (§2.1), best first; [] for an empty or all-stop-word query or k ≤ 0. */
  search(query: string, k: number): Page[] {
    if (!(k > 0)) return [];
    const results = this.engine.search(query);
    results.sort((a, b) => b.score - a.score || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return results.slice(0, Math.floor(k)).map((r) => this.byId.get(r.id as string)!);
  }
}
