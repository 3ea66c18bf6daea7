/**
 * Does refinement from feedback help in the MARTI world? (issue 5: "a random fix from feedback should beat a fresh
 * guess".) A measurement over seeded tasks with a stand-in policy, no model:
 *
 *   reader(p)   a noisy reader of the statement: each op is read right with probability p, otherwise it is a random
 *               op of the current type (so one misreading can derail the types after it); where the statement leaves
 *               a parameter out, a right reading guesses the parameter uniformly. It stands for a weak policy that
 *               knows the syntax and some of the phrase → op mapping.
 *   parent      a reader(p) guess that fails the public tests (the node a refiner expands).
 *
 * Strategies that write one child program for the parent, at a budget of B checks against the public examples (the
 * agent sees them in its prompt; the perTest feedback "correct for k of M" is that count):
 *   randomProgram  B programs that ignore the statement (random chains of the target's length), keep the best
 *   fresh       B fresh reader guesses, keep the one with the most public tests passed (B = 1: one fresh guess)
 *   randomEdit  B random single edits of the parent (mutations.ts), keep the best (B = 1: one blind edit)
 *   refine      hill climbing from the parent: B times, re-read one random op of the current program with the same
 *               reader (later ops too where their types no longer fit) and keep the candidate when its feedback
 *               count rises (B = 1: one re-read op, the statement-guided random fix)
 * Scores are public all-pass (§3.3 publicScore) and private all-pass (privateScore) of the child.
 *
 * A research probe, not part of the engine (it moved here from engine/marti/tasks/): the reader it measures against is
 * engine/marti/tasks/reader.ts.
 *
 * Run: npm run study:repair -- [tasks=400] [p=0.5] [budget=8] [seed=N] [SPEC_FIELD=JSON ...]
 * e.g. `… 4000 0.3 8 seed=11 publicTests=5` or `listLength=[1,7]`: task-spec fields (generator.ts TaskSpec) override
 * the generator's defaults, to ask whether another test design would make feedback more useful.
 */
import { Rng } from '../../engine/random/prng';
import {
  DEFAULT_TASK_SPEC,
  generateTasks,
  programText,
  type MartiTask,
  type TaskSpec,
} from '../../engine/marti/tasks/generator';
import { mutateChain } from '../../engine/marti/tasks/mutations';
import { drawOp, type OpInstance, type TaskType } from '../../engine/marti/tasks/ops';
import { readerGuess, readOp, truthOf } from '../../engine/marti/tasks/reader';
import { evaluateProgram } from '../../engine/marti/tasks/scoring';

export const REPAIR_STRATEGIES = ['randomProgram', 'fresh', 'randomEdit', 'refine'] as const;
export type RepairStrategy = (typeof REPAIR_STRATEGIES)[number];

export interface RepairProbeOptions {
  tasks: number;
  /** Probability the reader reads an op right. */
  p: number;
  /** Checks against the public examples per child. */
  budget: number;
  seed: number;
  /** The task spec (default: the generator's). */
  spec?: TaskSpec;
}

export interface RepairFigures {
  strategy: RepairStrategy;
  /** Share of children passing every public test. */
  publicPass: number;
  /** Share of children passing every private test. */
  privatePass: number;
}

export interface RepairProbeResult {
  options: RepairProbeOptions;
  /** Tasks that had a failing parent (tasks whose every reader guess passed are skipped). */
  parents: number;
  figures: RepairFigures[];
  /** The same over the parents whose feedback says "correct for k of M" with k ≥ 1: the near misses that AB-MCTS's
   * Thompson sampling, which scores a node by that fraction, sends to refinement more often than the rest. */
  nearMisses: { parents: number; figures: RepairFigures[] };
}

interface Scored {
  chain: OpInstance[];
  passed: number;
}

/**
 * Re-reads one op of `chain` (then any later op whose input type no longer fits). The op is one whose parameter the
 * statement left out when there is any (the refiner guessed those, so they are its first suspects), else any op.
 */
function reread(rng: Rng, task: MartiTask, chain: readonly OpInstance[], p: number): OpInstance[] | null {
  const truth = truthOf(task);
  const suspects = task.vague.flatMap((v, j) => (v && j < chain.length ? [j] : []));
  const i = suspects.length > 0 ? suspects[rng.int(suspects.length)]! : rng.int(chain.length);
  const out = chain.slice(0, i);
  let type: TaskType = i === 0 ? task.inputKind : out[i - 1]!.spec.to;
  for (let j = i; j < chain.length; j++) {
    const keep = chain[j]!;
    const o = j > i && keep.spec.from === type ? keep : readOp(rng, truth[j], task.vague[j] ?? false, type, p);
    if (o === null) return null;
    out.push(o);
    type = o.spec.to;
  }
  return out;
}

/** A program that ignores the statement: a random chain of the target's length from the task's input type. */
function randomChain(rng: Rng, task: MartiTask): OpInstance[] | null {
  const chain: OpInstance[] = [];
  let type: TaskType = task.inputKind;
  for (let i = 0; i < task.ops.length; i++) {
    const o = drawOp(rng, type, null);
    if (o === null) return null;
    chain.push(o);
    type = o.spec.to;
  }
  return chain;
}

