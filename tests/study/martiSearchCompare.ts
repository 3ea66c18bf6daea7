/**
 * Two search settings on the same problems (issue 17: Beta vs Gaussian posterior, Thompson vs UCB agent choice): reads
 * files written by `martiSearchCurve.ts --out` and, for every node budget both sides ran, pairs each problem's plain-tree
 * pick (pass1MCTS), best of tree and T+ pick, testing the first setting against the second by sign flips over worlds
 * (tests/study/stats/clustered.ts). All files must hold the same problems (same --items and preset, any checkpoint).
 *
 *   npx tsx tests/study/martiSearchCompare.ts GAUSSIAN.json BETA.json
 *   npx tsx tests/study/martiSearchCompare.ts G-d0.json,G-d1.json,G-d2.json B-d0.json,B-d1.json,B-d2.json
 *   npx tsx tests/study/martiSearchCompare.ts --pair tplus.pass1:pass1MCTS B-d0.json,B-d1.json B-d0.json,B-d1.json
 *
 * A side given as a comma list is several draws of one setting (`--set eval.drawSeed=K`, issue 32): each problem's
 * score is averaged over them before pairing, so the test counts the search's own randomness as well as the
 * problems'. `--pair MODE_A:MODE_B` tests one mode of A against another of B (T+ against plain search) instead of
 * each mode against itself. Prints one markdown row per budget and mode.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { clusteredMean, pairedClusterVerdict, seedAveraged, type ItemOutcome } from './stats/clustered';
import { Rng } from '../../engine/random/prng';
import { f3, fp } from './studyParts';

const curveSchema = z.object({
  checkpoint: z.string(),
  sets: z.array(z.string()),
  results: z.array(
    z.object({
      nodes: z.number().int().positive(),
      itemIds: z.array(z.string()),
      worlds: z.array(z.string()),
      scores: z.record(z.string(), z.array(z.number())),
    }),
  ),
});
type Curve = z.infer<typeof curveSchema>;

const MODES = ['pass1MCTS', 'bestOfTree', 'tplus.pass1'] as const;

function read(file: string): Curve {
  const parsed = curveSchema.safeParse(JSON.parse(fs.readFileSync(file, 'utf8')));
  if (!parsed.success) throw new Error(`${file}: not a martiSearchCurve.ts --out file (${parsed.error.message})`);
  return parsed.data;
}

const name = (c: Curve) => `${c.checkpoint}${c.sets.length ? ` ${c.sets.join(' ')}` : ''}`;

/** The problems of one budget, and each mode's per-problem outcomes averaged over a side's draws (its files). */
interface Side {
  name: string;
  at(nodes: number): { itemIds: string[]; byMode: Map<string, ItemOutcome[]> } | undefined;
  budgets: number[];
}

function side(files: string): Side {
  const curves = files.split(',').map(read);
  const budgets = curves[0]!.results.map((r) => r.nodes);
  return {
    name:
      curves.length === 1
        ? name(curves[0]!)
        : `${name({ ...curves[0]!, sets: curves[0]!.sets.filter((x) => !x.startsWith('eval.drawSeed=')) })} over ${curves.length} draws (${curves.map((c) => c.sets.find((x) => x.startsWith('eval.drawSeed=')) ?? 'eval.drawSeed=0').join(', ')})`,
    budgets,
    at(nodes) {
      const rs = curves.map((c) => c.results.find((r) => r.nodes === nodes));
      if (rs.some((r) => !r)) return undefined;
      const first = rs[0]!;
      const byMode = new Map<string, ItemOutcome[]>();
      for (const mode of MODES) {
        if (rs.some((r) => !r!.scores[mode])) continue;
        byMode.set(
          mode,
          seedAveraged(
            rs.map((r) => r!.itemIds.map((item, i) => ({ item, world: r!.worlds[i]!, score: r!.scores[mode]![i]! }))),
          ),
        );
      }
      return { itemIds: first.itemIds, byMode };
    },
  };
}

function main(): void {
  const args = process.argv.slice(2);
  let pair: [string, string] | undefined;
  const at = args.indexOf('--pair');
  if (at >= 0) {
    const [ma, mb] = (args[at + 1] ?? '').split(':');
    if (!ma || !mb || !MODES.includes(ma as never) || !MODES.includes(mb as never)) {
      throw new Error(`--pair: MODE_A:MODE_B, each one of ${MODES.join(', ')}`);
    }
    pair = [ma, mb];
    args.splice(at, 2);
  }
  const [fileA, fileB] = args;
  if (!fileA || !fileB) {
    throw new Error('usage: martiSearchCompare.ts [--pair MODE_A:MODE_B] A.json[,A2.json…] B.json[,B2.json…]');
  }
  const a = side(fileA);
  const b = side(fileB);
  console.log(`A: ${a.name}; B: ${b.name}`);
  console.log('| nodes | mode | A | B | A − B (cluster SE) | worlds p for A / against |');
  console.log('|---|---|---|---|---|---|');
  for (const nodes of a.budgets) {
    const ra = a.at(nodes);
    const rb = b.at(nodes);
    if (!ra || !rb) continue;
    if (ra.itemIds.join() !== rb.itemIds.join()) {
      throw new Error(`${nodes} nodes: the two sides hold different problems`);
    }
    const rng = new Rng(17).split(`compare-${nodes}`);
    for (const [modeA, modeB] of pair ? [pair] : MODES.map((m) => [m, m] as const)) {
      const x = ra.byMode.get(modeA);
      const y = rb.byMode.get(modeB);
      if (!x || !y) continue;
      const v = pairedClusterVerdict(x, y, { rng: () => rng.next() });
      const mode = modeA === modeB ? modeA : `${modeA} vs ${modeB}`;
      console.log(
        `| ${nodes} | ${mode} | ${f3(clusteredMean(x).mean)} | ${f3(clusteredMean(y).mean)} | ${f3(v.effect)} (${f3(v.clusterSe)}) | ${fp(v.pClaim)} / ${fp(v.pOpposite)} |`,
      );
    }
  }
}

main();
