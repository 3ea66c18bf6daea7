/**
 * A study's parts and the statistics built from them (issue 17), shared by tests/study/martiStudy.ts and
 * tests/study/marsStudy.ts: one JSON per arm (its base's evaluation, per-seed figures, per-item outcomes with their
 * worlds, a chance figure per item), verdicts for "A beats B", "an arm beats its base" and "an arm beats chance", a
 * per-arm table with cluster-robust standard errors, and paired arm-vs-arm tables on the same items.
 *
 * A claim "arm A beats arm B" is decided on two levels that must agree (tests/study/stats/clustered.ts `agreeing`):
 * across seeds (exact permutation test of the per-seed means: training noise) and across items (sign-flip test over
 * worlds of the paired per-item differences of seed-averaged scores: which items were drawn, with items of one world
 * correlated). Parts written before issue 17 have no per-item outcomes; their claims use seeds only.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { agreeing, clusteredMean, pairedClusterVerdict, seedAveraged, type ItemOutcome } from './stats/clustered';
import { mcnemar, pairedBootstrap } from '../../engine/scoring/pairedStats';
import { seedsVerdict, shiftVerdict, type VerdictResult } from './stats/verdict';
import { Rng } from '../../engine/random/prng';

const rowSchema = z.object({
  name: z.string(),
  metrics: z.record(z.string(), z.array(z.number())),
  seconds: z.array(z.number()),
});
export type Row = z.infer<typeof rowSchema>;

const scoresSchema = z.record(z.string(), z.array(z.number().finite()));

/** One arm's figures; the per-problem fields are absent in parts written before issue 17. */
export const partSchema = z
  .object({
    arm: z.string(),
    cmd: z.string(),
    steps: z.number(),
    seeds: z.number(),
    items: z.number(),
    temperature: z.number().optional(),
    backend: z.string(),
    machine: z.string(),
    minutes: z.number(),
    base: rowSchema,
    trained: rowSchema,
    /** Held-out problem ids and their worlds (tests/study/martiItems.ts), in evaluation order. */
    itemIds: z.array(z.string()).optional(),
    worlds: z.array(z.string()).optional(),
    /** Per problem: the share of random programs that pass (the chance baseline). */
    chance: z.array(z.number()).optional(),
    /** Per mode, per problem: the base's private score; and the same per trained seed. */
    baseItems: scoresSchema.optional(),
    seedItems: z.array(scoresSchema).optional(),
    /** 1-minute load average sampled at every training step of every seed (the machine is shared). */
    load: z.array(z.number()).optional(),
  })
  .superRefine((p, ctx) => {
    const n = p.itemIds?.length;
    if (n === undefined) return;
    const lens = [
      p.worlds?.length,
      p.chance?.length,
      ...Object.values(p.baseItems ?? {}).map((v) => v.length),
      ...(p.seedItems ?? []).flatMap((s) => Object.values(s).map((v) => v.length)),
    ];
    if (lens.some((l) => l !== undefined && l !== n)) {
      ctx.addIssue({ code: 'custom', message: `per-problem arrays must all have ${n} entries (one per problem)` });
    }
  });
export type Part = z.infer<typeof partSchema>;

/** Reads a part file; a file that is not one says so and what to do (`fix`). */
export function readPartFile(f: string, fix: string): Part {
  const r = partSchema.safeParse(JSON.parse(fs.readFileSync(f, 'utf8')));
  if (!r.success) throw new Error(`${f}: not a study part (${r.error.issues[0]?.message ?? 'invalid'}); ${fix}`);
  return r.data;
}

/** Writes a part whole or not at all (by rename: a reader, or an interrupted study, never sees half a file). */
export function writePartFile(f: string, part: Part): void {
  fs.writeFileSync(`${f}.tmp`, JSON.stringify(part) + '\n');
  fs.renameSync(`${f}.tmp`, f);
}

/** An arm's name in figures: MARTI's presets without their common prefix. */
export const short = (p: string) => p.replace('marti-', '');
export const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
export const f3 = (x: number) => (Number.isFinite(x) ? x.toFixed(3) : '–');
/** A p-value: three decimals, or two significant digits below 0.001 (never a bare 0.000). */
export const fp = (p: number) => (p < 0.001 ? p.toExponential(1) : p.toFixed(3));

