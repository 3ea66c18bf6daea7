/**
 * Clustered and paired statistics on constructed data where the answer is known (issue 17): the cluster-robust SE
 * exceeds the naive one when worlds differ and matches it when they do not; a paired test over worlds detects a
 * shift that an unpaired comparison misses; the claims table reads as the studies print it.
 */
import { describe, expect, it } from 'vitest';
import {
  agreeing,
  clusterBootstrap,
  clusteredMean,
  normalCdf,
  pairedClusterVerdict,
  pairItems,
  seedAveraged,
  unpairedClusterVerdict,
  type ItemOutcome,
} from '../../study/stats/clustered';
import { claimRow, claimsTable } from '../../study/stats/claims';
import { pairedBootstrap } from '../../../engine/scoring/pairedStats';
import { seedsVerdict } from '../../study/stats/verdict';
import { Rng } from '../../../engine/random/prng';

const uniform = (seed: number) => {
  const r = new Rng(seed);
  return () => r.next();
};

/** G worlds × m items; score(w, i). */
function grid(G: number, m: number, score: (w: number, i: number) => number): ItemOutcome[] {
  const out: ItemOutcome[] = [];
  for (let w = 0; w < G; w++) {
    for (let i = 0; i < m; i++) out.push({ item: `w${w}-i${i}`, world: `w${w}`, score: score(w, i) });
  }
  return out;
}

describe('clusteredMean', () => {
  it('computes the CR1 and naive SEs of a small example by hand', () => {
    const xs: ItemOutcome[] = [
      { item: 'a1', world: 'A', score: 1 },
      { item: 'a2', world: 'A', score: 1 },
      { item: 'b1', world: 'B', score: 0 },
      { item: 'b2', world: 'B', score: 0 },
      { item: 'c1', world: 'C', score: 1 },
      { item: 'c2', world: 'C', score: 0 },
    ];
    const r = clusteredMean(xs);
    expect(r.mean).toBe(0.5);
    expect(r.worlds).toBe(3);
    // world sums of deviations 1, −1, 0: 3/2 · 2 / 36 = 1/12
    expect(r.clusterSe).toBeCloseTo(Math.sqrt(1 / 12), 12);
    // sample variance 0.3, over 6 items
    expect(r.naiveSe).toBeCloseTo(Math.sqrt(0.3 / 6), 12);
  });

  it('gives a larger SE than sd/√n when worlds differ, and about the same when they do not', () => {
    const rng = new Rng(3);
    // half the worlds easy (90% solved), half hard (10%)
    const differ = grid(12, 30, (w) => (rng.next() < (w % 2 ? 0.9 : 0.1) ? 1 : 0));
    const d = clusteredMean(differ);
    expect(d.clusterSe).toBeGreaterThan(2.5 * d.naiveSe);
    // the same difficulty everywhere
    const same = grid(12, 30, () => (rng.next() < 0.5 ? 1 : 0));
    const s = clusteredMean(same);
    expect(s.clusterSe / s.naiveSe).toBeGreaterThan(0.6);
    expect(s.clusterSe / s.naiveSe).toBeLessThan(1.5);
    // the cluster bootstrap agrees with the sandwich in both cases
    const bd = clusterBootstrap(differ, { rng: uniform(1), resamples: 3000 });
    expect(bd.se / d.clusterSe).toBeGreaterThan(0.8);
    expect(bd.se / d.clusterSe).toBeLessThan(1.2);
    expect(bd.low).toBeLessThan(d.mean);
    expect(bd.high).toBeGreaterThan(d.mean);
  });

  it('refuses empty and non-finite input', () => {
    expect(() => clusteredMean([])).toThrow(/no items/);
    expect(() => clusteredMean([{ item: 'x', world: 'w', score: NaN }])).toThrow(/not finite/);
  });
});

