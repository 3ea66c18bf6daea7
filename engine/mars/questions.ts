/**
 * Questions over a MARS world (docs/algorithms.md §2.1, §2.4), in seven families that mirror the paper's seven QA
 * benchmarks:
 *
 *   direct        (NQ)          one fact, canonical wording: "where was vorana born ?"
 *   paraphrase    (TriviaQA)    one fact, trivia-style rewording: "which city is the birthplace of vorana ?"
 *   longTail      (PopQA)       one fact about a long-tail entity (no mention pages, in no other family); the
 *                               wording is the direct one, so the two families differ only in popularity
 *   bridge        (HotpotQA)    two hops through a described entity: "where was the author of kelmor born ?"
 *   comparison    (2WikiMQA)    two facts compared: "which was founded first , a or b ?" (never a tie)
 *   threeHop      (MuSiQue)     three hops: "in which country is the birthplace of the author of kelmor ?"
 *   compositional (Bamboogle)   two easy parts, the first answer plugged into a reverse look-up of the second:
 *                               "who was born in the headquarters city of drathos ?" (asked only where
 *                               exactly one entity qualifies)
 *
 * Every question is unambiguous (each step has exactly one result in the world) and answerable from the corpus:
 * `support` lists the entity pages to read in order, and `solveFromSupport` answers mechanically from those pages
 * alone. Answers: the gold text first, then aliases: a city or country X is also "the city of X" / "the country of
 * X", a year Y also "the year Y"; people, organisations and works have no alias (their names are single words).
 * Years are in token form ("1 9 5 2"); answerScoring.ts treats "1952" as the same answer.
 */
import { MARS_FAMILIES } from '../pure/marsFamilies';
import type { Rng } from '../random/prng';
import type { Entity, Fact, Page } from './world';
import {
  ANSWER_ALIAS_PREFIX,
  COMPARISON_QUESTIONS,
  DESCRIPTORS,
  DIRECT_QUESTIONS,
  LOOKUP_QUESTIONS,
  PARAPHRASE_QUESTIONS,
  RELATION_SCHEMA,
  fillTemplate,
  yearText,
  type Direction,
  type EntityType,
  type Relation,
} from './worldTemplates';

export const QUESTION_FAMILIES = MARS_FAMILIES;
export type QuestionFamily = (typeof QUESTION_FAMILIES)[number];

export const SINGLE_HOP_FAMILIES: readonly QuestionFamily[] = ['direct', 'paraphrase', 'longTail'];
export const MULTI_HOP_FAMILIES: readonly QuestionFamily[] = ['bridge', 'comparison', 'threeHop', 'compositional'];

export function isSingleHop(family: QuestionFamily): boolean {
  return SINGLE_HOP_FAMILIES.includes(family);
}

export interface Question {
  /** `${family}-${index}`, unique within the world. */
  id: string;
  family: QuestionFamily;
  /** 1 for single-hop families; 2 for bridge, comparison and compositional; 3 for threeHop. */
  hops: number;
  text: string;
  /** Gold answer first, then aliases, all in token form. */
  answers: string[];
  /** The pages a solver must read, in order (one per hop). */
  support: string[];
  /** The facts used, one per hop, in reading order. */
  chain: Fact[];
  /** Comparison questions only: whether the answer is the one with the earlier or the later year. */
  compare?: 'earlier' | 'later';
}

export interface WorldContent {
  entities: readonly Entity[];
  facts: readonly Fact[];
  pages: readonly Page[];
}

/** One step from a known entity along a fact. */
interface Step {
  fact: Fact;
  /** The entity id or year ("1952") reached. */
  value: string;
}

class FactIndex {
  readonly byId: Map<string, Entity>;
  private readonly bySubject = new Map<string, Fact[]>();
  private readonly byObject = new Map<string, Fact[]>();

  constructor(world: WorldContent) {
    this.byId = new Map(world.entities.map((e) => [e.id, e]));
    for (const f of world.facts) {
      push(this.bySubject, f.subject, f);
      push(this.byObject, f.object, f);
    }
  }

  steps(from: string, relation: Relation, direction: Direction): Step[] {
    const facts = (direction === 'forward' ? this.bySubject : this.byObject).get(from) ?? [];
    return facts
      .filter((f) => f.relation === relation)
      .map((fact) => ({ fact, value: direction === 'forward' ? fact.object : fact.subject }));
  }

  /** The single result of a step, or undefined when there are none or several. */
  unique(from: string, relation: Relation, direction: Direction): Step | undefined {
    const steps = this.steps(from, relation, direction);
    return steps.length === 1 ? steps[0] : undefined;
  }

  isPopularEntity(value: string): boolean {
    const e = this.byId.get(value);
    return e === undefined || !e.longTail; // years are never long-tail
  }
}

function push<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [value]);
  else list.push(value);
}

