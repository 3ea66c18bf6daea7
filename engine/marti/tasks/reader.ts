/**
 * The stand-in reader of the MARTI world: a noisy reader of a task's statement, which reads each op right with
 * probability p, otherwise as a random op of the current type (so one misreading can derail the types after it); where
 * the statement leaves a parameter out, a right reading guesses the parameter uniformly. It stands for a weak policy
 * that knows the syntax and some of the phrase → op mapping: corpus.ts draws noisy parents with it, and the repair
 * probe (tests/study/repairProbe.ts) measures refinement strategies against it.
 */
import type { Rng } from '../../random/prng';
import type { MartiTask } from './generator';
import { drawOp, opById, type OpInstance, type TaskType } from './ops';

/** The task's own ops, in order. */
export function truthOf(task: MartiTask): OpInstance[] {
  return task.ops.map(opById);
}

/** Reads one op: `truth` with probability p when its input type fits (a vague one with a guessed parameter), else a random op of `type`. */
export function readOp(
  rng: Rng,
  truth: OpInstance | undefined,
  vague: boolean,
  type: TaskType,
  p: number,
): OpInstance | null {
  if (truth !== undefined && truth.spec.from === type && rng.next() < p) {
    // A phrase without its number gives the op but not the parameter: the reader guesses one.
    if (!vague) return truth;
    return { spec: truth.spec, param: truth.spec.params[rng.int(truth.spec.params.length)]! };
  }
  return drawOp(rng, type, null);
}

/** A reader(p) guess: the statement's ops, each misread with probability 1 − p. */
export function readerGuess(rng: Rng, task: MartiTask, p: number): OpInstance[] | null {
  const chain: OpInstance[] = [];
  let type: TaskType = task.inputKind;
  for (const [i, t] of truthOf(task).entries()) {
    const o = readOp(rng, t, task.vague[i]!, type, p);
    if (o === null) return null; // a misread into a terminal type (bool) with ops left: the guess stops being a program
    chain.push(o);
    type = o.spec.to;
  }
  return chain;
}
