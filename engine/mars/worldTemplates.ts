/**
 * The closed language of the synthetic MARS worlds (docs/algorithms.md §2.1, search tool): the relation schema, the
 * sentences that state facts on pages, filler and mention sentences, and the question templates of each family.
 *
 * Every string here is already in token form: lowercase words and punctuation marks separated by single spaces, so
 * `text.split(' ')` is exactly what the word tokenizer cuts. Placeholders are `{s}`/`{o}` (a fact's subject and
 * object), `{n}` (the page's own entity), `{a}`/`{b}` (names on a mention page) and `{x}` (what a question asks
 * about: a name, a year or a descriptor phrase). Nothing outside this file and the name pool adds words, so the
 * vocabulary (`marsVocabulary`, world.ts) is the words listed here plus the names and the ten digits.
 *
 * Fact sentences must stay unambiguous when read back (questions.ts `readFact` parses them): no filler or intro
 * sentence may use the wording of a fact template.
 */

export const ENTITY_TYPES = ['person', 'city', 'country', 'organisation', 'work'] as const;
export type EntityType = (typeof ENTITY_TYPES)[number];

export const RELATIONS = [
  'bornIn',
  'bornYear',
  'locatedIn',
  'capitalOf',
  'foundedIn',
  'headquarteredIn',
  'leaderOf',
  'authorOf',
  'publishedIn',
] as const;
export type Relation = (typeof RELATIONS)[number];

export interface RelationSchema {
  subject: EntityType;
  /** An entity type, or 'year' for a four-digit year written as four digit tokens ("1 9 5 2"). */
  object: EntityType | 'year';
  /** Sentences on the subject's page. */
  forward: readonly string[];
  /** Sentences on the object's page (entity objects only), so each entity's page holds every fact it is part of. */
  inverse: readonly string[];
}

export const RELATION_SCHEMA: Readonly<Record<Relation, RelationSchema>> = {
  bornIn: {
    subject: 'person',
    object: 'city',
    forward: ['{s} was born in {o} .', '{s} is a native of {o} .'],
    inverse: ['{o} is the birthplace of {s} .'],
  },
  bornYear: {
    subject: 'person',
    object: 'year',
    forward: ['{s} was born in the year {o} .', 'the birth year of {s} is {o} .'],
    inverse: [],
  },
  locatedIn: {
    subject: 'city',
    object: 'country',
    forward: ['{s} is a city in {o} .', '{s} lies in the country of {o} .'],
    inverse: ['{o} contains the city of {s} .'],
  },
  capitalOf: {
    subject: 'city',
    object: 'country',
    forward: ['{s} is the capital of {o} .'],
    inverse: ['the capital of {o} is {s} .'],
  },
  foundedIn: {
    subject: 'organisation',
    object: 'year',
    forward: ['{s} was founded in the year {o} .', '{s} was established in {o} .'],
    inverse: [],
  },
  headquarteredIn: {
    subject: 'organisation',
    object: 'city',
    forward: ['{s} is headquartered in {o} .', 'the headquarters of {s} are in {o} .'],
    inverse: ['{o} is home to the headquarters of {s} .'],
  },
  leaderOf: {
    subject: 'person',
    object: 'organisation',
    forward: ['{s} is the leader of {o} .', '{s} leads {o} .'],
    inverse: ['{o} is led by {s} .', 'the leader of {o} is {s} .'],
  },
  authorOf: {
    subject: 'person',
    object: 'work',
    forward: ['{s} is the author of {o} .', '{s} wrote {o} .'],
    inverse: ['{o} was written by {s} .', 'the author of {o} is {s} .'],
  },
  publishedIn: {
    subject: 'work',
    object: 'year',
    forward: ['{s} was published in the year {o} .', '{s} first appeared in {o} .'],
    inverse: [],
  },
};

/** The first sentence of an entity's page: says what kind of thing the title is. */
export const INTRO_TEMPLATES: Readonly<Record<EntityType, string>> = {
  person: '{n} is a person of some renown .',
  city: '{n} is a town of some size .',
  country: '{n} is a nation with a long history .',
  organisation: '{n} is an organisation .',
  work: '{n} is a written work .',
};

