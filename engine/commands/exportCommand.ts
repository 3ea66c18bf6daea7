/**
 * `export`: a run's metrics as CSV (`--csv`), or the run as a config and launch script for a real Ray-based trainer
 * (`--to verl|marti`, engine/interop/export/): what maps is written, what does not is printed as a table, with why.
 */
import fs from 'node:fs';
import { Command, Option } from 'commander';
import { EXPORT_TARGETS, exportRun, planExport, type ExportTarget } from '../interop/export';
import { shQuote } from '../interop/export/shell';
import { submissionOf } from '../interop/export/submit';
import { metricsToCsv } from '../runs/summary/exportCsv';
import { resolveHome } from '../runs/folder/home';
import { UserError } from '../base/userError';
import { withFilePath } from './ioErrors';
import { addRayConnectionOptions, rayClient, type RayFlags } from './jobsCommand';
import { homeOption, positiveInt } from './options';
import { readMetrics } from '../runs/folder/metricsLog';
import { resolveRun } from './runSpec';
import { terminalText as tt } from './terminalText';

interface ExportFlags extends Partial<RayFlags> {
  submit?: boolean;
  csv?: boolean;
  to?: ExportTarget;
  out?: string;
  model?: string;
  nnodes?: number;
  gpusPerNode?: number;
  home?: string;
}

export function registerExportCommand(program: Command): void {
  const cmd = program
    .command('export')
    .description("a run's full metrics as CSV (--csv), or a config and launch script for verl or MARTI on Ray (--to)")
    .argument('<run>', 'run id, unique id prefix, or run folder')
    .option('--csv', "the run's metrics as CSV (no decimation)")
    .addOption(
      new Option('--to <trainer>', 'write a config and a ray job submit script for this trainer').choices([
        ...EXPORT_TARGETS,
      ]),
    )
    .option('--out <path>', 'CSV: a file instead of stdout; --to: the folder to write (default ./<trainer>-<run>)')
    .option(
      '--model <id-or-path>',
      '--to: the model to train (a Hugging Face id or a folder); without it the script asks for MODEL',
    )
    .option('--nnodes <n>', '--to: nodes of the cluster', positiveInt)
    .option('--gpus-per-node <n>', '--to: GPUs per node', positiveInt)
    .option(
      '--submit',
      '--to: also submit the job through the Ray Jobs API (--ray URL; MODEL, TRAIN_FILES or PROMPT_DATA, OUT_DIR and MARTI_DIR from the environment, as launch.sh takes them)',
    )
    .option('--ray <url>', '--submit: the Ray dashboard address, e.g. http://127.0.0.1:8265 (through an SSH tunnel)')
    .addOption(homeOption());
  addRayConnectionOptions(cmd).action(async (spec: string, opts: ExportFlags) => {
    if (Boolean(opts.csv) === Boolean(opts.to)) {
      throw new UserError('export: give exactly one of --csv or --to verl|marti');
    }
    if (opts.submit && !opts.to) throw new UserError('export: --submit goes with --to verl|marti');
    if (opts.ray && !opts.submit) {
      throw new UserError('export: --ray goes with --submit (the launch script takes RAY_ADDRESS)');
    }
    const dir = resolveRun(resolveHome({ home: opts.home }), spec);
    if (opts.to) {
      const exportOpts = {
        to: opts.to,
        out: opts.out,
        model: opts.model,
        nnodes: opts.nnodes,
        gpusPerNode: opts.gpusPerNode,
      };
      // With --submit, the URL and the launch variables are checked before anything is written.
      const client = opts.submit
        ? rayClient({ ray: opts.ray, rayToken: opts.rayToken, rayHeader: opts.rayHeader ?? [], rayCa: opts.rayCa })
        : undefined;
      const plan = planExport(dir, exportOpts);
      const request = client ? submissionOf(plan, plan.context, process.env) : undefined;
      const r = exportRun(dir, exportOpts);
      process.stdout.write(r.tables.split('\n').map(tt).join('\n'));
      console.log(
        `\nwrote ${r.files.join(', ')} to ${tt(r.out)}${opts.model || opts.submit ? '' : '\nno --model: set MODEL (a Hugging Face id or a folder) before running launch.sh'}`,
      );
      if (client && request) {
        const submissionId = await client.submit(request);
        const out = request.metadata?.['mars_lab_out_dir'] ?? '';
        const importArgs = opts.to === 'verl' ? `verl ${shQuote(out)}` : `marti ${shQuote(`${out}/workflow`)}`;
        console.log(
          `submitted job ${tt(submissionId)} to ${tt(client.where)}\nfollow it: mars-lab jobs logs ${tt(submissionId)} --ray ${tt(opts.ray)}\nwhen it has run: mars-lab import ${tt(importArgs)}`,
        );
      }
      return;
    }
    const { records, warnings } = readMetrics(dir);
    for (const w of warnings) console.error(`warning: ${tt(w)}`);
    const csv = metricsToCsv(records);
    if (opts.out) {
      const out = opts.out;
      withFilePath(out, () => fs.writeFileSync(out, csv));
      console.error(`wrote ${records.length} rows to ${tt(out)}`);
    } else {
      // On a terminal a metric name from the run folder must not drive it (terminalText.ts); piped or redirected, the
      // CSV is written byte for byte.
      process.stdout.write(process.stdout.isTTY ? csv.split('\n').map(tt).join('\n') : csv);
    }
  });
}
