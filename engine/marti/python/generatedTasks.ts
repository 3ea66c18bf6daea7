/**
 * Generated Python training problems (issue 31, item 1): the toy MARTI task generator's seeded tasks (tasks/generator.ts:
 * a hidden pipeline of 2–5 operations, a statement, public and private tests) rendered as HumanEval-format problems:
 *
 *   prompt      `def solve(x: list[int]) -> int:` with the statement and the public tests as doctest examples;
 *   test        `check(candidate)` asserting every public and private test (the private ones are never shown);
 *   canonical   the target program translated to Python (below), so `code check-tasks` proves each problem solvable
 *               and that the translation means what the toy interpreter computed.
 *
 * Training problems come from the generator's training split under a training seed; evaluation is HumanEval. That no
 * evaluated problem is in the training set is checked by a hash of each problem's normalised text (its prompt and its
 * canonical solution, lower-cased, whitespace collapsed): `overlapping` lists every training problem whose hash an
 * evaluated problem shares.
 */
import { createHash } from 'node:crypto';
import type { CodeTask } from '../../code/tasks/taskFile';
import type { BinaryOp, Expr, Stage } from '../lang/ast';
import { parse } from '../lang/parser';
import type { UnaryFunction } from '../lang/syntax';
import type { Value } from '../lang/values';
import { DEFAULT_TASK_SPEC, generateTasks, type MartiTask, type TaskSplit } from '../tasks/generator';