/** Filler sentences about the page's entity; they name it (so its page ranks first for its name) but state no fact. */
export const TYPED_FILLERS: Readonly<Record<EntityType, readonly string[]>> = {
  person: [
    '{n} enjoyed long walks along the river .',
    '{n} kept a small garden with many herbs .',
    'friends described {n} as patient and curious .',
    '{n} often spoke at public meetings .',
    '{n} collected old coins and maps .',
    'as a child {n} loved music and stories .',
    '{n} travelled widely in later life .',
    '{n} exchanged letters with many scholars .',
    '{n} was known for a quiet sense of humour .',
    'in old age {n} lived in a modest house .',
    '{n} learned several languages .',
    'a portrait of {n} hangs in a public hall .',
  ],
  city: [
    '{n} has a busy market near the old bridge .',
    'the streets of {n} are narrow and winding .',
    '{n} is known for its stone towers .',
    'the river near {n} floods in some years .',
    'many families in {n} keep small boats .',
    '{n} holds a large fair every autumn .',
    'the old walls of {n} still stand in places .',
    'the harbour of {n} is small but busy .',
    '{n} has several public gardens .',
    'travellers praise the bread of {n} .',
  ],
  country: [
    '{n} has wide plains and high mountains .',
    'the climate of {n} varies from north to south .',
    '{n} trades grain , wool and timber .',
    'the flag of {n} shows a green field .',
    '{n} has a long coast with many islands .',
    'the people of {n} speak several dialects .',
    '{n} is famous for its festivals .',
    'the roads of {n} were improved over many years .',
  ],
  organisation: [
    '{n} employs many clerks and engineers .',
    'the members of {n} meet twice a year .',
    '{n} issues a short annual report .',
    '{n} supports schools and libraries .',
    '{n} has offices in several towns .',
    'the records of {n} are kept in a large archive .',
    '{n} grew slowly during its early decades .',
    '{n} is known for careful and honest work .',
  ],
  work: [
    'critics praised the style of {n} .',
    '{n} tells the story of a long journey .',
    'many readers found {n} hard to follow .',
    '{n} has been translated into several languages .',
    'the first pages of {n} describe a winter storm .',
    '{n} is still read in many schools .',
    'some copies of {n} contain small drawings .',
    '{n} was discussed in many reviews .',
  ],
};

/** Filler sentences that name nothing. */
export const GENERIC_FILLERS: readonly string[] = [
  'the weather in the region is often mild .',
  'many old records from that time were lost .',
  'scholars still disagree about some details .',
  'the local archive keeps several letters on the subject .',
  'a short report on this appeared in a regional paper .',
  'visitors often ask about the history of the area .',
  'some of the early documents are hard to read .',
  'the story has been told in many different ways .',
  'little else is known from the oldest sources .',
  'later accounts add a few colourful details .',
  'the matter was discussed at length in a public lecture .',
  'several travellers left brief descriptions .',
  'a small museum displays a few related objects .',
  'the subject remains popular with students .',
  'there are many maps of the surrounding hills .',
  'most of the surviving notes are very short .',
];

/** Distractor sentences on mention pages: they name an entity without stating any fact about it. */
export const MENTION_TEMPLATES_ONE: readonly string[] = [
  'the name {a} appears in an old letter .',
  'an old song mentions {a} .',
  'a recent article refers to {a} in passing .',
  '{a} is mentioned briefly in a guide book .',
  'some people still talk about {a} .',
  'a student wrote an essay about {a} .',
];

export const MENTION_TEMPLATES_TWO: readonly string[] = [
  '{a} is sometimes confused with {b} .',
  'a traveller once compared {a} with {b} .',
  '{a} and {b} were both discussed at a public lecture .',
  'an old map shows {a} next to {b} .',
];

/** Titles of mention pages; none is a name, so a name query never matches a mention page's title. */
export const MENTION_TITLES: readonly string[] = [
  'travel notes',
  'old letters',
  'a guide book',
  'market gossip',
  'lecture notes',
  'an almanac',
  'letters to the editor',
  'a traveller diary',
];

