/**
 * Seeded generator of a fictional world for MARS's search tool (docs/algorithms.md §2.1: `search(query) → Document[]`).
 *
 * A world is entities (names from the shared pool, namePool.ts), typed facts between them, a corpus of pages and
 * questions (questions.ts). Nothing in it can be known from pretraining, so the answer must come from search.
 *
 * Text form: every page, question and answer is lowercase words and punctuation marks separated by single spaces,
 * already cut the way the word tokenizer cuts it, so `text.split(' ')` gives its tokens. Years are written as four
 * digit tokens ("1 9 5 2"), which is also what the tokenizer's one-token-per-digit rule makes of "1952". The words
 * any world can produce are listed by `marsVocabulary()`, the same for every seed.
 *
 * Pages: each entity has one page holding ALL facts it takes part in (as subject, and as object in the inverse
 * wording) among filler sentences, `pageTokens` long (a page longer than its type's fillers repeats them, drawn
 * afresh, so long pages need no new words). Mention pages are distractors that name several entities without stating
 * facts; every entity except the long-tail ones is named on `distractorMentions` of them, and `mentionPageTokens`
 * pads them with filler to a page's length (the mars-overflow worlds, where search results are long and mostly noise).
 * Long-tail entities (PopQA-like) get no mentions, lead and write nothing, and are asked about only by the longTail
 * family.
 */
import { Rng } from '../random/prng';
import { UserError } from '../base/userError';
import { NAME_POOL_SIZES, allPoolNames, namePool } from './namePool';
import { generateQuestions, type Question } from './questions';
import {
  DIGITS,
  ENTITY_TYPES,
  GENERIC_FILLERS,
  INTRO_TEMPLATES,
  MENTION_TEMPLATES_ONE,
  MENTION_TEMPLATES_TWO,
  MENTION_TITLES,
  RELATIONS,
  RELATION_SCHEMA,
  TYPED_FILLERS,
  fillTemplate,
  templateWords,
  yearText,
  type EntityType,
  type Relation,
} from './worldTemplates';

export type { EntityType, Relation } from './worldTemplates';
export { yearText } from './worldTemplates';

export interface Entity {
  /** `${type}-${index}` with a three-digit index, e.g. "person-007". */
  id: string;
  type: EntityType;
  /** One lowercase word from the name pool, unique within the world. */
  name: string;
  /** Rarely mentioned (no mention pages), and asked about only by longTail questions. */
  longTail: boolean;
}

export interface Fact {
  /** An entity id. */
  subject: string;
  relation: Relation;
  /** An entity id, or for year relations the year as four digits without spaces ("1952"). */
  object: string;
}

export interface Page {
  /** `page-${entityId}` for entity pages, `mention-${index}` for mention pages; ties in search sort by it. */
  id: string;
  /** The entity's name, or a mention page's heading. */
  title: string;
  entityId: string | null;
  kind: 'entity' | 'mention';
  text: string;
}

export interface WorldSpec {
  people: number;
  cities: number;
  countries: number;
  organisations: number;
  works: number;
  /** Filler sentences drawn for an entity page, [min, max] inclusive, before the page is fitted to `pageTokens`. */
  fillerSentencesPerPage: [number, number];
  /** Mention pages naming each non-long-tail entity. */
  distractorMentions: number;
  /** Target length of entity pages in tokens, [min, max]: fillers are added or dropped to land inside. A page
   * whose facts alone exceed max (a city with very many natives in a large world) stays longer. */
  pageTokens: [number, number];
  /** Mention pages are padded with generic filler sentences to at least this many tokens (absent or 0: as drawn,
   * about 20–50 tokens). Padding draws from its own stream, so worlds without it are unchanged. */
  mentionPageTokens?: number;
  /** Share of people and of works that are long-tail (rounded down). */
  longTailFraction: number;
  /** At most this many questions per family (fewer where the world allows fewer). */
  questionsPerFamily: number;
}

/** Small enough for a tiny model, big enough that the top-5 pages (~300–500 tokens) overflow a 128-token budget
 * while one page fits a 256-token System 1 window. */
export const DEFAULT_WORLD_SPEC: Readonly<WorldSpec> = Object.freeze({
  people: 40,
  cities: 16,
  countries: 6,
  organisations: 12,
  works: 16,
  fillerSentencesPerPage: [3, 8] as [number, number],
  distractorMentions: 2,
  pageTokens: [40, 120] as [number, number],
  longTailFraction: 0.2,
  questionsPerFamily: 40,
});

