/**
 * The run's seeded pseudo-random generator (docs/algorithms.md §1.4).
 *
 * sfc32 (Chris Doty-Humphrey's Small Fast Counting generator, 128-bit state, period ≥ 2^32) seeded through splitmix32.
 * It is chosen because it needs only 32-bit integer arithmetic (exact in JavaScript), passes PractRand/BigCrush at the
 * sizes a toy lab draws, and its whole state fits in a few numbers that can be written to a checkpoint.
 *
 * Named streams (`split`) are derived from the generator's *seed*, not from its position, so the stream called
 * 'tokens' is the same whether it is split before or after other draws: adding a draw in one part of the engine never
 * shifts the random numbers of another.
 */

const TWO_POW_32 = 4294967296;

/** splitmix32 finaliser: a bijection on uint32 with full avalanche, so nearby seeds give unrelated outputs. */
function mix32(x: number): number {
  x = (x + 0x9e3779b9) | 0;
  x = Math.imul(x ^ (x >>> 16), 0x21f0aaad);
  x = Math.imul(x ^ (x >>> 15), 0x735a2d97);
  return (x ^ (x >>> 15)) >>> 0;
}

/** FNV-1a over UTF-16 code units, then mixed: stream names only need to map to well-spread 32-bit values. */
function hashName(name: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < name.length; i++) {
    h ^= name.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h >>> 0);
}

/** Folds any safe integer to 32 bits so that seeds ≥ 2^32 still differ from their low word. */
function foldSeed(seed: number): number {
  if (!Number.isSafeInteger(seed)) {
    throw new Error(`Rng seed must be a safe integer, got ${seed}. Use a whole number such as 42.`);
  }
  const lo = seed >>> 0; // two's complement for negatives, so -1 and 2^32-1 share a low word; the high word separates them
  const hi = Math.floor(seed / TWO_POW_32) >>> 0;
  return hi === 0 ? lo : mix32(lo ^ mix32(hi));
}

export class Rng {
  private seed: number;
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    this.seed = foldSeed(seed);
    let s = this.seed;
    const next = (): number => {
      s = (s + 0x9e3779b9) >>> 0;
      return mix32(s);
    };
    this.a = next();
    this.b = next();
    this.c = next();
    this.d = 1; // sfc32's counter word: starting it at 1 is the reference seeding and rules out the all-zero state
    // The reference implementation discards the first outputs so the seed's structure is fully diffused.
    for (let i = 0; i < 12; i++) this.nextUint32();
  }

  /** Uniform integer in [0, 2^32). */
  nextUint32(): number {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }

  /** Uniform in [0, 1) with 32 bits of resolution. */
  next(): number {
    return this.nextUint32() / TWO_POW_32;
  }

  /** Uniform integer in [0, n), unbiased (rejection of the short last bucket). `n` must be an integer in [1, 2^32]. */
  int(n: number): number {
    if (!Number.isInteger(n) || n < 1 || n > TWO_POW_32) {
      throw new Error(`Rng.int(n) needs an integer n in [1, 2^32], got ${n}.`);
    }
    const limit = TWO_POW_32 - (TWO_POW_32 % n);
    for (;;) {
      const x = this.nextUint32();
      if (x < limit) return x % n;
    }
  }

  /**
   * Standard normal by Box–Muller. The second value of the pair is discarded so that the state is only the
   * generator words (no cached spare to save and restore).
   */
  normal(): number {
    const u1 = 1 - this.next(); // (0, 1]: log(0) would give an infinite draw
    const u2 = this.next();
    return Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /**
   * An independent stream named `name` (docs/algorithms.md §1.4). It depends only on this generator's seed and the name,
   * so the same name always gives the same stream, however many draws were made before.
   */
  split(name: string): Rng {
    return new Rng(mix32(this.seed ^ hashName(name)));
  }

  /** The full state, as uint32 words: [seed, a, b, c, d]. */
  state(): number[] {
    return [this.seed, this.a >>> 0, this.b >>> 0, this.c >>> 0, this.d >>> 0];
  }

  /** Rebuilds a generator that continues exactly where the one that produced `s` stopped (and splits the same way). */
  static fromState(s: readonly number[]): Rng {
    if (s.length !== 5 || !s.every((w) => Number.isInteger(w) && w >= 0 && w < TWO_POW_32)) {
      throw new Error(`Rng.fromState expects 5 uint32 words [seed, a, b, c, d], got [${s.join(', ')}].`);
    }
    const rng = Object.create(Rng.prototype) as Rng;
    rng.seed = s[0]!;
    rng.a = s[1]! | 0;
    rng.b = s[2]! | 0;
    rng.c = s[3]! | 0;
    rng.d = s[4]! | 0;
    return rng;
  }
}
