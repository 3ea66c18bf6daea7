/**
 * `export`: a run's metrics as CSV (`--csv`), or the run as a config and launch script for a real Ray-based trainer
 * (`--to verl|marti`, engine/interop/export/).
 */
import fs from 'node:fs';
import { Command } from 'commander';
import { metricsToCsv } from '../runs/exportCsv';
import { resolveHome } from '../runs/home';
import { withFilePath } from './ioErrors';
import { homeOption } from './options';
import { readMetrics, resolveRun } from './runCommands';
import { terminalText as tt } from './terminalText';

export function registerExportCommand(program: Command): void {
  program
    .command('export')
    .description("write a run's full metrics (no decimation) as CSV")
    .argument('<run>', 'run id, unique id prefix, or run folder')
    .requiredOption('--csv', 'CSV')
    .option('--out <file>', 'write to a file instead of stdout')
    .addOption(homeOption())
    .action(async (spec: string, opts: { out?: string; home?: string }) => {
      const dir = resolveRun(resolveHome({ home: opts.home }), spec);
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
