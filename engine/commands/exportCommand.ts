/**
 * `export`: a run's metrics as CSV (`--csv`), or the run as a config and launch script for a real Ray-based trainer
 * (`--to verl|marti`, engine/interop/export/): what maps is written, what does not is printed as a table, with why.
 */
import fs from 'node:fs';
import { Command, InvalidArgumentError, Option } from 'commander';
import { EXPORT_TARGETS, exportRun, type ExportTarget } from '../interop/export';
import { metricsToCsv } from '../runs/exportCsv';
import { resolveHome } from '../runs/home';
import { UserError } from '../userError';
import { withFilePath } from './ioErrors';
import { homeOption } from './options';
import { readMetrics, resolveRun } from './runCommands';
import { terminalText as tt } from './terminalText';

function positiveInt(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('expected a positive integer');
  return Number(v);
}

interface ExportFlags {
  csv?: boolean;
  to?: ExportTarget;
  out?: string;
  model?: string;
  nnodes?: number;
  gpusPerNode?: number;
  home?: string;
}

export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description("a run's full metrics as CSV (--csv), or a config and launch script for verl or MARTI on Ray (--to)")
    .argument('<run>', 'run id, unique id prefix, or run folder')
    .option('--csv', "the run's metrics as CSV (no decimation)")
    .addOption(new Option('--to <trainer>', 'write a config and a ray job submit script for this trainer').choices([...EXPORT_TARGETS]))
    .option('--out <path>', 'CSV: a file instead of stdout; --to: the folder to write (default ./<trainer>-<run>)')
    .option('--model <id-or-path>', '--to: the model to train (a Hugging Face id or a folder); without it the script asks for MODEL')
    .option('--nnodes <n>', '--to: nodes of the cluster', positiveInt)
    .option('--gpus-per-node <n>', '--to: GPUs per node', positiveInt)
    .addOption(homeOption())
    .action((spec: string, opts: ExportFlags) => {
      if (Boolean(opts.csv) === Boolean(opts.to)) throw new UserError('export: give exactly one of --csv or --to verl|marti');
      const dir = resolveRun(resolveHome({ home: opts.home }), spec);
      if (opts.to) {
        const r = exportRun(dir, { to: opts.to, out: opts.out, model: opts.model, nnodes: opts.nnodes, gpusPerNode: opts.gpusPerNode });
        process.stdout.write(r.tables.split('\n').map(tt).join('\n'));
        console.log(`\nwrote ${r.files.join(', ')} to ${tt(r.out)}${opts.model ? '' : '\nno --model: set MODEL (a Hugging Face id or a folder) before running launch.sh'}`);
        return;
      }
      const { records, warnings } = readMetrics(dir);
      for (const w of warnings) console.error(`warning: ${tt(w)}`);
      const csv = metricsToCsv(records);
      if (opts.out) {
        const out = opts.out;
        withFilePath(out, () => fs.writeFileSync(out, csv));
        console.error(`wrote ${records.length} rows to ${tt(out)}`);
      } else process.stdout.write(csv);
    });
}