export interface World {
  seed: number;
  spec: WorldSpec;
  entities: Entity[];
  facts: Fact[];
  pages: Page[];
  questions: Question[];
}

/** Every word any world can produce, the same for every seed: template words, the ten digits, then the name pool.
 * The lead adds the special tags (<think>, <search>, …) when building the tokenizer. */
export function marsVocabulary(): string[] {
  const words = [...templateWords()];
  const seen = new Set(words);
  for (const w of [...DIGITS, ...allPoolNames()]) {
    if (!seen.has(w)) {
      seen.add(w);
      words.push(w);
    }
  }
  return words;
}

export function tokenCount(text: string): number {
  return text === '' ? 0 : text.split(' ').length;
}

function shuffle<T>(rng: Rng, xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[rng.int(xs.length)]!;
}

function checkSpec(spec: WorldSpec): void {
  const counts: Array<[keyof WorldSpec, EntityType]> = [
    ['people', 'person'],
    ['cities', 'city'],
    ['countries', 'country'],
    ['organisations', 'organisation'],
    ['works', 'work'],
  ];
  for (const [field, type] of counts) {
    const n = spec[field] as number;
    if (!Number.isInteger(n) || n < 1 || n > NAME_POOL_SIZES[type]) {
      throw new UserError(
        `world spec "${field}" is ${n}; it must be an integer from 1 to ${NAME_POOL_SIZES[type]} (the name pool's size)`,
      );
    }
  }
  if (spec.cities < spec.countries) {
    throw new UserError(
      `world spec "cities" (${spec.cities}) must be at least "countries" (${spec.countries}): every country has a capital`,
    );
  }
  const [fMin, fMax] = spec.fillerSentencesPerPage;
  if (!(Number.isInteger(fMin) && Number.isInteger(fMax) && fMin >= 0 && fMax >= fMin)) {
    throw new UserError(`world spec "fillerSentencesPerPage" is [${fMin}, ${fMax}]; it must be integers 0 ≤ min ≤ max`);
  }
  const [tMin, tMax] = spec.pageTokens;
  if (!(tMin >= 0 && tMax >= tMin)) {
    throw new UserError(`world spec "pageTokens" is [${tMin}, ${tMax}]; it must be 0 ≤ min ≤ max`);
  }
  if (!(Number.isInteger(spec.distractorMentions) && spec.distractorMentions >= 0)) {
    throw new UserError(`world spec "distractorMentions" is ${spec.distractorMentions}; it must be an integer ≥ 0`);
  }
  const mentionMin = spec.mentionPageTokens ?? 0;
  if (!(Number.isInteger(mentionMin) && mentionMin >= 0)) {
    throw new UserError(`world spec "mentionPageTokens" is ${mentionMin}; it must be an integer ≥ 0`);
  }
  if (!(spec.longTailFraction >= 0 && spec.longTailFraction < 1)) {
    throw new UserError(`world spec "longTailFraction" is ${spec.longTailFraction}; it must be in [0, 1)`);
  }
  const popularPeople = spec.people - Math.floor(spec.longTailFraction * spec.people);
  if (popularPeople < spec.organisations) {
    throw new UserError(
      `world spec has ${spec.organisations} organisations but only ${popularPeople} non-long-tail people to lead them; raise "people" or lower "longTailFraction"`,
    );
  }
  if (!(Number.isInteger(spec.questionsPerFamily) && spec.questionsPerFamily >= 0)) {
    throw new UserError(`world spec "questionsPerFamily" is ${spec.questionsPerFamily}; it must be an integer ≥ 0`);
  }
}

function drawEntities(rng: Rng, spec: WorldSpec): Entity[] {
  const pool = namePool();
  const wanted: Record<EntityType, number> = {
    person: spec.people,
    city: spec.cities,
    country: spec.countries,
    organisation: spec.organisations,
    work: spec.works,
  };
  const entities: Entity[] = [];
  for (const type of ENTITY_TYPES) {
    const names = shuffle(rng.split(type), [...pool[type]]).slice(0, wanted[type]);
    names.forEach((name, i) =>
      entities.push({ id: `${type}-${String(i).padStart(3, '0')}`, type, name, longTail: false }),
    );
  }
  const ltRng = rng.split('long-tail');
  for (const type of ['person', 'work'] as const) {
    const ofType = entities.filter((e) => e.type === type);
    for (const e of shuffle(ltRng, ofType).slice(0, Math.floor(spec.longTailFraction * ofType.length))) {
      e.longTail = true;
    }
  }
  return entities;
}

