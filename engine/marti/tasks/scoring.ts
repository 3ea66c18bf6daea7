/**
 * Scoring a MARTI node's program against its task, and the feedback a refining agent reads
 * (docs/algorithms.md §3.2 feedback, §3.3 node reward, §3.10 (a) rich feedback for T+, §3.12 unparsable programs).
 *
 *   publicScore   1 if the program passes every public test, else 0 (`rewardMode: 'fraction'`: the share passed)
 *   privateScore  the same on the private tests; metrics only, never shown to an agent
 *
 * Feedback formats (all in the word tokenizer's normal form, every word in martiVocabulary()):
 *   perTest  "example 1: correct. example 2: wrong. example 3: wrong. correct for 1 of 3."   (the released format)
 *   binary   "all examples correct." | "some examples wrong."
 *   rich     perTest, where each wrong example also shows its input, the expected and the actual output or the
 *            error: "example 2: wrong. input [1, 2] expected 3 got 4." /
 *            "example 3: wrong. input [5] expected 5 got error timeout: step budget used up."
 * A program that does not parse gets "no valid program." (rich adds "error parse: <message>.").
 */
import type { LangError } from '../lang/errors';
import { DEFAULT_RUN_LIMITS, run, type RunLimits } from '../lang/interpreter';
import { parse } from '../lang/parser';
import { printProgram } from '../lang/printer';
import { joinTokens, numberTokens, textTokens } from '../lang/text';
import { valueEquals, valueTokens, type Value } from '../lang/values';
import type { MartiTask, TestCase } from './generator';
import { TEXT_WORDS } from './ops';

export type RewardMode = 'allPass' | 'fraction';
export type FeedbackMode = 'perTest' | 'binary' | 'rich';

export interface TestOutcome {
  input: Value;
  expected: Value;
  passed: boolean;
  /** The program's output, or null when it failed with `error`. */
  actual: Value | null;
  error: LangError | null;
}

export interface ProgramEvaluation {
  /** Canonical text of the program, or null when it does not parse (§3.2 program extraction). */
  program: string | null;
  parseError: LangError | null;
  publicTests: TestOutcome[];
  privateTests: TestOutcome[];
  publicPassed: number;
  privatePassed: number;
  /** §3.3: all-pass (default) or fraction of public tests passed. The search and RL signal. */
  publicScore: number;
  /** The same on private tests; for metrics only. */
  privateScore: number;
}

export interface EvaluateOptions {
  rewardMode?: RewardMode;
  limits?: RunLimits;
}

/** The words feedback adds to statements, programs and values (vocabulary.ts collects them). */
export const FEEDBACK_WORDS = [
  'example',
  'correct',
  'wrong',
  'for',
  'of',
  'all',
  'examples',
  'some',
  'no',
  'valid',
  'program',
  'input',
  'expected',
  'got',
  'error',
  'parse',
  'timeout',
  'memory',
  'runtime',
] as const;

const KNOWN_WORDS: ReadonlySet<string> = new Set([...TEXT_WORDS, ...TEXT_WORDS.map((w) => w.toUpperCase())]);
/** Displayed values keep only words the vocabulary has; others (e.g. a reversed word) show as `?`. */
export const knownTextWord = (w: string): boolean => KNOWN_WORDS.has(w);

function score(passed: number, total: number, mode: RewardMode): number {
  if (total === 0) return 0;
  return mode === 'fraction' ? passed / total : passed === total ? 1 : 0;
}

function runTests(program: ReturnType<typeof parse>, tests: readonly TestCase[], limits: RunLimits): TestOutcome[] {
  return tests.map((t) => {
    if (!program.ok) return { input: t.input, expected: t.expected, passed: false, actual: null, error: program.error };
    const r = run(program.program, t.input, limits);
    return r.ok
      ? { input: t.input, expected: t.expected, passed: valueEquals(r.value, t.expected), actual: r.value, error: null }
      : { input: t.input, expected: t.expected, passed: false, actual: null, error: r.error };
  });
}

/** Runs a node's program on its task's public and private tests. `text` null (nothing extracted) scores 0. */
export function evaluateProgram(text: string | null, task: MartiTask, opts: EvaluateOptions = {}): ProgramEvaluation {
  const mode = opts.rewardMode ?? 'allPass';
  const limits = opts.limits ?? DEFAULT_RUN_LIMITS;
  const parsed: ReturnType<typeof parse> =
    text === null
      ? { ok: false, error: { kind: 'parse', message: 'expected stage found end of program', position: 0 } }
      : parse(text, limits.parse);
  const publicTests = runTests(parsed, task.publicTests, limits);
  const privateTests = runTests(parsed, task.privateTests, limits);
  const publicPassed = publicTests.filter((t) => t.passed).length;
  const privatePassed = privateTests.filter((t) => t.passed).length;
  return {
    program: parsed.ok ? printProgram(parsed.program) : null,
    parseError: parsed.ok ? null : parsed.error,
    publicTests,
    privateTests,
    publicPassed,
    privatePassed,
    publicScore: score(publicPassed, publicTests.length, mode),
    privateScore: score(privatePassed, privateTests.length, mode),
  };
}

function errorTokens(e: LangError): string[] {
  return ['error', e.kind, ':', ...textTokens(e.message)];
}

/** §3.2 feedback on the public tests, in the chosen format. */
export function feedbackText(ev: ProgramEvaluation, mode: FeedbackMode = 'perTest'): string {
  const out: string[] = [];
  if (ev.program === null) {
    out.push('no', 'valid', 'program', '.');
    if (mode === 'rich' && ev.parseError !== null) out.push(...errorTokens(ev.parseError), '.');
    return joinTokens(out);
  }
  if (mode === 'binary') {
    out.push(
      ...(ev.publicPassed === ev.publicTests.length ? ['all', 'examples', 'correct'] : ['some', 'examples', 'wrong']),
      '.',
    );
    return joinTokens(out);
  }
  ev.publicTests.forEach((t, i) => {
    out.push('example', ...numberTokens(i + 1), ':', t.passed ? 'correct' : 'wrong', '.');
    if (mode === 'rich' && !t.passed) {
      out.push('input', ...valueTokens(t.input, { knownWord: knownTextWord }));
      out.push('expected', ...valueTokens(t.expected, { knownWord: knownTextWord }), 'got');
      if (t.error !== null) out.push(...errorTokens(t.error));
      else out.push(...valueTokens(t.actual!, { knownWord: knownTextWord }));
      out.push('.');
    }
  });
  out.push('correct', 'for', ...numberTokens(ev.publicPassed), 'of', ...numberTokens(ev.publicTests.length), '.');
  return joinTokens(out);
}
