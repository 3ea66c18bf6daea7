/**
 * Pretraining corpus for the MARTI base model (issue 5, "Base model"): random well-formed programs with their
 * statements and test outputs, laid out exactly as the search's prompts (prompts.ts), so that a base model learns the
 * syntax and both prompt formats but not the held-out targets.
 *
 * Drawn from its own seed stream on the training side only: every program's text hashes to the training side
 * (generator.ts targetSide), so no held-out target ever appears. Programs have 1–5 ops and skip the degeneracy checks
 * (the corpus teaches form, not hard problems). A share of examples uses the refine layout: the parent is a random
 * single edit of the program (mutations.ts) that fails some public test, with its feedback, and the completion is the
 * program itself. With `noisyParents` > 0, that share of parents is instead a noisy read of the statement
 * (reader.ts readerGuess at p 0.5): several operations may be wrong, as in a weak policy's own failing programs.
 * Each example keeps prompt and completion apart, so a loss mask can cover only the program.
 */
import { Rng } from '../../random/prng';
import { refinePrompt, rootPrompt } from '../prompts';
import { DEFAULT_TASK_SPEC, generateTask, programText, type MartiTask, type TaskSpec } from './generator';
import { mutateChain } from './mutations';
import { readerGuess } from './reader';
import { opById } from './ops';
import { evaluateProgram, feedbackText, type FeedbackMode } from './scoring';

export interface CorpusExample {
  kind: 'root' | 'refine';
  prompt: string;
  /** The program (the trainer appends EOS); the loss covers only these tokens. */
  completion: string;
  taskSeed: number;
}

export interface CorpusOptions {
  /** Share of refine-layout examples. Default 0.25. */
  refineShare?: number;
  /** Share of refine parents that are noisy reads of the statement rather than single edits. Default 0. */
  noisyParents?: number;
  feedback?: FeedbackMode;
  rolePrompt?: string;
  /** Overrides of the task spec; the corpus default is 1–5 ops without degeneracy checks. */
  spec?: Partial<TaskSpec>;
}

/** How the reader that writes noisy parents reads each operation right. */
const NOISY_PARENT_P = 0.5;

function refineExample(
  rng: Rng,
  task: MartiTask,
  feedback: FeedbackMode,
  rolePrompt: string | undefined,
  noisyParents: number,
): CorpusExample | null {
  const chain = task.ops.map(opById);
  for (let tries = 0; tries < 10; tries++) {
    // No draw at share 0, so the shipped base's corpus is unchanged.
    const noisy = noisyParents > 0 && rng.next() >= 1 - noisyParents;
    const parent = noisy ? readerGuess(rng, task, NOISY_PARENT_P) : mutateChain(rng, task.inputKind, chain);
    if (parent === null || parent.length === 0) continue;
    const ev = evaluateProgram(programText(parent), task);
    if (ev.publicPassed === task.publicTests.length) continue;
    const opts = rolePrompt === undefined ? {} : { rolePrompt };
    return {
      kind: 'refine',
      prompt: refinePrompt(task, ev.program, feedbackText(ev, feedback), opts),
      completion: task.target,
      taskSeed: task.seed,
    };
  }
  return null;
}

/** The first `n` corpus examples for a base seed; a prefix of any longer corpus with the same options. */
export function pretrainCorpus(baseSeed: number, n: number, opts: CorpusOptions = {}): CorpusExample[] {
  if (!(Number.isInteger(n) && n >= 0)) throw new RangeError(`MARTI corpus size must be an integer ≥ 0, got ${n}`);
  const spec: TaskSpec = { ...DEFAULT_TASK_SPEC, minOps: 1, rejectDegenerate: false, ...opts.spec };
  const refineShare = opts.refineShare ?? 0.25;
  const feedback = opts.feedback ?? 'perTest';
  const seeds = new Rng(baseSeed).split('marti-corpus');
  const out: CorpusExample[] = [];
  while (out.length < n) {
    // Even seeds, like training task seeds; the target side (not the seed) is what keeps held-out programs out.
    const seed = (seeds.nextUint32() & ~1) >>> 0;
    const task = generateTask(seed, 'train', spec);
    const rng = new Rng(seed).split('marti-corpus-example');
    const example =
      rng.next() < refineShare ? refineExample(rng, task, feedback, opts.rolePrompt, opts.noisyParents ?? 0) : null;
    const promptOpts = opts.rolePrompt === undefined ? {} : { rolePrompt: opts.rolePrompt };
    out.push(
      example ?? { kind: 'root', prompt: rootPrompt(task, promptOpts), completion: task.target, taskSeed: seed },
    );
  }
  return out;
}