/** The world's facts (docs/algorithms.md §2.1 search tool), in entity order then RELATIONS order. */
function drawFacts(rng: Rng, entities: readonly Entity[]): Fact[] {
  const of = (type: EntityType) => entities.filter((e) => e.type === type);
  const [people, cities, countries, orgs, works] = [
    of('person'),
    of('city'),
    of('country'),
    of('organisation'),
    of('work'),
  ];
  const popular = people.filter((p) => !p.longTail);
  const facts: Fact[] = [];

  const capitals = shuffle(rng.split('capitals'), [...cities]).slice(0, countries.length);
  const cityRng = rng.split('cities');
  const countryOf = new Map<string, string>();
  capitals.forEach((c, i) => countryOf.set(c.id, countries[i]!.id));
  for (const c of cities) if (!countryOf.has(c.id)) countryOf.set(c.id, pick(cityRng, countries).id);

  const personRng = rng.split('people');
  const bornYear = new Map<string, number>();
  for (const p of people) bornYear.set(p.id, 1700 + personRng.int(270));
  const leaders = shuffle(rng.split('leaders'), [...popular]).slice(0, orgs.length);
  const leaderOf = new Map(leaders.map((p, i) => [p.id, orgs[i]!.id]));
  const workRng = rng.split('works');
  const authorOf = new Map<string, string>(works.map((w) => [w.id, pick(workRng, popular).id]));

  for (const p of people) {
    facts.push({ subject: p.id, relation: 'bornIn', object: pick(personRng, cities).id });
    facts.push({ subject: p.id, relation: 'bornYear', object: String(bornYear.get(p.id)) });
    const org = leaderOf.get(p.id);
    if (org !== undefined) facts.push({ subject: p.id, relation: 'leaderOf', object: org });
    for (const w of works) {
      if (authorOf.get(w.id) === p.id) facts.push({ subject: p.id, relation: 'authorOf', object: w.id });
    }
  }
  for (const c of cities) {
    facts.push({ subject: c.id, relation: 'locatedIn', object: countryOf.get(c.id)! });
    const i = capitals.indexOf(c);
    if (i >= 0) facts.push({ subject: c.id, relation: 'capitalOf', object: countries[i]!.id });
  }
  const orgRng = rng.split('organisations');
  for (const o of orgs) {
    facts.push({ subject: o.id, relation: 'foundedIn', object: String(1600 + orgRng.int(390)) });
    facts.push({ subject: o.id, relation: 'headquarteredIn', object: pick(orgRng, cities).id });
  }
  for (const w of works) {
    // Published in the author's adult life, so the world stays plausible.
    const year = Math.min(1999, bornYear.get(authorOf.get(w.id)!)! + 20 + workRng.int(50));
    facts.push({ subject: w.id, relation: 'publishedIn', object: String(year) });
  }
  const order = (r: Relation) => RELATIONS.indexOf(r);
  const entityOrder = new Map(entities.map((e, i) => [e.id, i]));
  facts.sort(
    (a, b) => entityOrder.get(a.subject)! - entityOrder.get(b.subject)! || order(a.relation) - order(b.relation),
  );
  return facts;
}

/** The text of a fact, in the wording for the subject's page or the object's page. */
function factSentence(
  fact: Fact,
  names: ReadonlyMap<string, string>,
  onPageOf: 'subject' | 'object',
  rng: Rng,
): string {
  const schema = RELATION_SCHEMA[fact.relation];
  const o = schema.object === 'year' ? yearText(fact.object) : names.get(fact.object)!;
  const templates = onPageOf === 'subject' ? schema.forward : schema.inverse;
  return fillTemplate(pick(rng, templates), { s: names.get(fact.subject)!, o });
}