/** A step along a fact: from the subject to the object ('forward') or back ('inverse'). */
export type Direction = 'forward' | 'inverse';

/** The canonical (NQ-like) question for one step, `{x}` being the known end. Also used by bridge and three-hop
 * questions, where `{x}` is a descriptor phrase, and by long-tail questions, whose phrasing is deliberately the
 * direct one so that the two families differ only in how often the entity is mentioned. */
export const DIRECT_QUESTIONS: ReadonlyArray<{ relation: Relation; direction: Direction; text: string }> = [
  { relation: 'bornIn', direction: 'forward', text: 'where was {x} born ?' },
  { relation: 'bornYear', direction: 'forward', text: 'when was {x} born ?' },
  { relation: 'locatedIn', direction: 'forward', text: 'in which country is {x} ?' },
  { relation: 'capitalOf', direction: 'inverse', text: 'what is the capital of {x} ?' },
  { relation: 'foundedIn', direction: 'forward', text: 'when was {x} founded ?' },
  { relation: 'headquarteredIn', direction: 'forward', text: 'where is {x} headquartered ?' },
  { relation: 'leaderOf', direction: 'inverse', text: 'who leads {x} ?' },
  { relation: 'leaderOf', direction: 'forward', text: 'which organisation does {x} lead ?' },
  { relation: 'authorOf', direction: 'inverse', text: 'who wrote {x} ?' },
  { relation: 'publishedIn', direction: 'forward', text: 'when was {x} published ?' },
];

/** Trivia-style rewordings (TriviaQA-like) of the direct questions; `{x}` is always a name. */
export const PARAPHRASE_QUESTIONS: ReadonlyArray<{
  relation: Relation;
  direction: Direction;
  texts: readonly string[];
}> = [
  {
    relation: 'bornIn',
    direction: 'forward',
    texts: ['in which city was {x} born ?', 'which city is the birthplace of {x} ?', '{x} was born in what city ?'],
  },
  {
    relation: 'bornYear',
    direction: 'forward',
    texts: ['in what year was {x} born ?', '{x} was born in which year ?'],
  },
  {
    relation: 'locatedIn',
    direction: 'forward',
    texts: ['{x} is a city in which country ?', 'which country is {x} located in ?'],
  },
  {
    relation: 'capitalOf',
    direction: 'inverse',
    texts: ['which city is the capital of {x} ?', '{x} has which city as its capital ?'],
  },
  {
    relation: 'foundedIn',
    direction: 'forward',
    texts: ['in what year was {x} established ?', '{x} was founded in which year ?'],
  },
  {
    relation: 'headquarteredIn',
    direction: 'forward',
    texts: ['in which city does {x} have its headquarters ?', 'the headquarters of {x} are in which city ?'],
  },
  { relation: 'leaderOf', direction: 'inverse', texts: ['who is the leader of {x} ?', '{x} is led by whom ?'] },
  { relation: 'leaderOf', direction: 'forward', texts: ['{x} is the leader of which organisation ?'] },
  { relation: 'authorOf', direction: 'inverse', texts: ['who is the author of {x} ?', '{x} was written by whom ?'] },
  {
    relation: 'publishedIn',
    direction: 'forward',
    texts: ['in what year did {x} first appear ?', '{x} was published in which year ?'],
  },
];

/** Phrases that name an entity by a step from another (`{x}`), for bridge and three-hop questions. Only steps whose
 * result is unique for every start entity that has it are listed (one author per work, one birthplace per person…). */
export const DESCRIPTORS: ReadonlyArray<{ relation: Relation; direction: Direction; text: string }> = [
  { relation: 'authorOf', direction: 'inverse', text: 'the author of {x}' },
  { relation: 'leaderOf', direction: 'inverse', text: 'the leader of {x}' },
  { relation: 'bornIn', direction: 'forward', text: 'the birthplace of {x}' },
  { relation: 'headquarteredIn', direction: 'forward', text: 'the headquarters city of {x}' },
  { relation: 'leaderOf', direction: 'forward', text: 'the organisation led by {x}' },
  { relation: 'locatedIn', direction: 'forward', text: 'the country where {x} lies' },
  { relation: 'capitalOf', direction: 'inverse', text: 'the capital of {x}' },
];