function score(task: MartiTask, chain: OpInstance[] | null): Scored | null {
  if (chain === null || chain.length === 0) return null;
  return { chain, passed: evaluateProgram(programText(chain), task).publicPassed };
}

function child(strategy: RepairStrategy, rng: Rng, task: MartiTask, parent: Scored, opts: RepairProbeOptions): Scored {
  const all = task.publicTests.length;
  let best: Scored | null = strategy === 'refine' ? parent : null;
  for (let b = 0; b < opts.budget; b++) {
    let cand: Scored | null;
    if (strategy === 'randomProgram') cand = score(task, randomChain(rng, task));
    else if (strategy === 'fresh') cand = score(task, readerGuess(rng, task, opts.p));
    else if (strategy === 'randomEdit') cand = score(task, mutateChain(rng, task.inputKind, parent.chain));
    else cand = score(task, reread(rng, task, best!.chain, opts.p));
    if (cand !== null && (best === null || cand.passed > best.passed)) best = cand;
    if (best !== null && best.passed === all) break;
  }
  return best ?? parent;
}

export function measureRepair(opts: RepairProbeOptions): RepairProbeResult {
  const tasks = generateTasks('train', opts.seed, opts.tasks, opts.spec ?? DEFAULT_TASK_SPEC);
  const newSums = () =>
    new Map<RepairStrategy, { pub: number; priv: number }>(REPAIR_STRATEGIES.map((s) => [s, { pub: 0, priv: 0 }]));
  const sums = newSums();
  const nearSums = newSums();
  let parents = 0;
  let near = 0;
  for (const task of tasks) {
    const rng = new Rng(task.seed).split('repair-probe');
    let parent: Scored | null = null;
    for (let tries = 0; tries < 50 && parent === null; tries++) {
      const g = score(task, readerGuess(rng, task, opts.p));
      if (g !== null && g.passed < task.publicTests.length) parent = g;
    }
    if (parent === null) continue;
    parents++;
    const isNear = parent.passed > 0;
    if (isNear) near++;
    for (const strategy of REPAIR_STRATEGIES) {
      // Each strategy draws from its own stream, so adding one never changes another's figures.
      const c = child(strategy, rng.split(strategy), task, parent, opts);
      const ev = evaluateProgram(programText(c.chain), task);
      for (const into of isNear ? [sums, nearSums] : [sums]) {
        const s = into.get(strategy)!;
        s.pub += ev.publicScore;
        s.priv += ev.privateScore;
      }
    }
  }
  const figures = (into: typeof sums, n: number): RepairFigures[] =>
    REPAIR_STRATEGIES.map((strategy) => ({
      strategy,
      publicPass: n === 0 ? 0 : into.get(strategy)!.pub / n,
      privatePass: n === 0 ? 0 : into.get(strategy)!.priv / n,
    }));
  return {
    options: opts,
    parents,
    figures: figures(sums, parents),
    nearMisses: { parents: near, figures: figures(nearSums, near) },
  };
}

const invokedDirectly = typeof process !== 'undefined' && /repairProbe\.ts$/.test(process.argv[1] ?? '');
if (invokedDirectly) {
  const args = process.argv.slice(2);
  const [tasks = '400', p = '0.5', budget = '8'] = args.filter((a) => !a.includes('='));
  const fields = Object.fromEntries(
    args
      .filter((a) => a.includes('='))
      .map((a) => [a.slice(0, a.indexOf('=')), JSON.parse(a.slice(a.indexOf('=') + 1)) as unknown]),
  );
  const { seed = 1, ...overrides } = fields as { seed?: number } & Partial<TaskSpec>;
  for (const key of Object.keys(overrides)) {
    if (!(key in DEFAULT_TASK_SPEC)) {
      throw new Error(`repairProbe: ${key} is not a task-spec field (${Object.keys(DEFAULT_TASK_SPEC).join(', ')})`);
    }
  }
  const spec = { ...DEFAULT_TASK_SPEC, ...overrides };
  for (const b of [1, Number(budget)]) {
    const r = measureRepair({ tasks: Number(tasks), p: Number(p), budget: b, seed, spec });
    console.log(
      `tasks ${tasks}, reader p ${p}, budget ${b}, seed ${seed}${Object.keys(overrides).length ? `, ${JSON.stringify(overrides)}` : ''}: ${r.parents} failing parents`,
    );
    const show = (figures: RepairFigures[]) =>
      figures.forEach((f) =>
        console.log(
          `  ${f.strategy.padEnd(10)} public all-pass ${(100 * f.publicPass).toFixed(1)}%  private all-pass ${(100 * f.privatePass).toFixed(1)}%`,
        ),
      );
    show(r.figures);
    console.log(`  of which ${r.nearMisses.parents} near misses (parent correct for at least one public test):`);
    show(r.nearMisses.figures);
  }
}
