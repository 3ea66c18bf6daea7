import { describe, expect, it } from 'vitest';
import { pretokenise } from '../../../engine/model/tokenizers/wordNormalForm';
import { NAME_POOL_SIZES, allPoolNames, namePool } from '../../../engine/mars/namePool';
import {
  MULTI_HOP_FAMILIES,
  QUESTION_FAMILIES,
  SINGLE_HOP_FAMILIES,
  readFact,
  solveFromSupport,
  type Question,
} from '../../../engine/mars/questions';
import {
  DEFAULT_WORLD_SPEC,
  generateWorld,
  marsVocabulary,
  tokenCount,
  type Fact,
  type World,
} from '../../../engine/mars/world';
import { evalWorldSeeds, trainWorldSeeds } from '../../../engine/mars/worldSplits';
import { RELATION_SCHEMA, templateWords } from '../../../engine/mars/worldTemplates';
import { UserError } from '../../../engine/base/userError';

const SEEDS = [0, 1, 2, 3, 4, 5];
const worlds = new Map<number, World>(SEEDS.map((s) => [s, generateWorld(s)]));
const world = (seed: number): World => worlds.get(seed)!;

/** Facts as readable triples, so worlds can be compared by what they say rather than by ids. */
function factSet(w: World): Set<string> {
  const name = new Map(w.entities.map((e) => [e.id, e.name]));
  return new Set(w.facts.map((f) => `${name.get(f.subject)} ${f.relation} ${name.get(f.object) ?? f.object}`));
}

function allText(w: World): string[] {
  return [...w.pages.flatMap((p) => [p.title, p.text]), ...w.questions.flatMap((q) => [q.text, ...q.answers])];
}

describe('name pool', () => {
  it('is fixed, typed and collision-free: distinct single lowercase words, none a template word', () => {
    const pool = namePool();
    for (const [type, size] of Object.entries(NAME_POOL_SIZES)) {
      expect(pool[type as keyof typeof pool]).toHaveLength(size);
    }
    const names = allPoolNames();
    expect(new Set(names).size).toBe(names.length);
    for (const n of names) expect(n).toMatch(/^[a-z]{4,10}$/);
    const words = new Set(templateWords());
    expect(names.filter((n) => words.has(n))).toEqual([]);
    expect(namePool()).toBe(pool);
  });
});

describe('generateWorld', () => {
  it('is deterministic per seed and different across seeds', () => {
    expect(JSON.stringify(generateWorld(3))).toBe(JSON.stringify(world(3)));
    const a = factSet(world(0));
    const b = factSet(world(1));
    const shared = [...a].filter((f) => b.has(f)).length;
    expect(shared / a.size).toBeLessThan(0.1);
    expect(world(0).questions.map((q) => q.text)).not.toEqual(world(1).questions.map((q) => q.text));
  });

  it("has the spec's entity counts, unique names, one entity page per entity, and every entity-level invariant", () => {
    const w = world(0);
    const count = (t: string) => w.entities.filter((e) => e.type === t).length;
    expect([count('person'), count('city'), count('country'), count('organisation'), count('work')]).toEqual([
      40, 16, 6, 12, 16,
    ]);
    expect(new Set(w.entities.map((e) => e.name)).size).toBe(w.entities.length);
    for (const e of w.entities) expect(w.pages.filter((p) => p.entityId === e.id)).toHaveLength(1);
    const facts = (s: string, r: string) => w.facts.filter((f) => f.subject === s && f.relation === r);
    for (const e of w.entities.filter((x) => x.type === 'person')) {
      expect(facts(e.id, 'bornIn')).toHaveLength(1);
      expect(facts(e.id, 'bornYear')).toHaveLength(1);
    }
    for (const c of w.entities.filter((x) => x.type === 'country')) {
      expect(w.facts.filter((f) => f.relation === 'capitalOf' && f.object === c.id)).toHaveLength(1);
    }
    for (const o of w.entities.filter((x) => x.type === 'organisation')) {
      expect(w.facts.filter((f) => f.relation === 'leaderOf' && f.object === o.id)).toHaveLength(1);
    }
  });

  it("states every fact on its subject's page, and each entity-valued fact also on its object's page", () => {
    for (const seed of SEEDS.slice(0, 3)) {
      const w = world(seed);
      const name = new Map(w.entities.map((e) => [e.id, e.name]));
      const page = new Map(w.pages.map((p) => [p.entityId, p]));
      for (const f of w.facts) {
        const yearObject = RELATION_SCHEMA[f.relation].object === 'year';
        const value = yearObject ? f.object.split('').join(' ') : name.get(f.object)!;
        expect(readFact(page.get(f.subject)!.text, f.relation, 'forward', name.get(f.subject)!)).toContain(value);
        if (!yearObject) {
          expect(readFact(page.get(f.object)!.text, f.relation, 'inverse', name.get(f.object)!)).toContain(
            name.get(f.subject)!,
          );
        }
      }
    }
  });

  it('keeps entity pages within the intended length and mention pages short', () => {
    for (const w of worlds.values()) {
      for (const p of w.pages) {
        const n = tokenCount(p.text);
        if (p.kind === 'entity') {
          expect(n).toBeGreaterThanOrEqual(DEFAULT_WORLD_SPEC.pageTokens[0]);
          expect(n).toBeLessThanOrEqual(DEFAULT_WORLD_SPEC.pageTokens[1]);
        } else {
          expect(n).toBeLessThan(80);
        }
      }
    }
  });

  it('names every popular entity on exactly distractorMentions mention pages and long-tail ones on none', () => {
    const w = world(2);
    const mentions = w.pages.filter((p) => p.kind === 'mention').map((p) => new Set(p.text.split(' ')));
    for (const e of w.entities) {
      const n = mentions.filter((m) => m.has(e.name)).length;
      expect(n).toBe(e.longTail ? 0 : DEFAULT_WORLD_SPEC.distractorMentions);
    }
    expect(w.entities.filter((e) => e.longTail).length).toBe(Math.floor(0.2 * 40) + Math.floor(0.2 * 16));
  });

  it('rejects a spec the name pool cannot fill, naming the field', () => {
    expect(() => generateWorld(1, { people: NAME_POOL_SIZES.person + 1 })).toThrow(UserError);
    expect(() => generateWorld(1, { people: NAME_POOL_SIZES.person + 1 })).toThrow(/"people"/);
    expect(() => generateWorld(1, { cities: 3, countries: 4 })).toThrow(/capital/);
  });
});