/** A part's per-problem outcomes for one mode: per seed, the base's, and chance; null when it has none. */
export function outcomesOf(
  part: Part,
  mode: string,
): { seeds: ItemOutcome[][]; base: ItemOutcome[] | null; chance: ItemOutcome[] | null } | null {
  const ids = part.itemIds;
  const worlds = part.worlds;
  if (!ids || !worlds || !part.seedItems?.length || part.seedItems.some((s) => !s[mode])) return null;
  const wrap = (scores: readonly number[]) => ids.map((item, i) => ({ item, world: worlds[i]!, score: scores[i]! }));
  return {
    seeds: part.seedItems.map((s) => wrap(s[mode]!)),
    base: part.baseItems?.[mode] ? wrap(part.baseItems[mode]) : null,
    chance: part.chance ? wrap(part.chance) : null,
  };
}

/** Seeded draws for the bootstraps and Monte Carlo tests, so a rebuilt report repeats its figures. */
export const uniform = (label: string) => {
  const r = new Rng(17).split(label);
  return () => r.next();
};

/** "hi beats lo" on metric k: seeds and (when both parts have them) paired problems, which must agree. */
export function armVerdict(
  hi: Part,
  lo: Part,
  k: string,
): { result: { verdict: VerdictResult['verdict']; test: string }; figures: string } {
  const a = hi.trained.metrics[k] ?? [];
  const b = lo.trained.metrics[k] ?? [];
  const seeds = { ...seedsVerdict(a, b), label: 'seeds' };
  const ia = outcomesOf(hi, k);
  const ib = outcomesOf(lo, k);
  const figures = `${short(hi.arm)} ${f3(mean(a))}, ${short(lo.arm)} ${f3(mean(b))}`;
  if (!ia || !ib) return { result: seeds, figures };
  const items = {
    ...pairedClusterVerdict(seedAveraged(ia.seeds), seedAveraged(ib.seeds), {
      rng: uniform(`${hi.arm}>${lo.arm}:${k}`),
    }),
    label: 'problems',
  };
  return { result: agreeing([seeds, items]), figures };
}

/** "the trained arm beats its base" on k: seed gains over the base figure, and paired problems against the base. */
export function overBase(
  part: Part,
  k: string,
): { result: { verdict: VerdictResult['verdict']; test: string }; figures: string } | null {
  const b = part.base.metrics[k]?.[0];
  const xs = part.trained.metrics[k] ?? [];
  if (b === undefined || !xs.length) return null;
  const seeds = { ...shiftVerdict(xs.map((x) => x - b)), label: 'seeds' };
  const o = outcomesOf(part, k);
  const figures = `${f3(b)} → ${f3(mean(xs))}`;
  if (!o?.base) return { result: seeds, figures };
  const items = {
    ...pairedClusterVerdict(seedAveraged(o.seeds), o.base, { rng: uniform(`${part.arm}>base:${k}`) }),
    label: 'problems',
  };
  return { result: agreeing([seeds, items]), figures };
}

/** "the trained arm beats chance" on k: seed means over the chance mean, and paired items against chance. */
export function overChance(
  part: Part,
  k: string,
): { result: { verdict: VerdictResult['verdict']; test: string }; figures: string } | null {
  const o = outcomesOf(part, k);
  if (!o?.chance) return null;
  const c = mean(o.chance.map((x) => x.score));
  const xs = part.trained.metrics[k] ?? [];
  const seeds = { ...shiftVerdict(xs.map((x) => x - c)), label: 'seeds' };
  const items = {
    ...pairedClusterVerdict(seedAveraged(o.seeds), o.chance, { rng: uniform(`${part.arm}>chance`) }),
    label: 'problems',
  };
  return { result: agreeing([seeds, items]), figures: `chance ${f3(c)} → ${f3(mean(xs))}` };
}

