/**
 * The process a host starts for a run or an evaluation (`mars-lab run-worker <job>`; runLauncher.ts). It does the work
 * the host must not do itself (docs/architecture.md "Processes": the host never trains) and reports on stdout, one JSON object a
 * line:
 *   {"type":"created","runId","dir"}   the run folder exists (start) or was found (resume)
 *   {"type":"done","runId","status","step"}
 *   {"type":"result","file"}           evaluate / compare: the result is in that file (runLauncher.ts workerResult)
 * Failures go to stderr and a non-zero exit code, through the CLI's error handling.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { compareCheckpoints, checkpointConfig, evaluateCheckpoint } from '../../runs/evaluation/evaluation';
import { parseRunConfig, type RunConfig } from '../../runs/config/configSchema';
import { readRunMeta } from '../../runs/folder/runFolder';
import { resumeRun, startRun } from '../../runs/runLoop';
import { initBackend } from '../../tensor/backend';
import { UserError } from '../../base/userError';
import { jsonParseProblem } from '../../base/boundedText';
import { isEndpointEvalRun, resumeEndpointEvalRun, startEndpointEvalRun } from '../endpointEval/endpointEvalRun';
import { workerResultsDir } from './runLauncher';

export const workerJobSchema = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('start'), home: z.string(), config: z.unknown(), preset: z.string().optional() }),
  z.object({ kind: z.literal('resume'), runDir: z.string() }),
  z.object({ kind: z.literal('evaluate'), home: z.string(), checkpoint: z.string() }),
  z.object({ kind: z.literal('compare'), home: z.string(), a: z.string(), b: z.string() }),
  z.object({
    kind: z.literal('endpointEval'),
    home: z.string(),
    config: z.unknown(),
    preset: z.string().optional(),
    fresh: z.boolean().optional(),
  }),
]);
export type WorkerJob = z.infer<typeof workerJobSchema>;

export type WorkerLine =
  | { type: 'created'; runId: string; dir: string }
  | { type: 'done'; runId: string; status: string; step: number }
  | { type: 'result'; file: string };

function say(line: WorkerLine): void {
  process.stdout.write(JSON.stringify(line) + '\n');
}

/** Result files older than this were left by a host that ended before reading them. */
const STALE_RESULT_MS = 24 * 3600 * 1000;

/**
 * Writes a result where its host will read it (runLauncher.ts workerResult): whole under its final name or not at all
 * (a temp file renamed), since the host may look as soon as the path is said. Leftovers of earlier hosts are removed.
 */
export function writeWorkerResult(home: string, result: unknown): string {
  const dir = workerResultsDir(home);
  fs.mkdirSync(dir, { recursive: true });
  for (const name of fs.readdirSync(dir)) {
    const file = path.join(dir, name);
    try {
      if (Date.now() - fs.statSync(file).mtimeMs > STALE_RESULT_MS) fs.rmSync(file, { force: true });
    } catch {
      // another worker removed it first
    }
  }
  const file = path.join(dir, `${Date.now()}-${process.pid}-${randomBytes(6).toString('hex')}.json`);
  const tmp = `${file}.tmp`;
  try {
    fs.writeFileSync(tmp, JSON.stringify(result));
    fs.renameSync(tmp, file);
  } catch (err) {
    fs.rmSync(tmp, { force: true });
    throw err;
  }
  return file;
}

async function backendFor(config: RunConfig): Promise<void> {
  await initBackend({
    force: config.backend === 'auto' ? undefined : config.backend,
    blasThreads: config.blasThreads === undefined ? undefined : { threads: config.blasThreads, from: 'config' },
  });
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
    throw new UserError(`run-worker: the job is not JSON (${jsonParseProblem(err)})`);
  }
  const parsed = workerJobSchema.safeParse(raw);
  if (!parsed.success) {
    throw new UserError(`run-worker: not a job (${parsed.error.issues.map((i) => i.message).join('; ')})`);
  }
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
        const outcome = isEndpointEvalRun(config) // an evaluation with endpoint agents: its answered requests replay
          ? await resumeEndpointEvalRun(job.runDir, { signal: stop.signal })
          : await resumeRun(job.runDir, { signal: stop.signal });
        say({ type: 'done', runId: outcome.runId, status: outcome.status, step: outcome.step });
      } finally {
        stop.done();
      }
      return;
    }
    case 'evaluate': {
      const config = checkpointConfig(job.checkpoint);
      await backendFor(config);
      say({
        type: 'result',
        file: writeWorkerResult(job.home, await evaluateCheckpoint(job.home, job.checkpoint, config)),
      });
      return;
    }
    case 'endpointEval': {
      await backendFor(parseRunConfig(job.config, 'the evaluation config'));
      const stop = stopSignal();
      try {
        const outcome = await startEndpointEvalRun(job.home, job.config, {
          preset: job.preset,
          fresh: job.fresh,
          signal: stop.signal,
          onCreated: ({ runId, dir }) => say({ type: 'created', runId, dir }),
        });
        say({ type: 'done', runId: outcome.runId, status: outcome.status, step: outcome.step });
      } finally {
        stop.done();
      }
      return;
    }
    case 'compare': {
      await backendFor(checkpointConfig(job.a));
      say({ type: 'result', file: writeWorkerResult(job.home, await compareCheckpoints(job.home, job.a, job.b)) });
      return;
    }
  }
}