describe('pairedClusterVerdict', () => {
  // Items range from always solved to never (worlds of very different difficulty); arm b solves exactly one more
  // item than arm a in every world and loses none.
  const G = 12;
  const m = 20;
  const a = grid(G, m, (w, i) => (i < Math.round((w / (G - 1)) * m) ? 1 : 0));
  const b = a.map((x, k) => {
    const w = Math.floor(k / m);
    const i = k % m;
    const firstWrong = Math.round((w / (G - 1)) * m);
    return { ...x, score: i === firstWrong ? 1 : x.score };
  });

  it('detects a small shift on the same items that an unpaired comparison misses', () => {
    const paired = pairedClusterVerdict(b, a, { rng: uniform(2) });
    // the last world is all solved by both: 11 worlds gain one item each, exact p = 2^-11
    expect(paired.verdict).toBe('holds');
    expect(paired.pClaim).toBeCloseTo(2 ** -11, 12);
    expect(paired.effect).toBeCloseTo(11 / (G * m), 12);
    expect(paired.test).toMatch(/exact sign-flip test over worlds/);
    const unpaired = unpairedClusterVerdict(b, a);
    expect(unpaired.verdict).toBe('inconclusive');
    expect(unpaired.pClaim).toBeGreaterThan(0.3);
    // an unpaired permutation over the 240 items' scores does not see it either: split the items into 8 'seeds'
    const chunk = (xs: ItemOutcome[]) =>
      Array.from({ length: 8 }, (_, s) => xs.filter((_, k) => k % 8 === s).reduce((t, x) => t + x.score, 0));
    expect(seedsVerdict(chunk(b), chunk(a)).verdict).toBe('inconclusive');
  });

  it('says "does not hold" for the reverse claim and rejects nothing when the arms are equal', () => {
    expect(pairedClusterVerdict(a, b, { rng: uniform(2) }).verdict).toBe('does not hold');
    const same = pairedClusterVerdict(a, a, { rng: uniform(2) });
    expect(same.verdict).toBe('inconclusive');
    expect(same.pClaim).toBe(1);
  });

  it('does not reject a difference that lives in one world only, however many items it covers', () => {
    // world 0: b solves all 20, a none; elsewhere equal. Items say 20 discordant pairs; worlds say one.
    const a1 = grid(6, 20, () => 0);
    const b1 = a1.map((x) => ({ ...x, score: x.world === 'w0' ? 1 : 0 }));
    const r = pairedClusterVerdict(b1, a1, { rng: uniform(5) });
    expect(r.verdict).toBe('inconclusive');
    expect(r.pClaim).toBe(0.5);
    expect(r.clusterSe).toBeGreaterThan(3 * r.naiveSe);
    // the item-level bootstrap, which ignores worlds, puts its whole interval above 0
    const ib = pairedBootstrap(
      a1.map((x) => x.score),
      b1.map((x) => x.score),
      { rng: uniform(6) },
    );
    expect(ib.low).toBeGreaterThan(0);
  });

  it('uses a Monte Carlo sign flip past 20 worlds, seeded and valid', () => {
    const a2 = grid(30, 4, () => 0);
    const b2 = a2.map((x) => ({ ...x, score: x.item.endsWith('i0') ? 1 : 0 }));
    const r = pairedClusterVerdict(b2, a2, { rng: uniform(7), draws: 999 });
    expect(r.test).toMatch(/Monte Carlo/);
    expect(r.pClaim).toBeCloseTo(1 / 1000, 12);
    expect(r.verdict).toBe('holds');
    // no effect: half the worlds up, half down
    const b3 = a2.map((x) => ({ ...x, score: x.item.endsWith('i0') ? Number(x.world.slice(1)) % 2 : 0 }));
    const a3 = a2.map((x) => ({ ...x, score: x.item.endsWith('i0') ? 1 - (Number(x.world.slice(1)) % 2) : 0 }));
    const n = pairedClusterVerdict(b3, a3, { rng: uniform(8), draws: 999 });
    expect(n.verdict).toBe('inconclusive');
    expect(pairedClusterVerdict(b3, a3, { rng: uniform(8), draws: 999 }).pClaim).toBe(n.pClaim);
  });

  it('pairs by item id and refuses items that are not in both arms', () => {
    const x = grid(2, 2, () => 1);
    expect(pairItems([...x].reverse(), x).every((p) => p.diff === 0)).toBe(true);
    expect(() => pairItems(x, x.slice(1))).toThrow(/same items/);
    expect(() => pairItems(x, [...x.slice(1), { item: 'other', world: 'w0', score: 1 }])).toThrow(/one arm only/);
    expect(() =>
      pairItems(
        x,
        x.map((y) => ({ ...y, world: 'elsewhere' })),
      ),
    ).toThrow(/in world/);
  });
});

describe('seedAveraged, agreeing, normalCdf', () => {
  it('averages a run’s seeds per item and refuses seeds that scored other items', () => {
    const s1 = grid(2, 2, () => 1);
    const s2 = grid(2, 2, (w) => w);
    expect(seedAveraged([s1, s2]).map((x) => x.score)).toEqual([0.5, 0.5, 1, 1]);
    expect(() => seedAveraged([s1, [...s2].reverse()])).toThrow(/same place/);
  });

  it('combines tests of one claim: holds or does not hold only when every test agrees', () => {
    const holds = seedsVerdict([5, 6, 7, 8], [1, 2, 3, 4]);
    const against = seedsVerdict([1, 2, 3, 4], [5, 6, 7, 8]);
    const unsure = seedsVerdict([1, 3], [2, 4]);
    expect(agreeing([holds, holds]).verdict).toBe('holds');
    expect(agreeing([against, against]).verdict).toBe('does not hold');
    expect(agreeing([holds, unsure]).verdict).toBe('inconclusive');
    expect(agreeing([holds, against]).verdict).toBe('inconclusive');
    expect(agreeing([{ ...holds, label: 'seeds' }]).test).toMatch(/^seeds: /);
  });

  it('normalCdf matches known values', () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(1.959964)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-1.644854)).toBeCloseTo(0.05, 6);
  });
});

describe('claimsTable', () => {
  it('writes one row per claim with its verdict, figures and test, pipes escaped', () => {
    const rows = [
      claimRow('a > b', seedsVerdict([5, 6, 7, 8], [1, 2, 3, 4]), 'a 6.5 | b 2.5'),
      claimRow('c > d', null, 'arm not run'),
    ];
    const t = claimsTable(rows, { alpha: 0.05, rule: 'Both levels must agree.' });
    expect(t[0]).toMatch(/α = 0\.05.*Both levels must agree\./);
    expect(t[2]).toBe('| claim | verdict | figures | test |');
    expect(t[4]).toMatch(/^\| a > b \| \*\*holds\*\* \| a 6\.5 \\\| b 2\.5 \| exact permutation test/);
    expect(t[5]).toBe('| c > d | **not measurable here** | arm not run | – |');
  });
});
