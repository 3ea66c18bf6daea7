/**
 * `import verl DIR` / `import marti DIR`: another trainer's rollouts as a mars-lab run folder in the home, so the
 * group grid, token view, charts and compare work on them (issue 18 part 4; engine/interop/import/).
 */
import { Command } from 'commander';
import { importMarti } from '../interop/import/marti';
import { importVerl } from '../interop/import/verl';
import type { ImportOptions, ImportProgress } from '../interop/import/common';
import { resolveHome } from '../runs/folder/home';
import { homeOption, positiveInt } from './options';
import { terminalText as tt } from './terminalText';

/** Progress on a terminal only (a line rewritten in place), and a JSON line per report with --json. */
function progressOf(json: boolean | undefined): ((p: ImportProgress) => void) | undefined {
  if (json) {
    return (p) =>
      process.stdout.write(JSON.stringify({ type: 'progress', bytes: p.bytes, totalBytes: p.totalBytes }) + '\n');
  }
  if (!process.stderr.isTTY) return undefined;
  return (p) =>
    process.stderr.write(
      `\rimport: ${(p.bytes / 2 ** 20).toFixed(1)} of ${(p.totalBytes / 2 ** 20).toFixed(1)} MiB read`,
    );
}

interface ImportFlags {
  home?: string;
  id?: string;
  metrics?: string;
  nodes?: number;
  json?: boolean;
}

export function registerImportCommand(program: Command): void {
  const cmd = program
    .command('import')
    .description("another trainer's rollouts as a run folder (verl rollout dumps, MARTI tree-search logs)");
  const run = async (from: 'verl' | 'marti', dir: string, opts: ImportFlags) => {
    const options: ImportOptions = {
      home: resolveHome({ home: opts.home }),
      dir,
      id: opts.id,
      metricsFile: opts.metrics,
      nodesPerTree: opts.nodes,
      onProgress: progressOf(opts.json),
      onWarning: (m) => process.stderr.write(`${process.stderr.isTTY && !opts.json ? '\n' : ''}warning: ${tt(m)}\n`),
    };
    const r = from === 'verl' ? await importVerl(options) : await importMarti(options);
    if (process.stderr.isTTY && !opts.json) process.stderr.write('\n');
    if (opts.json) {
      process.stdout.write(
        JSON.stringify({
          type: 'imported',
          runId: r.id,
          dir: r.dir,
          records: r.records,
          skipped: r.skipped,
          steps: r.steps,
        }) + '\n',
      );
    } else {
      console.log(
        `imported ${r.records} ${from === 'verl' ? 'samples' : 'calls'} over ${r.steps} steps as run ${tt(r.id)}${r.skipped ? ` (${r.skipped} skipped, see warnings)` : ''}\nfolder: ${tt(r.dir)}`,
      );
    }
  };
  cmd
    .command('verl')
    .description(
      "verl's rollout dumps (trainer.rollout_data_dir: one <step>.jsonl per step) and its file-logger metrics",
    )
    .argument('<dir>', 'the rollout_data_dir (or a folder holding it and the file-logger JSONL)')
    .option('--metrics <file>', "verl's file-logger JSONL ($VERL_FILE_LOGGER_PATH), when it is not under DIR")
    .option('--id <runId>', "the new run's id (default: date, time and the folder's name)")
    .option('--json', 'progress and the result as JSON lines on stdout')
    .addOption(homeOption())
    .action((dir: string, opts: ImportFlags) => run('verl', dir, opts));
  cmd
    .command('marti')
    .description(
      "MARTI's tree-search logs (workflow save_path: <prompt>/llm_logs/log_<time>_<agent>.txt, score CSVs) and TensorBoard metrics",
    )
    .argument('<dir>', "the workflow's save_path (workflow_args.save_path)")
    .option(
      '--nodes <n>',
      "nodes per tree (workflow_args.max_num_nodes): cuts each prompt folder's calls into trees, one per step",
      positiveInt,
    )
    .option(
      '--metrics <path>',
      "MARTI's TensorBoard folder (--use_tensorboard …/<run name>) or event file, when it is not under DIR",
    )
    .option('--id <runId>', "the new run's id (default: date, time and the folder's name)")
    .option('--json', 'progress and the result as JSON lines on stdout')
    .addOption(homeOption())
    .action((dir: string, opts: ImportFlags) => run('marti', dir, opts));
}
