/**
 * An endpoint evaluation launched from the app, as a run folder (the worker's side; the host's is
 * endpointEvalMethods.ts). The evaluation itself is `mars-lab eval`'s (engine/runs/evaluation/evaluateEndpoints.ts: the same
 * rollouts, the same request journal under `<home>/evals/endpoints-<key>/`, so the app and the CLI give the same items
 * and share their answered requests); this file gives it what a run has, so the Runs view lists it, the run page shows
 * it live and stops or resumes it, and its episodes or trees open in the Episodes and Tree tabs:
 *
 * - run.json: the evaluation's config (its policy sources name keys by environment variable only), tagged
 *   `endpoint-eval`, with `budget.steps` 1 — an evaluation is one step, so progress reads 0/1 and then 1/1;
 * - events.jsonl: a `progress` event as requests are answered (`answered`, of which `replayed` from the journal), at
 *   most one a second, and the last one when the evaluation ends;
 * - trajectories.jsonl: every item's episode (MARS) or search tree (MARTI) at step 1, as a training step's records;
 * - metrics.jsonl: one line at step 1 with the evaluation's metrics as `eval.<name>` (the held-out score of the list).
 *
 * Stopping (SIGTERM from the host, or Ctrl-C) cancels the requests in flight; every answered one stays in the
 * journal, and the run is `stopped`. Resuming the run (the host's resumeRun) evaluates again: the answered requests are
 * replayed and only the rest are asked, so the items equal those of an evaluation that was never stopped.
 */
import path from 'node:path';
import { EndpointStopped } from '../../policy/endpointClient';
import { evaluateWithEndpoints, usesEndpoints, type EndpointEval } from '../../runs/evaluation/evaluateEndpoints';
import { parseRunConfig, type RunConfig } from '../../runs/config/configSchema';
import { RUN_FILES } from '../../runs/folder/home';
import { JsonlAppender, truncateTo } from '../../runs/folder/jsonl';
import { appendEvent, createRunFolder, readRunMeta, updateStatus } from '../../runs/folder/runFolder';
import { acquireRunLock } from '../../runs/folder/runLock';
import { SummaryKeeper } from '../../runs/summary/summarySidecar';
import { UserError } from '../../base/userError';
import { ENGINE_VERSION } from '../../base/version';
import { endpointEvalProblem } from './endpointEvalChecks';

/** The tag an endpoint evaluation's run gets (the run page offers Resume without a checkpoint for it). */
export const ENDPOINT_EVAL_TAG = 'endpoint-eval';

/** The step an evaluation's records and metrics are logged at: an evaluation is one step. */
const EVAL_STEP = 1;

/**
 * Whether a run folder's config is an endpoint evaluation (resume goes through here, not through training): training
 * with endpoint policies is refused before a run folder exists, so a run whose config names them is an evaluation.
 */
export function isEndpointEvalRun(config: RunConfig): boolean {
  return usesEndpoints(config);
}

export interface EndpointEvalRunOptions {
  signal?: AbortSignal;
  fresh?: boolean;
  env?: NodeJS.ProcessEnv;
  onCreated?: (run: { runId: string; dir: string }) => void;
}

export interface EndpointEvalRunOutcome {
  runId: string;
  dir: string;
  status: 'finished' | 'stopped';
  /** 1 when the evaluation is done (its one step), 0 when it stopped before. */
  step: number;
  result?: EndpointEval;
}

/** The config as a run folder keeps it: one step (the evaluation), tagged. */
function asEvalRunConfig(config: RunConfig): RunConfig {
  const tags = config.tags.includes(ENDPOINT_EVAL_TAG) ? config.tags : [...config.tags, ENDPOINT_EVAL_TAG];
  return { ...config, budget: { ...config.budget, steps: EVAL_STEP }, tags };
}

/** Starts an endpoint evaluation in a new run folder under `home`, and runs it to its end (or its stop). */
export async function startEndpointEvalRun(
  home: string,
  rawConfig: unknown,
  opts: EndpointEvalRunOptions & { preset?: string } = {},
): Promise<EndpointEvalRunOutcome> {
  const config = asEvalRunConfig(parseRunConfig(rawConfig, 'the evaluation config'));
  const problem = endpointEvalProblem(config);
  if (problem) throw new UserError(problem);
  const { id, dir } = createRunFolder(home, {
    algorithm: config.algorithm,
    preset: opts.preset,
    config,
    engineVersion: ENGINE_VERSION,
    seed: config.seed,
    tags: config.tags,
    notes: config.notes,
  });
  const release = acquireRunLock(dir);
  opts.onCreated?.({ runId: id, dir });
  try {
    return await drive(home, id, dir, config, opts);
  } finally {
    release();
  }
}