describe('vocabulary closure', () => {
  const vocab = marsVocabulary();
  const inVocab = new Set(vocab);

  it('is deterministic, duplicate-free and small enough for a tiny model', () => {
    expect(marsVocabulary()).toEqual(vocab);
    expect(inVocab.size).toBe(vocab.length);
    expect(vocab.length).toBeLessThanOrEqual(1500);
    for (const d of '0123456789') expect(inVocab.has(d)).toBe(true);
  });

  it("covers every token of every page, title, question and answer, already in the word tokenizer's cut", () => {
    const specs = [{}, { people: 120, cities: 40, countries: 12, organisations: 30, works: 50, distractorMentions: 3 }];
    for (const spec of specs) {
      for (const seed of [11, 12, 13]) {
        for (const text of allText(generateWorld(seed, spec))) {
          const tokens = text.split(' ');
          expect(tokens.filter((t) => !inVocab.has(t))).toEqual([]);
          expect(pretokenise(text)).toEqual(tokens);
        }
      }
    }
  });
});

describe('questions', () => {
  it('has every family with a reasonable count in a default world', () => {
    for (const w of worlds.values()) {
      for (const f of QUESTION_FAMILIES) {
        const n = w.questions.filter((q) => q.family === f).length;
        expect(n, `${f} in world ${w.seed}`).toBeGreaterThanOrEqual(f === 'compositional' ? 5 : 15);
        expect(n).toBeLessThanOrEqual(DEFAULT_WORLD_SPEC.questionsPerFamily);
      }
      expect(new Set(w.questions.map((q) => q.id)).size).toBe(w.questions.length);
      expect(new Set(w.questions.map((q) => q.text)).size).toBe(w.questions.length);
    }
  });

  it('gives single-hop families one hop and multi-hop families two or three, one support page and fact per hop', () => {
    for (const q of [...worlds.values()].flatMap((w) => w.questions)) {
      const expected = SINGLE_HOP_FAMILIES.includes(q.family) ? 1 : q.family === 'threeHop' ? 3 : 2;
      expect(q.hops, q.text).toBe(expected);
      expect(q.support).toHaveLength(q.hops);
      expect(q.chain).toHaveLength(q.hops);
      expect(MULTI_HOP_FAMILIES.includes(q.family)).toBe(q.hops > 1);
    }
  });

  it('answers every question from its support pages alone (mechanical solver)', () => {
    for (const w of worlds.values()) {
      const pages = new Map(w.pages.map((p) => [p.id, p]));
      for (const q of w.questions) expect(solveFromSupport(q, pages), `${q.id}: ${q.text}`).toBe(q.answers[0]);
    }
  });

  it('makes multi-hop questions need the later pages: the answer is rarely on the first support page', () => {
    let chained = 0;
    let onFirstPage = 0;
    for (const w of worlds.values()) {
      const pages = new Map(w.pages.map((p) => [p.id, p]));
      for (const q of w.questions.filter((x) => x.hops > 1 && x.compare === undefined)) {
        chained++;
        if (` ${pages.get(q.support[0]!)!.text} `.includes(` ${q.answers[0]} `)) onFirstPage++;
      }
    }
    expect(onFirstPage / chained).toBeLessThan(0.05);
  });

  it('asks only about steps with exactly one result in the whole world (no ambiguous intermediates)', () => {
    for (const w of worlds.values()) {
      const pageEntity = new Map(w.pages.map((p) => [p.id, p.entityId]));
      for (const q of w.questions.filter((x) => x.compare === undefined)) {
        q.chain.forEach((fact: Fact, i) => {
          const known = pageEntity.get(q.support[i]!)!;
          const forward = fact.subject === known;
          const matches = w.facts.filter(
            (f) => f.relation === fact.relation && (forward ? f.subject === known : f.object === known),
          );
          expect(matches, `${q.text} hop ${i}`).toEqual([fact]);
        });
      }
    }
  });

  it('keeps long-tail entities to the longTail family, and comparisons free of ties and position bias', () => {
    for (const w of worlds.values()) {
      const lt = new Set(w.entities.filter((e) => e.longTail).map((e) => e.id));
      for (const q of w.questions) {
        const touched = q.chain.flatMap((f) => [f.subject, f.object]).filter((id) => lt.has(id));
        if (q.family === 'longTail') expect(touched.length).toBeGreaterThan(0);
        else expect(touched, q.text).toEqual([]);
      }
      const comparisons = w.questions.filter((q) => q.family === 'comparison');
      for (const q of comparisons) expect(q.chain[0]!.object).not.toBe(q.chain[1]!.object);
    }
    const all = [...worlds.values()].flatMap((w) => w.questions.filter((q) => q.family === 'comparison'));
    const firstNamed = all.filter((q) => q.text.split(' ').at(-4) === q.answers[0]).length;
    expect(firstNamed / all.length).toBeGreaterThan(0.3);
    expect(firstNamed / all.length).toBeLessThan(0.7);
  });

  it('gives aliases by answer kind: places and years get a prefixed form, names do not', () => {
    const w = world(1);
    const byName = new Map(w.entities.map((e) => [e.name, e]));
    for (const q of w.questions) {
      const [gold, ...aliases] = q.answers;
      const e = byName.get(gold!);
      if (e === undefined) {
        expect(gold).toMatch(/^\d \d \d \d$/);
        expect(aliases).toEqual([`the year ${gold}`]);
      } else if (e.type === 'city' || e.type === 'country') {
        expect(aliases).toEqual([`the ${e.type} of ${gold}`]);
      } else {
        expect(aliases).toEqual([]);
      }
    }
  });

  it('is a function of the seed only through named streams: fewer questions per family give a subset', () => {
    const small = generateWorld(4, { questionsPerFamily: 5 });
    const full = world(4);
    expect(small.pages).toEqual(full.pages);
    for (const f of QUESTION_FAMILIES) {
      const a = small.questions.filter((q: Question) => q.family === f).map((q) => q.text);
      const b = full.questions.filter((q: Question) => q.family === f).map((q) => q.text);
      expect(a).toEqual(b.slice(0, a.length));
    }
  });
});

