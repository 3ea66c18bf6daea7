/**
 * Training and evaluation world seeds (docs/algorithms.md §2: evaluation is on worlds never trained on).
 *
 * Both lists derive from one base seed through named streams ('train-worlds', 'eval-worlds'). They are disjoint by
 * construction for any lengths: training seeds are even and evaluation seeds odd. Within a list, seeds are distinct,
 * and a list is a prefix of any longer one (asking for more worlds never changes the first ones).
 */
import { Rng } from '../random/prng';

function worldSeeds(baseSeed: number, n: number, stream: string, parity: 0 | 1): number[] {
  if (!(Number.isInteger(n) && n >= 0)) throw new RangeError(`world seed count must be an integer ≥ 0, got ${n}`);
  const rng = new Rng(baseSeed).split(stream);
  const seen = new Set<number>();
  const out: number[] = [];
  while (out.length < n) {
    const seed = ((rng.nextUint32() & ~1) >>> 0) + parity;
    if (seen.has(seed)) continue;
    seen.add(seed);
    out.push(seed);
  }
  return out;
}

/** Seeds of the worlds whose questions are trained on. */
export function trainWorldSeeds(baseSeed: number, n: number): number[] {
  return worldSeeds(baseSeed, n, 'train-worlds', 0);
}

/** Seeds of the held-out worlds, disjoint from every `trainWorldSeeds(baseSeed, ·)`. */
export function evalWorldSeeds(baseSeed: number, n: number): number[] {
  return worldSeeds(baseSeed, n, 'eval-worlds', 1);
}