/** Reverse look-ups ("which entity has this property?") that close a compositional (Bamboogle-like) question. They
 * are unique only by chance in a given world, so questions.ts asks them only where exactly one entity qualifies. */
export const LOOKUP_QUESTIONS: ReadonlyArray<{ relation: Relation; direction: Direction; text: string }> = [
  { relation: 'bornIn', direction: 'inverse', text: 'who was born in {x} ?' },
  { relation: 'headquarteredIn', direction: 'inverse', text: 'which organisation is headquartered in {x} ?' },
  { relation: 'authorOf', direction: 'forward', text: 'which work did {x} write ?' },
  { relation: 'locatedIn', direction: 'inverse', text: 'which city lies in {x} ?' },
];

/** Comparison (2WikiMultihopQA-like) questions over a year-valued relation; `{a}`, `{b}` are the two names. */
export const COMPARISON_QUESTIONS: ReadonlyArray<{ relation: Relation; compare: 'earlier' | 'later'; text: string }> = [
  { relation: 'bornYear', compare: 'earlier', text: 'who was born first , {a} or {b} ?' },
  { relation: 'bornYear', compare: 'later', text: 'who was born later , {a} or {b} ?' },
  { relation: 'foundedIn', compare: 'earlier', text: 'which was founded first , {a} or {b} ?' },
  { relation: 'foundedIn', compare: 'later', text: 'which was founded later , {a} or {b} ?' },
  { relation: 'publishedIn', compare: 'earlier', text: 'which was published first , {a} or {b} ?' },
  { relation: 'publishedIn', compare: 'later', text: 'which was published later , {a} or {b} ?' },
];

/** Alias prefixes: an answer of this kind is also accepted with the prefix ("the city of tessel"). */
export const ANSWER_ALIAS_PREFIX: Readonly<Partial<Record<EntityType | 'year', string>>> = {
  city: 'the city of',
  country: 'the country of',
  year: 'the year',
};

/** "1952" → "1 9 5 2": the token form of a year. */
export function yearText(year: string): string {
  return year.split('').join(' ');
}

/** Replaces each `{k}` placeholder by `values[k]`; a missing value is a programming error. */
export function fillTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{([a-z])\}/g, (_whole, key: string) => {
    const v = values[key];
    if (v === undefined) throw new Error(`template "${template}" needs a value for {${key}}`);
    return v;
  });
}

export const DIGITS: readonly string[] = ['0', '1', '2', '3', '4', '5', '6', '7', '8', '9'];

/** Every word and punctuation mark the templates can produce, placeholders excluded, in code point order. */
export function templateWords(): string[] {
  const texts: string[] = [];
  for (const schema of Object.values(RELATION_SCHEMA)) texts.push(...schema.forward, ...schema.inverse);
  texts.push(...Object.values(INTRO_TEMPLATES));
  for (const list of Object.values(TYPED_FILLERS)) texts.push(...list);
  texts.push(...GENERIC_FILLERS, ...MENTION_TEMPLATES_ONE, ...MENTION_TEMPLATES_TWO, ...MENTION_TITLES);
  texts.push(...DIRECT_QUESTIONS.map((q) => q.text), ...PARAPHRASE_QUESTIONS.flatMap((q) => q.texts));
  texts.push(
    ...DESCRIPTORS.map((d) => d.text),
    ...LOOKUP_QUESTIONS.map((q) => q.text),
    ...COMPARISON_QUESTIONS.map((q) => q.text),
  );
  texts.push(...Object.values(ANSWER_ALIAS_PREFIX));
  const words = new Set<string>();
  for (const text of texts) for (const w of text.split(' ')) if (!/^\{[a-z]\}$/.test(w)) words.add(w);
  return [...words].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