function entityPage(
  entity: Entity,
  facts: readonly Fact[],
  names: ReadonlyMap<string, string>,
  spec: WorldSpec,
  rng: Rng,
): Page {
  const n = entity.name;
  const factSentences: string[] = [];
  for (const f of facts) {
    if (f.subject === entity.id) factSentences.push(factSentence(f, names, 'subject', rng));
    else if (f.object === entity.id) factSentences.push(factSentence(f, names, 'object', rng));
  }
  const ownFillers = [...TYPED_FILLERS[entity.type], ...GENERIC_FILLERS].map((t) => fillTemplate(t, { n }));
  const fillerPool = shuffle(rng, ownFillers.slice());
  const [fMin, fMax] = spec.fillerSentencesPerPage;
  let fillers = fillerPool.splice(0, fMin + rng.int(fMax - fMin + 1));
  const intro = fillTemplate(INTRO_TEMPLATES[entity.type], { n });
  const length = () => tokenCount(intro) + [...factSentences, ...fillers].reduce((s, t) => s + tokenCount(t), 0);
  while (length() < spec.pageTokens[0]) {
    // A page longer than its type's fillers (the mars-overflow worlds) draws them again, in a fresh order; shorter
    // pages never reach this, so their worlds are what they were.
    if (fillerPool.length === 0) fillerPool.push(...shuffle(rng, ownFillers.slice()));
    fillers.push(fillerPool.shift()!);
  }
  while (length() > spec.pageTokens[1] && fillers.length > 0) fillers = fillers.slice(0, -1);
  // The facts sit at random places among the fillers, so a reader has to scan the page rather than its first lines.
  const body = shuffle(rng, [...factSentences, ...fillers]);
  return { id: `page-${entity.id}`, title: n, entityId: entity.id, kind: 'entity', text: [intro, ...body].join(' ') };
}

/** Inserts generic fillers at random places until the mention page has at least `min` tokens (0: nothing). */
function padMention(sentences: string[], min: number, rng: Rng): void {
  let length = sentences.reduce((s, t) => s + tokenCount(t), 0);
  let pool: string[] = [];
  while (length < min) {
    if (pool.length === 0) pool = shuffle(rng, [...GENERIC_FILLERS]);
    const f = pool.shift()!;
    sentences.splice(rng.int(sentences.length + 1), 0, f);
    length += tokenCount(f);
  }
}

function mentionPages(entities: readonly Entity[], spec: WorldSpec, rng: Rng): Page[] {
  const popular = entities.filter((e) => !e.longTail);
  // its own stream: worlds without padding draw exactly what they drew before it existed
  const padRng = rng.split('padding');
  const pages: Page[] = [];
  for (let round = 0; round < spec.distractorMentions; round++) {
    // One round names every popular entity once, so each is on exactly `distractorMentions` pages.
    const order = shuffle(rng, [...popular]);
    while (order.length > 0) {
      let size = 3 + rng.int(3);
      if (order.length - size < 3) size = order.length <= 5 ? order.length : order.length - 3;
      const group = order.splice(0, size);
      const sentences: string[] = [];
      for (let i = 0; i < group.length;) {
        if (i + 1 < group.length && rng.next() < 0.4) {
          sentences.push(fillTemplate(pick(rng, MENTION_TEMPLATES_TWO), { a: group[i]!.name, b: group[i + 1]!.name }));
          i += 2;
        } else {
          sentences.push(fillTemplate(pick(rng, MENTION_TEMPLATES_ONE), { a: group[i]!.name }));
          i += 1;
        }
      }
      const fillers = shuffle(rng, [...GENERIC_FILLERS]).slice(0, 1 + rng.int(3));
      const sentencesOfPage = shuffle(rng, [...sentences, ...fillers]);
      padMention(sentencesOfPage, spec.mentionPageTokens ?? 0, padRng);
      const text = sentencesOfPage.join(' ');
      pages.push({
        id: `mention-${String(pages.length).padStart(3, '0')}`,
        title: pick(rng, MENTION_TITLES),
        entityId: null,
        kind: 'mention',
        text,
      });
    }
  }
  return pages;
}

/** A fictional world from `seed` (docs/algorithms.md §2.1 search tool). Deterministic: the same seed and spec give the
 * same world, on every machine. */
export function generateWorld(seed: number, spec: Partial<WorldSpec> = {}): World {
  const full: WorldSpec = {
    ...DEFAULT_WORLD_SPEC,
    ...spec,
    fillerSentencesPerPage: [...(spec.fillerSentencesPerPage ?? DEFAULT_WORLD_SPEC.fillerSentencesPerPage)] as [
      number,
      number,
    ],
    pageTokens: [...(spec.pageTokens ?? DEFAULT_WORLD_SPEC.pageTokens)] as [number, number],
  };
  checkSpec(full);
  const rng = new Rng(seed);
  const entities = drawEntities(rng.split('entities'), full);
  const facts = drawFacts(rng.split('facts'), entities);
  const names = new Map(entities.map((e) => [e.id, e.name]));
  const pageRng = rng.split('pages');
  const pages = entities.map((e) => entityPage(e, facts, names, full, pageRng));
  pages.push(...mentionPages(entities, full, rng.split('mentions')));
  const questions = generateQuestions({ entities, facts, pages }, rng.split('questions'), full.questionsPerFamily);
  return { seed, spec: full, entities, facts, pages, questions };
}
