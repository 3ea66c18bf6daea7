/**
 * Per-item outcomes of a MARTI held-out evaluation, for the studies' clustered and paired statistics (issue 17):
 * each problem's score under each evaluation mode, the "world" it belongs to, and a chance baseline.
 *
 * World (the cluster for standard errors): the family of the hidden target's first operation ("above", "evens",
 * "upper", …). Problems that start with the same operation share what makes them easy or hard (its phrase, whether
 * it can be vague, its input kind), so their outcomes are correlated; standard errors that treat them as independent
 * are too small.
 *
 * Chance: a random program from the task generator's own distribution of targets (both sides, 1 to task.maxOps
 * operations, of the problem's input kind) that has not read the statement, scored on the problem's private tests
 * exactly as a node is scored; the per-problem figure is the share of such programs that pass.
 */
import type { MartiEvalDetail } from '../../engine/marti/evaluate';
import { nonRootNodes } from '../../engine/marti/search/abmcts';
import { chooseFinal, treeMetrics } from '../../engine/marti/search/metrics';
import { evaluateProgram } from '../../engine/marti/tasks/scoring';
import { generateTask, type MartiTask, type TaskSpec } from '../../engine/marti/tasks/generator';
import { Rng } from '../../engine/random/prng';

/** The modes whose per-problem scores a study keeps (private-test scores, 0/1 under allPass). */
export const ITEM_MODES = ['pass1', 'pass1MCTS', 'bestOfTree', 'tplus.pass1', 'tplus.bestOfTree'] as const;
export type ItemMode = (typeof ITEM_MODES)[number];

/** The family of an op id ("above3" → "above"). */
export const opFamily = (opId: string): string => opId.replace(/\d+$/, '');

/** The world (cluster) of a problem: its target's first operation family. */
export function martiWorld(task: Pick<MartiTask, 'ops'>): string {
  const first = task.ops[0];
  if (first === undefined) throw new Error('martiWorld: a task without operations has no world');
  return opFamily(first);
}

/** Per-problem private scores of one evaluation, in the order of `tasks`; tplus.* only when T+ trees were grown. */
export function itemScores(detail: MartiEvalDetail): Partial<Record<ItemMode, number[]>> {
  const { pass1, search, tplus } = detail.trees;
  const out: Partial<Record<ItemMode, number[]>> = {
    pass1: pass1.map((t) => treeMetrics(t).pass1),
    pass1MCTS: search.map((t) => treeMetrics(t).pass1),
    bestOfTree: search.map((t) => treeMetrics(t).passN),
  };
  if (tplus.length) {
    out['tplus.pass1'] = tplus.map((t) => chooseFinal(t, { by: 'publicScore' })?.privateScore ?? 0);
    out['tplus.bestOfTree'] = tplus.map((t) => treeMetrics(t).passN);
  }
  for (const [k, v] of Object.entries(out)) {
    if (v.length !== pass1.length) throw new Error(`itemScores: ${k} has ${v.length} problems, pass1 ${pass1.length}`);
  }
  return out;
}

/** Whether every tree of an evaluation has at least one node (a sanity check before keeping its scores). */
export const everyTreeGrown = (detail: MartiEvalDetail): boolean =>
  detail.trees.search.every((t) => nonRootNodes(t).length > 0);

/**
 * Per-problem chance: the share of `programs` random generator targets of the problem's input kind that pass all its
 * private tests (under allPass), drawn once (seeded) and shared by all problems.
 */
export function randomProgramChance(
  tasks: readonly MartiTask[],
  spec: TaskSpec,
  opts: { programs?: number; seed?: number } = {},
): number[] {
  const n = opts.programs ?? 200;
  const rng = new Rng(opts.seed ?? 9973).split('marti-chance');
  // Both sides of the target split, degenerate targets kept: any program the generator can write.
  const pool = Array.from({ length: n }, (_, i) =>
    generateTask(rng.nextUint32(), i % 2 ? 'heldout' : 'train', { ...spec, minOps: 1, rejectDegenerate: false }),
  );
  return tasks.map((task) => {
    const mine = pool.filter((p) => p.inputKind === task.inputKind);
    if (!mine.length) return 0;
    const passed = mine.filter((p) => evaluateProgram(p.target, task).privateScore === 1).length;
    return passed / mine.length;
  });
}