/** A value as Python writes it (repr): what doctest compares and what the tests assert. */
export function pyValue(v: Value): string {
  if (typeof v === 'boolean') return v ? 'True' : 'False';
  if (typeof v === 'number') return String(v);
  if (typeof v === 'string') return `'${v.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
  return `[${v.map(pyValue).join(', ')}]`;
}

function pyType(v: Value): string {
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return 'int';
  if (typeof v === 'string') return 'str';
  const first = v[0];
  return first === undefined ? 'list' : `list[${pyType(first)}]`;
}

const BIN: Record<BinaryOp, string> = {
  '+': '+',
  '-': '-',
  '*': '*',
  div: '//',
  mod: '%',
  '<': '<',
  '>': '>',
  '=': '==',
  and: 'and',
  or: 'or',
};

/** A built-in applied to a Python expression (the toy interpreter's semantics, for the values targets produce). */
function callPy(fn: UnaryFunction, a: string): string {
  switch (fn) {
    case 'sort':
      return `sorted(${a})`;
    case 'reverse':
      return `(${a})[::-1]`;
    case 'sum':
    case 'len':
    case 'max':
    case 'min':
    case 'abs':
      return `${fn}(${a})`;
    case 'first':
      return `(${a})[0]`;
    case 'last':
      return `(${a})[-1]`;
    case 'unique':
      return `[_y for _i, _y in enumerate(${a}) if _y not in (${a})[:_i]]`;
    case 'split':
      return `[_w for _w in (${a}).split(' ') if _w]`;
    case 'join':
      return `' '.join(${a})`;
    case 'upper':
      return `(${a}).upper()`;
    case 'lower':
      return `(${a}).lower()`;
    case 'range':
      return `list(range(${a}))`;
  }
}

/** An expression of the toy language in Python, `x` being the element or current value as in the language. */
function exprPy(e: Expr): string {
  switch (e.k) {
    case 'num':
      return String(e.value);
    case 'bool':
      return e.value ? 'True' : 'False';
    case 'text':
      return pyValue(e.value);
    case 'var':
      return 'x';
    case 'list':
      return `[${e.items.map(exprPy).join(', ')}]`;
    case 'neg':
      return `(-${exprPy(e.arg)})`;
    case 'not':
      return `(not ${exprPy(e.arg)})`;
    case 'bin':
      return `(${exprPy(e.left)} ${BIN[e.op]} ${exprPy(e.right)})`;
    case 'if':
      return `(${exprPy(e.then)} if ${exprPy(e.cond)} else ${exprPy(e.else)})`;
    case 'call':
      return callPy(e.fn, exprPy(e.arg));
  }
}

/** One pipeline stage as Python lines on `v` (the value flowing through), indented for a function body. */
function stageLines(s: Stage): string[] {
  switch (s.k) {
    case 'fn':
      return [`v = ${callPy(s.fn, 'v')}`];
    case 'map':
      return [`v = [${exprPy(s.arg)} for x in v]`];
    case 'filter':
      return [`v = [x for x in v if ${exprPy(s.arg)}]`];
    case 'apply':
      return ['x = v', `v = ${exprPy(s.arg)}`];
    case 'take':
      return ['x = v', `v = v[:max(0, ${exprPy(s.arg)})]`];
    case 'drop':
      return ['x = v', `v = v[max(0, ${exprPy(s.arg)}):]`];
    case 'while':
      return ['x = v', `while ${exprPy(s.cond)}:`, `    x = ${exprPy(s.body)}`, 'v = x'];
  }
}

/** The target program as the body of `solve(x)`. */
export function targetToPython(target: string): string {
  const p = parse(target);
  if (!p.ok) throw new Error(`the target does not parse: ${target}`);
  const lines = ['v = x', ...p.program.stages.flatMap(stageLines), 'return v'];
  return lines.map((l) => `    ${l}\n`).join('');
}

/**
 * A generated task as a HumanEval-format problem (`check`: every test in one hidden `check`, one verdict), or with each
 * test its own assert (`asserts`: the same stub shown, the tests run one by one as MBPP's are, so a node gets a verdict
 * per test — the released MARTI feedback's "# Test i / Result" lines — and `rewardMode: 'fraction'` a share).
 */
export function pythonTask(t: MartiTask, tests: 'check' | 'asserts' = 'check'): CodeTask {
  const first = t.publicTests[0]!;
  const statement = t.statement.charAt(0).toUpperCase() + t.statement.slice(1);
  const examples = t.publicTests
    .map((c) => `    >>> solve(${pyValue(c.input)})\n    ${pyValue(c.expected)}\n`)
    .join('');
  const prompt =
    `def solve(x: ${pyType(first.input)}) -> ${pyType(first.expected)}:\n` +
    `    """${statement}.\n${examples}    """\n`;
  const cases = [...t.publicTests, ...t.privateTests];
  if (tests === 'asserts') {
    return {
      id: `generated/${t.id}`,
      format: 'mbpp',
      prompt,
      entryPoint: 'solve',
      canonical: `${prompt}${targetToPython(t.target)}`,
      test: '',
      tests: cases.map((c) => `assert solve(${pyValue(c.input)}) == ${pyValue(c.expected)}`),
      setup: '',
      line: 0,
    };
  }
  const asserts = cases.map((c) => `    assert candidate(${pyValue(c.input)}) == ${pyValue(c.expected)}\n`).join('');
  return {
    id: `generated/${t.id}`,
    format: 'humaneval',
    prompt,
    entryPoint: 'solve',
    canonical: targetToPython(t.target),
    test: `def check(candidate):\n${asserts}`,
    tests: [],
    setup: '',
    line: 0,
  };
}

/**
 * The first `n` problems under `seed` of the generator's training split (or its held-out split, whose target programs
 * the training split never holds: tasks/generator.ts targetSide), as Python; `ops` narrows the pipelines' length (the
 * generator's default is 2 to 5 operations).
 */
export function generatePythonTasks(
  n: number,
  seed: number,
  ops?: { minOps: number; maxOps: number },
  split: TaskSplit = 'train',
  tests: 'check' | 'asserts' = 'check',
): CodeTask[] {
  const spec = ops ? { ...DEFAULT_TASK_SPEC, ...ops } : DEFAULT_TASK_SPEC;
  return generateTasks(split, seed, n, spec).map((t, i) => ({ ...pythonTask(t, tests), line: i + 1 }));
}

/** A problem's text, normalised: prompt and canonical solution, lower-cased, whitespace runs as one space. */
export function normalisedHash(t: CodeTask): string {
  const text = `${t.prompt}\n${t.canonical}`.toLowerCase().replace(/\s+/g, ' ').trim();
  return createHash('sha256').update(text).digest('hex');
}

/** The training problems whose normalised text an evaluated problem shares, with the one it matches. */
export function overlapping(
  train: readonly CodeTask[],
  evaluated: readonly CodeTask[],
): { train: string; evaluated: string }[] {
  const byHash = new Map(evaluated.map((t) => [normalisedHash(t), t.id]));
  return train.flatMap((t) => {
    const hit = byHash.get(normalisedHash(t));
    return hit ? [{ train: t.id, evaluated: hit }] : [];
  });
}

/** The HumanEval-format jsonl line of a problem (what `code generate-tasks` writes and `--tasks` reads). */
export function humanEvalLine(t: CodeTask): string {
  return JSON.stringify({
    task_id: t.id,
    prompt: t.prompt,
    entry_point: t.entryPoint,
    canonical_solution: t.canonical,
    test: t.test,
  });
}
