/**
 * A finished two-step martipy run folder, written without training a model, for the window tests of its Trees tab:
 * run.json with a martipy config (parsed by the run config's schema), metrics.jsonl with the trainer's step metrics
 * computed from the trees, and trajectories.jsonl with the trees as `code.tree` records. The trees are the recorded
 * code-tree fixtures (tests/fixtures/code-trees/: a scripted model's programs with real sandbox verdicts): step 1 the
 * plain searches (HumanEval's trees all failing, so every node scored alike: no signal; MBPP's with partial scores),
 * step 2 the T+ searches (refinements that pass). Each node's advantage is its score's z-score in its tree
 * (engine/rl/advantages.ts, as the trainer's tree groups), and every line is checked by trajectories.jsonl's schema.
 */
import fs from 'node:fs';
import path from 'node:path';
import { type CodeTreeLine } from '../../engine/records/codeTree';
import { trajectoryLineSchema, type TrajectoryLineOf } from '../../engine/records/trajectories';
import { groupZScore } from '../../engine/rl/advantages';
import { runConfigSchema } from '../../engine/runs/config/configSchema';
import { createRunFolder } from '../../engine/runs/folder/runFolder';

const FIXTURES = path.resolve('tests/fixtures/code-trees');

export type CodeTreeLineWithStep = TrajectoryLineOf<'code.tree'>;

function linesOf(folder: string, search: string): CodeTreeLine[] {
  return fs
    .readFileSync(path.join(FIXTURES, folder, `trees-${search}.jsonl`), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as CodeTreeLine);
}

/** A tree as the martipy trainer records it at `step`: each node with its advantage in the tree's group. */
function recordOf(line: CodeTreeLine, step: number): CodeTreeLineWithStep {
  const advantages = groupZScore(line.nodes.map((n) => n.score));
  return trajectoryLineSchema.parse({
    kind: 'code.tree',
    version: 1,
    step,
    ...line,
    nodes: line.nodes.map((n, i) => ({ ...n, advantage: advantages[i]! })),
  }) as CodeTreeLineWithStep;
}

const mean = (xs: readonly number[]): number => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);

/** The step metrics the trainer logs that the trees determine (engine/marti/python/trainer.ts). */
function metricsOf(step: number, trees: readonly CodeTreeLineWithStep[]): Record<string, number> {
  const nodes = trees.flatMap((t) => t.nodes);
  return {
    step,
    time: 10 * step,
    reward: mean(nodes.map((n) => n.score)),
    passShare: mean(nodes.map((n) => (n.passed ? 1 : 0))),
    treesSolved: mean(trees.map((t) => (t.nodes.some((n) => n.passed) ? 1 : 0))),
    firstNodePass: mean(trees.map((t) => (t.nodes[0]?.passed ? 1 : 0))),
    refineShare: mean(nodes.map((n) => (n.parent === 0 ? 0 : 1))),
    noCodeShare: mean(nodes.map((n) => (n.program === null ? 1 : 0))),
    zeroSignalTrees: mean(trees.map((t) => (t.nodes.every((n) => n.advantage === 0) ? 1 : 0))),
  };
}

/** Writes the run into `home`'s runs/ and returns its id and its trees by step. */
export function writeMartipyRun(home: string): { runId: string; steps: Map<number, CodeTreeLineWithStep[]> } {
  const config = runConfigSchema.parse({
    algorithm: 'martipy',
    seed: 1,
    model: { path: 'smollm2-135m-instruct', lora: { rank: 8, alpha: 16 } },
    search: { nodesPerTree: 5, problemsPerStep: 3 },
    budget: { steps: 2 },
    eval: { every: 0 },
  });
  const { id, dir } = createRunFolder(home, {
    algorithm: 'martipy',
    config,
    engineVersion: '0',
    seed: 1,
    tags: ['fixture'],
    notes: 'written by tests/helpers/martipyRunFixture.ts, not trained',
    status: 'finished',
  });
  const steps = new Map<number, CodeTreeLineWithStep[]>([
    [1, [...linesOf('humaneval-scripted', 'plain'), ...linesOf('mbpp-scripted', 'plain')].map((l) => recordOf(l, 1))],
    [2, [...linesOf('humaneval-scripted', 'tplus'), ...linesOf('mbpp-scripted', 'tplus')].map((l) => recordOf(l, 2))],
  ]);
  const trees = [...steps.values()].flat();
  fs.writeFileSync(path.join(dir, 'trajectories.jsonl'), trees.map((t) => JSON.stringify(t) + '\n').join(''));
  fs.writeFileSync(
    path.join(dir, 'metrics.jsonl'),
    [...steps].map(([step, t]) => JSON.stringify(metricsOf(step, t)) + '\n').join(''),
  );
  return { runId: id, steps };
}
