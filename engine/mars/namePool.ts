/**
 * The shared pool of invented names for the MARS worlds (docs/algorithms.md §2.1, synthetic search tool).
 *
 * The pool is built once from syllables with a fixed generator seed, independent of any world's seed, so that every
 * world (training or evaluation) uses the same closed vocabulary while drawing its own entities from it: the same
 * name means different things in different worlds, and a model cannot answer from its weights.
 *
 * Names are single lowercase words of 2–3 syllables (4–10 letters), all distinct, and none equal to a template word.
 * Each entity type has its own slice of the pool, so a name is always, say, a person's name.
 */
import { Rng } from '../random/prng';
import { templateWords, type EntityType } from './worldTemplates';

/** How many names each type has: the largest world a spec may ask for. */
export const NAME_POOL_SIZES: Readonly<Record<EntityType, number>> = {
  person: 240,
  city: 120,
  country: 40,
  organisation: 100,
  work: 100,
};

/** Fixed, so the pool never depends on a run's seed ("mars" in ASCII). */
const POOL_SEED = 0x6d617273;

const ONSETS = [
  'b',
  'd',
  'f',
  'g',
  'h',
  'k',
  'l',
  'm',
  'n',
  'p',
  'r',
  's',
  't',
  'v',
  'z',
  'th',
  'sh',
  'br',
  'dr',
  'kr',
  'tr',
  'st',
  'gl',
];
const VOWELS = ['a', 'e', 'i', 'o', 'u', 'a', 'e', 'o', 'ai', 'ei', 'ou'];
const CODAS = ['', '', '', '', 'n', 'r', 'l', 's', 'th', 'm'];

function pick<T>(rng: Rng, xs: readonly T[]): T {
  return xs[rng.int(xs.length)]!;
}

function syllable(rng: Rng, withCoda: boolean): string {
  return pick(rng, ONSETS) + pick(rng, VOWELS) + (withCoda ? pick(rng, CODAS) : '');
}

function candidateName(rng: Rng): string {
  const syllables = rng.next() < 0.65 ? 2 : 3;
  let name = '';
  // Only the last syllable may close with a consonant, which keeps names pronounceable ("vorana", "tessel").
  for (let i = 0; i < syllables; i++) name += syllable(rng, i === syllables - 1);
  return name;
}

let cached: Readonly<Record<EntityType, readonly string[]>> | undefined;

/** The pool, by entity type. Deterministic: the same on every call and machine. */
export function namePool(): Readonly<Record<EntityType, readonly string[]>> {
  if (cached !== undefined) return cached;
  const rng = new Rng(POOL_SEED);
  const taken = new Set<string>(templateWords());
  const pool = {} as Record<EntityType, string[]>;
  for (const type of Object.keys(NAME_POOL_SIZES) as EntityType[]) {
    const names: string[] = [];
    while (names.length < NAME_POOL_SIZES[type]) {
      const name = candidateName(rng);
      if (name.length < 4 || name.length > 10 || taken.has(name)) continue;
      taken.add(name);
      names.push(name);
    }
    pool[type] = names;
  }
  cached = pool;
  return pool;
}

/** Every name in the pool, types in NAME_POOL_SIZES order. */
export function allPoolNames(): string[] {
  return Object.values(namePool()).flat();
}