describe('world splits', () => {
  it('gives disjoint, distinct training and evaluation seeds, stable as the lists grow', () => {
    for (const base of [0, 1, 42, 2 ** 40]) {
      const train = trainWorldSeeds(base, 200);
      const evals = evalWorldSeeds(base, 50);
      expect(new Set(train).size).toBe(200);
      expect(new Set(evals).size).toBe(50);
      expect(train.filter((s) => evals.includes(s))).toEqual([]);
      expect(trainWorldSeeds(base, 10)).toEqual(train.slice(0, 10));
      expect(evalWorldSeeds(base, 10)).toEqual(evals.slice(0, 10));
      for (const s of [...train, ...evals]) expect(Number.isSafeInteger(s) && s >= 0).toBe(true);
    }
    expect(trainWorldSeeds(1, 5)).not.toEqual(trainWorldSeeds(2, 5));
    expect(trainWorldSeeds(1, 0)).toEqual([]);
  });

  it("gives held-out worlds whose facts differ from the training worlds'", () => {
    const [t] = trainWorldSeeds(7, 1);
    const [e] = evalWorldSeeds(7, 1);
    const a = factSet(generateWorld(t!));
    const b = factSet(generateWorld(e!));
    expect([...a].filter((f) => b.has(f)).length / a.size).toBeLessThan(0.1);
  });
});