/** Evaluates a stopped, failed or interrupted endpoint-evaluation run again: its answered requests are replayed. */
export async function resumeEndpointEvalRun(
  runDir: string,
  opts: EndpointEvalRunOptions = {},
): Promise<EndpointEvalRunOutcome> {
  const meta = readRunMeta(runDir);
  const config = parseRunConfig(meta.config, path.join(runDir, RUN_FILES.meta));
  const home = path.dirname(path.dirname(path.resolve(runDir)));
  // the config comes from a run folder, which anyone who can write the home can craft: checked as a start's is
  const problem = endpointEvalProblem(config);
  if (problem) throw new UserError(`${path.join(runDir, RUN_FILES.meta)}: ${problem}`);
  const release = acquireRunLock(runDir);
  try {
    if (meta.status === 'finished') return { runId: meta.id, dir: runDir, status: 'finished', step: EVAL_STEP };
    // a run stopped before its end logged no records; anything there is from a process killed while writing them
    truncateTo(path.join(runDir, RUN_FILES.metrics), 0);
    truncateTo(path.join(runDir, RUN_FILES.trajectories), 0);
    appendEvent(runDir, { type: 'resumed', fromStep: 0, pid: process.pid });
    return await drive(home, meta.id, runDir, config, opts);
  } finally {
    release();
  }
}

async function drive(
  home: string,
  runId: string,
  dir: string,
  config: RunConfig,
  opts: EndpointEvalRunOptions,
): Promise<EndpointEvalRunOutcome> {
  updateStatus(dir, 'running', { pid: process.pid, step: 0 });
  let last = { replayed: 0, fresh: 0 };
  let loggedAt = 0;
  const progress = (final: boolean): void => {
    loggedAt = Date.now();
    appendEvent(dir, {
      type: 'progress',
      answered: last.replayed + last.fresh,
      replayed: last.replayed,
      ...(final ? { final: true } : {}),
    });
  };
  let result: EndpointEval;
  try {
    result = await evaluateWithEndpoints(home, config, {
      signal: opts.signal,
      fresh: opts.fresh,
      env: opts.env,
      resumeHint: 'Resume asks only the rest',
      onWarning: (message) => appendEvent(dir, { type: 'warning', message }),
      onProgress: (answers) => {
        last = answers;
        if (Date.now() - loggedAt >= 1000) progress(false);
      },
    });
  } catch (err) {
    progress(true);
    if (err instanceof EndpointStopped && opts.signal?.aborted) {
      updateStatus(dir, 'stopped', { step: 0, message: err.message });
      return { runId, dir, status: 'stopped', step: 0 };
    }
    updateStatus(dir, 'failed', { step: 0, error: (err as Error).message });
    throw err;
  }
  progress(true);
  const trajectories = new JsonlAppender(path.join(dir, RUN_FILES.trajectories));
  const metrics = new JsonlAppender(path.join(dir, RUN_FILES.metrics));
  const summary = new SummaryKeeper(dir);
  try {
    for (const item of result.items) {
      if (item.record) trajectories.append({ step: EVAL_STEP, ...(item.record as object) });
    }
    const line: Record<string, number> = { step: EVAL_STEP, time: Date.now() / 1000 };
    for (const [k, v] of Object.entries(result.metrics)) line[`eval.${k}`] = v;
    line['requests.answered'] = result.journal.fresh + result.journal.replayed;
    line['requests.replayed'] = result.journal.replayed;
    trajectories.sync();
    metrics.append(line);
  } finally {
    trajectories.close();
    metrics.close();
    summary.flush();
  }
  appendEvent(dir, { type: 'evaluation', file: result.file, items: result.items.length, policies: result.policies });
  updateStatus(dir, 'finished', { step: EVAL_STEP });
  return { runId, dir, status: 'finished', step: EVAL_STEP, result };
}