/** Whether a step of `relation` in `direction` can start from an entity of `type`. */
function startsFrom(relation: Relation, direction: Direction, type: EntityType): boolean {
  const schema = RELATION_SCHEMA[relation];
  return (direction === 'forward' ? schema.subject : schema.object) === type;
}

function pageId(entityId: string): string {
  return `page-${entityId}`;
}

/** Gold and aliases for an answer value (entity id or year), as documented at the top of this file. */
export function answerAliases(value: string, byId: ReadonlyMap<string, Entity>): string[] {
  const e = byId.get(value);
  const text = e === undefined ? yearText(value) : e.name;
  const prefix = ANSWER_ALIAS_PREFIX[e === undefined ? 'year' : e.type];
  return prefix === undefined ? [text] : [text, `${prefix} ${text}`];
}

interface Draft {
  text: string;
  answer: string;
  support: string[];
  chain: Fact[];
  compare?: 'earlier' | 'later';
}

type Phrase = { text: string; entity: Entity; support: string[]; chain: Fact[] };

/** Entities reachable from `e` by one descriptor ("the author of kelmor"), with the phrase that names them. */
function describe(index: FactIndex, from: Phrase): Phrase[] {
  const out: Phrase[] = [];
  for (const d of DESCRIPTORS) {
    if (!startsFrom(d.relation, d.direction, from.entity.type)) continue;
    const step = index.unique(from.entity.id, d.relation, d.direction);
    if (step === undefined) continue;
    const target = index.byId.get(step.value);
    if (target === undefined || target.longTail) continue;
    out.push({
      text: fillTemplate(d.text, { x: from.text }),
      entity: target,
      support: [...from.support, pageId(target.id)],
      chain: [...from.chain, step.fact],
    });
  }
  return out;
}

/** Questions closing a phrase with one more step, or none where the step is not unique or revisits an entity. */
function close(
  index: FactIndex,
  phrase: Phrase,
  templates: ReadonlyArray<{ relation: Relation; direction: Direction; text: string }>,
): Draft[] {
  const out: Draft[] = [];
  const visited = new Set(phrase.chain.flatMap((f) => [f.subject, f.object]));
  visited.add(phrase.entity.id);
  for (const q of templates) {
    if (!startsFrom(q.relation, q.direction, phrase.entity.type)) continue;
    const step = index.unique(phrase.entity.id, q.relation, q.direction);
    if (step === undefined || !index.isPopularEntity(step.value)) continue;
    if (phrase.chain.length > 0 && visited.has(step.value)) continue;
    out.push({
      text: fillTemplate(q.text, { x: phrase.text }),
      answer: step.value,
      support: phrase.support,
      chain: [...phrase.chain, step.fact],
    });
  }
  return out;
}

function namePhrase(e: Entity): Phrase {
  return { text: e.name, entity: e, support: [pageId(e.id)], chain: [] };
}

function comparisonDrafts(index: FactIndex, entities: readonly Entity[], rng: Rng): Draft[] {
  const out: Draft[] = [];
  for (const q of COMPARISON_QUESTIONS) {
    const type = RELATION_SCHEMA[q.relation].subject;
    const members = entities.filter((e) => e.type === type && !e.longTail);
    for (let i = 0; i < members.length; i++) {
      for (let j = i + 1; j < members.length; j++) {
        const [sa, sb] = [
          index.unique(members[i]!.id, q.relation, 'forward'),
          index.unique(members[j]!.id, q.relation, 'forward'),
        ];
        if (sa === undefined || sb === undefined || sa.value === sb.value) continue;
        // Which name comes first in the text is random, so position says nothing about the answer.
        const swap = rng.next() < 0.5;
        const [a, b, fa, fb] = swap ? [members[j]!, members[i]!, sb, sa] : [members[i]!, members[j]!, sa, sb];
        const aWins = Number(fa.value) < Number(fb.value) === (q.compare === 'earlier');
        out.push({
          text: fillTemplate(q.text, { a: a.name, b: b.name }),
          answer: aWins ? a.id : b.id,
          support: [pageId(a.id), pageId(b.id)],
          chain: [fa.fact, fb.fact],
          compare: q.compare,
        });
      }
    }
  }
  return out;
}

