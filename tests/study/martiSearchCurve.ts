/**
 * T+ against plain search at the same node budget, over a budget curve (issue 17), on one checkpoint's policies: for
 * each budget N, every held-out problem gets a plain AB-MCTS-A tree (per-test feedback, no depth weighting; its pick
 * by public score = pass1MCTS, its best = bestOfTree) and a T+ tree (rich feedback, depth weighting; tplus.pass1,
 * tplus.bestOfTree), both of N nodes. T+ against plain is paired per problem and tested by sign flips over worlds
 * (tests/study/stats/clustered.ts); no training seeds are involved (one checkpoint). Each problem's search draws come
 * from its own streams, seeded by the task seed and `--set eval.drawSeed=K`: run K = 0, 1, 2 and give
 * martiSearchCompare.ts the files as comma lists to test over draws of the search (issue 32, defect 4).
 *
 *   npx tsx tests/study/martiSearchCurve.ts [--preset marti-search] [--checkpoint resources/marti/base-tiny]
 *     [--budgets 4,8,16] [--items 128] [--set k=v …] [--out FILE.json]
 *
 * Prints one markdown row per budget as it finishes, and writes the per-problem scores to --out.
 */
import fs from 'node:fs';
import os from 'node:os';
import type { MartiConfig } from '../../engine/marti/configSchema';
import { evaluateMartiDetailed } from '../../engine/marti/evaluate';
import { heldoutTasks } from '../../engine/marti/problems';
import { createMartiTrainer } from '../../engine/marti/trainer';
import { clusteredMean, pairedClusterVerdict, type ItemOutcome } from './stats/clustered';
import { Rng } from '../../engine/random/prng';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { initBackend } from '../../engine/tensor/backend';
import { itemScores, martiWorld } from './martiItems';
import { f3, fp } from './studyParts';

function arg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : dflt;
}
const extraSets = process.argv.flatMap((a, i) => (process.argv[i - 1] === '--set' ? [a] : []));
const preset = arg('preset', 'marti-search');
const checkpoint = arg('checkpoint', 'resources/marti/base-tiny');
const budgets = arg('budgets', '4,8,16').split(',').map(Number);
const items = Number(arg('items', '128'));
const out = arg('out', '');

async function main(): Promise<void> {
  await initBackend({ force: 'wasm' });
  const results: Record<string, unknown>[] = [];
  console.log(
    '| nodes | plain pick (pass1MCTS) | T+ pick (tplus.pass1) | T+ − plain, cluster SE, worlds p | plain best of tree | T+ best of tree | T+ − plain, cluster SE, worlds p | s | load |',
  );
  console.log('|---|---|---|---|---|---|---|---|---|');
  for (const n of budgets) {
    const cfg = resolvePresetConfig(preset, [
      `model.from={"kind":"checkpoint","path":"${checkpoint}"}`,
      `eval.items=${items}`,
      `marti.evalNodes=${n}`,
      `marti.tplus.nodes=${n}`,
      'marti.tplus.enabled=true',
      'task.trainTasks=8',
      ...extraSets,
    ]) as MartiConfig;
    const tasks = heldoutTasks(cfg);
    const wrap = (xs: readonly number[]): ItemOutcome[] =>
      tasks.map((t, i) => ({ item: t.id, world: martiWorld(t), score: xs[i]! }));
    const t0 = Date.now();
    const trainer = await createMartiTrainer(cfg);
    let scores: ReturnType<typeof itemScores>;
    try {
      const models = new Map(trainer.parameterSets.map((s) => [s.id, s.model]));
      scores = itemScores(await evaluateMartiDetailed(cfg, models, { tplus: true }));
    } finally {
      trainer.dispose();
    }
    const seconds = (Date.now() - t0) / 1000;
    const rng = new Rng(17).split(`curve-${n}`);
    const uniform = () => rng.next();
    const pick = pairedClusterVerdict(wrap(scores['tplus.pass1']!), wrap(scores.pass1MCTS!), { rng: uniform });
    const best = pairedClusterVerdict(wrap(scores['tplus.bestOfTree']!), wrap(scores.bestOfTree!), { rng: uniform });
    const m = (k: keyof typeof scores) => f3(clusteredMean(wrap(scores[k]!)).mean);
    console.log(
      `| ${n} | ${m('pass1MCTS')} | ${m('tplus.pass1')} | ${f3(pick.effect)} ± ${f3(pick.clusterSe)}, p ${fp(pick.pClaim)} (against ${fp(pick.pOpposite)}) | ${m('bestOfTree')} | ${m('tplus.bestOfTree')} | ${f3(best.effect)} ± ${f3(best.clusterSe)}, p ${fp(best.pClaim)} (against ${fp(best.pOpposite)}) | ${seconds.toFixed(0)} | ${os.loadavg()[0]!.toFixed(1)} |`,
    );
    results.push({ nodes: n, seconds, itemIds: tasks.map((t) => t.id), worlds: tasks.map(martiWorld), scores });
    if (out) fs.writeFileSync(out, JSON.stringify({ preset, checkpoint, items, sets: extraSets, results }) + '\n');
  }
}

await main();
