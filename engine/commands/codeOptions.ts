/**
 * What the code commands share (codeCommands.ts, codeTreeCommand.ts): the sandbox options and their validation, the
 * task file or named data set, and a progress line on stderr.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { z } from 'zod';
import { UserError } from '../base/userError';
import { detectIsolation, describeIsolation, OPT_OUT_FLAG, type Isolation } from '../code/sandbox/isolation';
import { DEFAULT_LIMITS, sandboxLimitsSchema, type SandboxLimits } from '../code/sandbox/limits';
import { defaultWorkers } from '../code/sandbox/pool';
import { taskFilePath } from '../code/tasks/namedTasks';
import { loadTaskFile, type CodeTask, type TaskFormat } from '../code/tasks/taskFile';

const seconds = (v: string): number => {
  const x = Number(v);
  if (!/^\d+(\.\d+)?$/.test(v) || !(x > 0) || x > 3600) {
    throw new InvalidArgumentError('expected seconds, e.g. 3 or 0.5 (at most 3600)');
  }
  return x;
};
export const count = (v: string): number => {
  if (!/^[1-9]\d{0,3}$/.test(v)) throw new InvalidArgumentError('expected a whole number from 1 to 9999');
  return Number(v);
};
const megabytes = (v: string): number => {
  if (!/^[1-9]\d{0,5}$/.test(v)) throw new InvalidArgumentError('expected megabytes, e.g. 1024');
  return Number(v);
};

/** The options every code command shares, validated together once commander has parsed them. */
const sandboxOptionsSchema = z.object({
  timeout: z.number().positive().default(DEFAULT_LIMITS.timeoutS),
  workers: z.number().int().positive().optional(),
  memoryMb: z.number().int().positive().optional(),
  python: z.string().min(1).optional(),
  unsafeNoSandbox: z.boolean().optional(),
  format: z.enum(['auto', 'humaneval', 'mbpp']).default('auto'),
});
type SandboxOptions = z.infer<typeof sandboxOptionsSchema>;

export function addSandboxOptions(cmd: Command): Command {
  return cmd
    .option('--timeout <s>', 'seconds each program may run (human-eval: 3)', seconds, DEFAULT_LIMITS.timeoutS)
    .option('--workers <n>', `programs at once (default: the cores, ${defaultWorkers()} here)`, count)
    .option('--memory-mb <n>', `address space of each program (default ${DEFAULT_LIMITS.memoryBytes >> 20})`, megabytes)
    .option('--python <path>', 'the Python interpreter (default /usr/bin/python3, else python3 on PATH)')
    .addOption(
      new Option('--format <f>', 'the task file format (default: told by its fields)').choices([
        'auto',
        'humaneval',
        'mbpp',
      ]),
    )
    .option(
      OPT_OUT_FLAG,
      'when bubblewrap is missing, run programs with rlimits only: they can read your files and use the network',
    );
}

export async function prepareSandbox(
  opts: unknown,
): Promise<{ o: SandboxOptions; iso: Isolation; limits: SandboxLimits }> {
  const parsed = sandboxOptionsSchema.safeParse(opts);
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    throw new UserError(`--${String(i?.path[0] ?? 'option')}: ${i?.message ?? 'invalid'}`);
  }
  const o = parsed.data;
  const limits = sandboxLimitsSchema.parse({
    ...DEFAULT_LIMITS,
    timeoutS: o.timeout,
    ...(o.memoryMb ? { memoryBytes: o.memoryMb * 2 ** 20 } : {}),
  });
  const iso = await detectIsolation({ python: o.python, allowUnsandboxed: o.unsafeNoSandbox === true });
  process.stderr.write(`${describeIsolation(iso)}\n`);
  return { o, iso, limits };
}

/** A task file path, or the name of a data set `data fetch` knows (its cached copy). */
export async function resolveTasks(spec: string, format: TaskFormat | 'auto'): Promise<CodeTask[]> {
  return loadTaskFile(await taskFilePath(spec, '--tasks'), format);
}

/** Progress of long work on stderr: a line rewritten in place on a terminal, else a line every 10 s. */
export function progress(label: string): (finished: number, total: number) => void {
  const start = performance.now();
  let last = 0;
  return (finished, total) => {
    const now = performance.now();
    const end = finished === total;
    if (!end && now - last < (process.stderr.isTTY ? 200 : 10_000)) return;
    last = now;
    const rate = finished / Math.max(1e-3, (now - start) / 1000);
    const text = `${label} ${finished}/${total} (${rate.toFixed(1)}/s)`;
    if (process.stderr.isTTY) process.stderr.write(`\r${text}${end ? '\n' : ''}`);
    else process.stderr.write(`${text}\n`);
  };
}