function familyDrafts(family: QuestionFamily, index: FactIndex, entities: readonly Entity[], rng: Rng): Draft[] {
  const popular = entities.filter((e) => !e.longTail);
  switch (family) {
    case 'direct':
      return popular.flatMap((e) => close(index, namePhrase(e), DIRECT_QUESTIONS));
    case 'paraphrase':
      // One rewording per entity and fact, drawn at random, so every wording is asked about.
      return popular.flatMap((e) =>
        close(
          index,
          namePhrase(e),
          PARAPHRASE_QUESTIONS.map((p) => ({
            relation: p.relation,
            direction: p.direction,
            text: p.texts[rng.int(p.texts.length)]!,
          })),
        ),
      );
    case 'longTail':
      return entities.filter((e) => e.longTail).flatMap((e) => close(index, namePhrase(e), DIRECT_QUESTIONS));
    case 'bridge':
      return popular.flatMap((e) => describe(index, namePhrase(e)).flatMap((p) => close(index, p, DIRECT_QUESTIONS)));
    case 'threeHop':
      return popular.flatMap((e) =>
        describe(index, namePhrase(e))
          .flatMap((p) => describe(index, p).filter((q) => q.entity.id !== e.id))
          .flatMap((p) => close(index, p, DIRECT_QUESTIONS)),
      );
    case 'compositional':
      return popular.flatMap((e) => describe(index, namePhrase(e)).flatMap((p) => close(index, p, LOOKUP_QUESTIONS)));
    case 'comparison':
      return comparisonDrafts(index, entities, rng);
  }
}

function shuffle<T>(rng: Rng, xs: T[]): T[] {
  for (let i = xs.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [xs[i], xs[j]] = [xs[j]!, xs[i]!];
  }
  return xs;
}

/** Up to `perFamily` questions of each family (docs/algorithms.md §2.1), deterministic for a given `rng` seed. */
export function generateQuestions(world: WorldContent, rng: Rng, perFamily: number): Question[] {
  const index = new FactIndex(world);
  const questions: Question[] = [];
  for (const family of QUESTION_FAMILIES) {
    const familyRng = rng.split(family);
    const drafts = shuffle(familyRng, familyDrafts(family, index, world.entities, familyRng));
    const seen = new Set<string>();
    for (const d of drafts) {
      if (seen.size >= perFamily) break;
      if (seen.has(d.text)) continue;
      seen.add(d.text);
      const q: Question = {
        id: `${family}-${String(seen.size - 1).padStart(3, '0')}`,
        family,
        hops: d.chain.length,
        text: d.text,
        answers: answerAliases(d.answer, index.byId),
        support: d.support,
        chain: d.chain,
      };
      if (d.compare !== undefined) q.compare = d.compare;
      questions.push(q);
    }
  }
  return questions;
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Every value a page states for `relation` from the known end `known` (a name): names, or years in token form.
 * Reads whole sentences only, in either wording (a fact may be stated on the subject's or the object's page).
 */
export function readFact(text: string, relation: Relation, direction: Direction, known: string): string[] {
  const schema = RELATION_SCHEMA[relation];
  const [knownKey, unknownKey] = direction === 'forward' ? ['{s}', '{o}'] : ['{o}', '{s}'];
  const unknownType = direction === 'forward' ? schema.object : schema.subject;
  const capture = unknownType === 'year' ? '(\\d \\d \\d \\d)' : '([a-z]+)';
  const patterns = [...schema.forward, ...schema.inverse].map((t) => {
    const parts = t
      .split(' ')
      .map((w) => (w === knownKey ? escapeRegExp(known) : w === unknownKey ? capture : escapeRegExp(w)));
    return new RegExp(`^${parts.join(' ')}$`);
  });
  const values = new Set<string>();
  const sentences = text.split(/(?<= [.?]) /);
  for (const s of sentences) {
    for (const p of patterns) {
      const m = p.exec(s);
      if (m !== null) values.add(m[1]!);
    }
  }
  return [...values];
}

/**
 * Answers a question by reading only its support pages (docs/algorithms.md §2.1), the way an oracle agent would: from the
 * first page's title, follow each fact of the chain on the page of the entity just found, taking the one value the
 * page states. The chain supplies only the relation and direction of each hop, never a value. Returns the answer in
 * token form, or null when a page is missing, states no value or states several.
 */
export function solveFromSupport(question: Question, pagesById: ReadonlyMap<string, Page>): string | null {
  const pages = question.support.map((id) => pagesById.get(id));
  if (pages.some((p) => p === undefined) || pages.length !== question.chain.length) return null;
  if (question.compare !== undefined) {
    const years = pages.map((p, i) => readFact(p!.text, question.chain[i]!.relation, 'forward', p!.title));
    if (years.some((y) => y.length !== 1)) return null;
    const [ya, yb] = years.map((y) => Number(y[0]!.replace(/ /g, '')));
    if (ya === yb) return null;
    const aWins = ya! < yb! === (question.compare === 'earlier');
    return aWins ? pages[0]!.title : pages[1]!.title;
  }
  let known = pages[0]!.title;
  for (let i = 0; i < pages.length; i++) {
    const page = pages[i]!;
    if (page.title !== known || page.kind !== 'entity') return null;
    const fact = question.chain[i]!;
    const direction: Direction = fact.subject === page.entityId ? 'forward' : 'inverse';
    const values = readFact(page.text, fact.relation, direction, known);
    if (values.length !== 1) return null;
    known = values[0]!;
  }
  return known;
}
