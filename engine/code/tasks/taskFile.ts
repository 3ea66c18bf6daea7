/**
 * Python coding problems from a task file, as the benchmarks publish them (issue 31, item 1):
 *
 *   HumanEval (openai/human-eval; jsonl or jsonl.gz), one problem a line:
 *     {"task_id": "HumanEval/0", "prompt": "def f(...):\n    \"\"\"...\"\"\"\n", "entry_point": "f",
 *      "canonical_solution": "    return ...\n", "test": "def check(candidate):\n    assert ...\n"}
 *     A completion continues the prompt; the program is prompt + completion + "\n" + test + "\n" + "check(f)",
 *     exactly human-eval's `check_program`.
 *   MBPP (google-research/mbpp), one problem a line:
 *     {"task_id": 11, "text": "Write a function ...", "code": "def f(...): ...", "test_list": ["assert f(1) == 2"],
 *      "test_setup_code": ""}
 *     (the sanitized release's `prompt` and `test_imports` are read too). A completion is a whole program; the program
 *     is the setup code and the completion, then each assert of test_list is a test of its own.
 *
 * Extra fields (HumanEval+'s, for instance) are ignored. Every line is validated with zod and an error names the line,
 * the field and the fix. `checkTasks` runs each problem's canonical solution against its own tests in the sandbox and
 * returns the ones that fail, with the reason; the caller lists them (never dropped silently).
 */
import { z } from 'zod';
import { UserError } from '../../base/userError';
import type { SandboxLimits } from '../sandbox/limits';
import type { Isolation } from '../sandbox/isolation';
import { runAll } from '../sandbox/pool';
import type { SandboxRequest, SandboxResult } from '../sandbox/sandbox';
import { firstIssue, readJsonLines } from './jsonLines';

const identifier = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]*$/, { error: 'a Python identifier (the function to test)' });
const code = (what: string) => z.string({ error: `${what}: Python source as a string` }).max(1 << 20);

const humanEvalSchema = z.object({
  task_id: z.string().min(1).max(200),
  prompt: code('the prompt'),
  entry_point: identifier,
  canonical_solution: code('the canonical solution (a completion of the prompt)'),
  test: code('the test code (defines check(candidate))'),
});

const mbppSchema = z
  .object({
    task_id: z.union([z.int(), z.string().min(1).max(200)]),
    text: z
      .string()
      .max(1 << 16)
      .optional(),
    prompt: z
      .string()
      .max(1 << 16)
      .optional(),
    code: code('the reference solution'),
    test_list: z.array(z.string().max(1 << 16)).min(1, { error: 'at least one assert' }),
    test_setup_code: z
      .string()
      .max(1 << 20)
      .default(''),
    test_imports: z.array(z.string().max(1000)).default([]),
  })
  .refine((t) => t.text !== undefined || t.prompt !== undefined, {
    error: 'a problem statement: `text` (MBPP) or `prompt` (sanitized MBPP)',
    path: ['text'],
  });

export type TaskFormat = 'humaneval' | 'mbpp';

export interface CodeTask {
  id: string;
  format: TaskFormat;
  /** What a model is shown: HumanEval's prompt (to be continued) or MBPP's statement. */
  prompt: string;
  /** HumanEval's function under test; null for MBPP. */
  entryPoint: string | null;
  /** The reference solution, in the form a sample's completion takes. */
  canonical: string;
  /** HumanEval's test code (defining check); empty for MBPP. */
  test: string;
  /** MBPP's asserts, each a test; empty for HumanEval (one program). */
  tests: string[];
  /** MBPP's setup code and imports, run before the completion. */
  setup: string;
  /** Line of the task file. */
  line: number;
}

function formatOf(value: unknown): TaskFormat | null {
  if (typeof value !== 'object' || value === null) return null;
  if ('entry_point' in value || 'canonical_solution' in value) return 'humaneval';
  if ('test_list' in value || 'code' in value) return 'mbpp';
  return null;
}

/** The problems of a HumanEval- or MBPP-format file (`format` 'auto': told by the first problem's fields). */
export function loadTaskFile(file: string, format: TaskFormat | 'auto' = 'auto'): CodeTask[] {
  const lines = readJsonLines(file, '--tasks');
  if (lines.length === 0) throw new UserError(`--tasks ${file}: no problems (one JSON object a line)`);
  const fmt = format === 'auto' ? formatOf(lines[0]!.value) : format;
  if (!fmt) {
    throw new UserError(
      `--tasks ${file}: line ${lines[0]!.line} is neither HumanEval (task_id, prompt, entry_point, canonical_solution, ` +
        'test) nor MBPP (task_id, text, code, test_list); give such a file, or --format humaneval|mbpp',
    );
  }
  const tasks: CodeTask[] = [];
  const seen = new Map<string, number>();
  for (const { line, value } of lines) {
    const task = fmt === 'humaneval' ? humanEvalTask(file, line, value) : mbppTask(file, line, value);
    const earlier = seen.get(task.id);
    if (earlier !== undefined) {
      throw new UserError(
        `--tasks ${file}: line ${line}: task_id ${task.id} is also on line ${earlier} (ids are unique)`,
      );
    }
    seen.set(task.id, line);
    tasks.push(task);
  }
  return tasks;
}

function humanEvalTask(file: string, line: number, value: unknown): CodeTask {
  const r = humanEvalSchema.safeParse(value);
  if (!r.success) {
    throw new UserError(`--tasks ${file}: line ${line} (HumanEval format): ${firstIssue(r.error.issues)}`);
  }
  const t = r.data;
  return {
    id: t.task_id,
    format: 'humaneval',
    prompt: t.prompt,
    entryPoint: t.entry_point,
    canonical: t.canonical_solution,
    test: t.test,
    tests: [],
    setup: '',
    line,
  };
}

function mbppTask(file: string, line: number, value: unknown): CodeTask {
  const r = mbppSchema.safeParse(value);
  if (!r.success) throw new UserError(`--tasks ${file}: line ${line} (MBPP format): ${firstIssue(r.error.issues)}`);
  const t = r.data;
  return {
    id: String(t.task_id),
    format: 'mbpp',
    prompt: t.text ?? t.prompt ?? '',
    entryPoint: null,
    canonical: t.code,
    test: '',
    tests: t.test_list,
    setup: [...t.test_imports, t.test_setup_code].filter((s) => s.trim() !== '').join('\n'),
    line,
  };
}

/** The sandbox request that scores `completion` on `task` (human-eval's check_program for HumanEval). */
export function taskRequest(task: CodeTask, completion: string): SandboxRequest {
  if (task.format === 'humaneval') {
    return { program: `${task.prompt}${completion}\n${task.test}\ncheck(${task.entryPoint})` };
  }
  return { program: task.setup ? `${task.setup}\n${completion}` : completion, tests: task.tests };
}

export interface BrokenTask {
  task: CodeTask;
  result: SandboxResult;
}

/** Each task's canonical solution against its own tests; the tasks whose solution fails, with the reason. */
export async function checkTasks(
  tasks: readonly CodeTask[],
  iso: Isolation,
  limits: SandboxLimits,
  workers?: number,
  onDone?: (finished: number, total: number) => void,
): Promise<BrokenTask[]> {
  const results = await runAll(
    iso,
    limits,
    tasks.map((t) => taskRequest(t, t.canonical)),
    workers,
    onDone,
  );
  return tasks.flatMap((task, i) => (results[i]!.passed ? [] : [{ task, result: results[i]! }]));
}
