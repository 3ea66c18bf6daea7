/**
 * Two search settings on the same problems (issue 17: Beta vs Gaussian posterior, Thompson vs UCB agent choice): reads
 * two files written by `martiSearchCurve.ts --out` and, for every node budget both ran, pairs each problem's plain-tree
 * pick (pass1MCTS), best of tree and T+ pick, testing the first setting against the second by sign flips over worlds
 * (tests/study/stats/clustered.ts). Both files must hold the same problems (same --items and preset, any checkpoint).
 *
 *   npx tsx tests/study/martiSearchCompare.ts GAUSSIAN.json BETA.json
 *
 * Prints one markdown row per budget and mode.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { clusteredMean, pairedClusterVerdict, type ItemOutcome } from './stats/clustered';
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

function main(): void {
  const [fileA, fileB] = process.argv.slice(2);
  if (!fileA || !fileB) throw new Error('usage: martiSearchCompare.ts A.json B.json (A is tested against B)');
  const a = read(fileA);
  const b = read(fileB);
  console.log(`A: ${name(a)}; B: ${name(b)}`);
  console.log('| nodes | mode | A | B | A − B (cluster SE) | worlds p for A / against |');
  console.log('|---|---|---|---|---|---|');
  for (const ra of a.results) {
    const rb = b.results.find((r) => r.nodes === ra.nodes);
    if (!rb) continue;
    if (ra.itemIds.join() !== rb.itemIds.join()) {
      throw new Error(`${ra.nodes} nodes: the two files hold different problems`);
    }
    const rng = new Rng(17).split(`compare-${ra.nodes}`);
    const wrap = (xs: readonly number[]): ItemOutcome[] =>
      ra.itemIds.map((item, i) => ({ item, world: ra.worlds[i]!, score: xs[i]! }));
    for (const mode of MODES) {
      const [sa, sb] = [ra.scores[mode], rb.scores[mode]];
      if (!sa || !sb) {
        continue;
      }
      const x = wrap(sa);
      const y = wrap(sb);
      const v = pairedClusterVerdict(x, y, { rng: () => rng.next() });
      console.log(
        `| ${ra.nodes} | ${mode} | ${f3(clusteredMean(x).mean)} | ${f3(clusteredMean(y).mean)} | ${f3(v.effect)} (${f3(v.clusterSe)}) | ${fp(v.pClaim)} / ${fp(v.pOpposite)} |`,
      );
    }
  }
}

main();