/** Per arm and mode: mean over seeds, its naive and cluster-robust SE over problems (seed-averaged), the base, chance. */
export function perArmTableLines(parts: readonly Part[], modes: readonly string[], chanceMode = 'pass1'): string[] {
  const lines = [
    '| arm | mode | seeds | trained mean | naive SE | cluster SE (worlds) | base | chance |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const p of parts) {
    for (const k of modes) {
      const o = outcomesOf(p, k);
      if (!o) continue;
      const t = clusteredMean(seedAveraged(o.seeds));
      const b = o.base ? clusteredMean(o.base).mean : NaN;
      const c = k === chanceMode && o.chance ? clusteredMean(o.chance).mean : NaN;
      lines.push(
        `| ${p.arm} | ${k} | ${o.seeds.length} | ${f3(t.mean)} | ${f3(t.naiveSe)} | ${f3(t.clusterSe)} (${t.worlds}) | ${f3(b)} | ${f3(c)} |`,
      );
    }
  }
  return lines.length > 2 ? lines : [];
}

/**
 * Paired comparisons on the same problems, every statistic side by side: mean difference, naive and cluster SE,
 * item-bootstrap and world-bootstrap intervals, exact McNemar (solved / not, seed i against seed i, pooled; ignores
 * worlds), the world sign-flip p, and the seed permutation p.
 */
export function pairedTableLines(
  parts: readonly Part[],
  pairs: readonly [string, string][],
  modes: readonly string[],
): string[] {
  const lines = [
    '| comparison | mode | difference | naive SE | cluster SE | 95% item bootstrap | 95% world bootstrap | McNemar solved by first only / second only, p (two-sided) | worlds sign-flip p (one-sided) | seeds permutation p (one-sided) |',
    '|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const [hi, lo] of pairs) {
    const a = parts.find((p) => p.arm === hi);
    const b = parts.find((p) => p.arm === lo);
    if (!a || !b) continue;
    for (const k of modes) {
      const oa = outcomesOf(a, k);
      const ob = outcomesOf(b, k);
      if (!oa || !ob) continue;
      const sa = seedAveraged(oa.seeds);
      const sb = seedAveraged(ob.seeds);
      const w = pairedClusterVerdict(sa, sb, { rng: uniform(`${hi}>${lo}:${k}`) });
      const ib = pairedBootstrap(
        sb.map((x) => x.score),
        sa.map((x) => x.score),
        { rng: uniform(`${hi}>${lo}:${k}:items`) },
      );
      const n = Math.min(oa.seeds.length, ob.seeds.length);
      const solved = (xs: ItemOutcome[][]) => xs.slice(0, n).flatMap((s) => s.map((x) => x.score === 1));
      const mc = mcnemar(solved(ob.seeds), solved(oa.seeds));
      const sp = seedsVerdict(a.trained.metrics[k] ?? [], b.trained.metrics[k] ?? []);
      lines.push(
        `| ${short(hi)} − ${short(lo)} | ${k} | ${f3(w.effect)} | ${f3(w.naiveSe)} | ${f3(w.clusterSe)} | ${f3(ib.low)} to ${f3(ib.high)} | ${f3(w.low)} to ${f3(w.high)} | ${mc.n01}/${mc.n10}, ${fp(mc.pValue)} | ${fp(w.pClaim)} | ${fp(sp.pClaim)} |`,
      );
      // the same comparison at step 0 (each arm's base as that arm evaluates it): how much of the gap was there before training
      if (oa.base && ob.base) {
        const w0 = pairedClusterVerdict(oa.base, ob.base, { rng: uniform(`${hi}>${lo}:${k}:base`) });
        const ib0 = pairedBootstrap(
          ob.base.map((x) => x.score),
          oa.base.map((x) => x.score),
          { rng: uniform(`${hi}>${lo}:${k}:base:items`) },
        );
        const mc0 = mcnemar(
          ob.base.map((x) => x.score === 1),
          oa.base.map((x) => x.score === 1),
        );
        lines.push(
          `| their bases, step 0 | ${k} | ${f3(w0.effect)} | ${f3(w0.naiveSe)} | ${f3(w0.clusterSe)} | ${f3(ib0.low)} to ${f3(ib0.high)} | ${f3(w0.low)} to ${f3(w0.high)} | ${mc0.n01}/${mc0.n10}, ${fp(mc0.pValue)} | ${fp(w0.pClaim)} | – |`,
        );
      }
    }
  }
  return lines.length > 2 ? lines : [];
}

/** Rows of the main tables: every part's base, then every part's trained arm. */
export function rowsOf(parts: readonly Part[]): Row[] {
  return [...parts.map((p) => p.base), ...parts.map((p) => p.trained)];
}
