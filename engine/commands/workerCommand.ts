/** `run-worker <job>`: the process a host (the app, `mars-lab serve`) starts for a run or an evaluation (engine/api). */
import { Command } from 'commander';
import { runWorkerJob } from '../api/workers/runWorker';
import { applyWorkerSlots, workerSlotsOption } from './options';

export function registerWorkerCommand(program: Command): void {
  program
    .command('run-worker', { hidden: true })
    .description('run one job of a host (JSON); reports one JSON object per stdout line')
    .argument('<job>', 'the job as JSON')
    .addOption(workerSlotsOption())
    .action(async (job: string, opts: { workerSlots?: number }) => {
      applyWorkerSlots(opts.workerSlots);
      await runWorkerJob(job);
    });
}
