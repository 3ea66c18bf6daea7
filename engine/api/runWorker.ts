/**
 * The process a host starts for a run or an evaluation (`mars-lab run-worker <job>`; runLauncher.ts). It does the work
 * the host must not do itself (DESIGN.md "Processes": the host never trains) and reports on stdout, one JSON object a
 * line:
 *   {"type":"created","runId","dir"}   the run folder exists (start) or was found (resume)
 *   {"type":"done","runId","status","step"}
 *   {"type":"result","result":…}       evaluate / compare
 * Failures go to stderr and a non-zero exit code, through the CLI's error handling.
 */
import path from 'node:path';
import { z } from 'zod';
import { compareCheckpoints, checkpointConfig, evaluateCheckpoint } from '../runs/evaluation';
import { parseRunConfig, type RunConfig } from '../runs/configSchema';
import { readRunMeta } from '../runs/runFolder';
import { resumeRun, startRun } from '../runs/runLoop';
import { initBackend } from '../tensor/backend';
import { UserError } from '../userError';

export const workerJobSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('start'), home: z.string(), config: z.unknown(), preset: z.string().optional() }),
  z.object({ kind: z.literal('resume'), runDir: z.string() }),
  z.object({ kind: z.literal('evaluate'), home: z.string(), checkpoint: z.string() }),
  z.object({ kind: z.literal('compare'), home: z.string(), a: z.string(), b: z.string() }),
]);
export type WorkerJob = z.infer<typeof workerJobSchema>;

export type WorkerLine =
  | { type: 'created'; runId: string; dir: string }
  | { type: 'done'; runId: string; status: string; step: number }
  | { type: 'result'; result: unknown };

function say(line: WorkerLine): void {
  process.stdout.write(JSON.stringify(line) + '\n');
}

async function backendFor(config: RunConfig): Promise<void> {
  await initBackend({ force: config.backend === 'auto' ? undefined : config.backend });
}

/** SIGTERM (the host's stop) and SIGINT: finish the step, checkpoint, stop. */
function stopSignal(): { signal: AbortSignal; done: () => void } {
  const controller = new AbortController();
  const onSignal = (): void => controller.abort();
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return {
    signal: controller.signal,
    done: () => {
      process.off('SIGTERM', onSignal);
      process.off('SIGINT', onSignal);
    },
  };
}

export async function runWorkerJob(jobText: string): Promise<void> {
  let raw: unknown;
  try {
    raw = JSON.parse(jobText);
  } catch (err) {
    throw new UserError(`run-worker: the job is not JSON (${(err as Error).message})`);
  }
  const parsed = workerJobSchema.safeParse(raw);
  if (!parsed.success) throw new UserError(`run-worker: not a job (${parsed.error.issues.map((i) => i.message).join('; ')})`);
  const job = parsed.data;
  switch (job.kind) {
    case 'start': {
      const config = parseRunConfig(job.config, 'the launch config');
      await backendFor(config);
      const stop = stopSignal();
      try {
        const outcome = await startRun(job.home, config, {
          preset: job.preset,
          signal: stop.signal,
          onCreated: ({ runId, dir }) => say({ type: 'created', runId, dir }),
        });
        say({ type: 'done', runId: outcome.runId, status: outcome.status, step: outcome.step });
      } finally {
        stop.done();
      }
      return;
    }
    case 'resume': {
      const meta = readRunMeta(job.runDir);
      const config = parseRunConfig(meta.config, path.join(job.runDir, 'run.json'));
      say({ type: 'created', runId: meta.id, dir: job.runDir });
      await backendFor(config);
      const stop = stopSignal();
      try {
        const outcome = await resumeRun(job.runDir, { signal: stop.signal });
        say({ type: 'done', runId: outcome.runId, status: outcome.status, step: outcome.step });
      } finally {
        stop.done();
      }
      return;
    }
    case 'evaluate': {
      const config = checkpointConfig(job.checkpoint);
      await backendFor(config);
      say({ type: 'result', result: await evaluateCheckpoint(job.home, job.checkpoint, config) });
      return;
    }
    case 'compare': {
      await backendFor(checkpointConfig(job.a));
      say({ type: 'result', result: await compareCheckpoints(job.home, job.a, job.b) });
      return;
    }
  }
}
