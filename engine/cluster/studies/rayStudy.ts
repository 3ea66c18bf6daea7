/**
 * Runs a study on a Ray cluster: each run is one Ray job (submission id = run id; entrypoint `node <project>/engine/
 * bin/mars-lab.mjs train … --home <ray-home> --json`), followed over the log WebSocket until it ends. Progress and the
 * final metrics come from the log itself, so a cluster without a shared home still reports; each log is kept in
 * `<home>/studies/<id>/<runId>.log`. Stop asks Ray to stop every job still going.
 *
 * Nothing is lost when the cluster becomes unreachable: submitted runs are in the record at once, a run whose
 * following broke off is marked 'unknown', and `mars-lab study status ID --follow` (attachStudy) picks up from the
 * record: pending runs are submitted (with the runtime_env and setup the record keeps), unknown and live ones followed
 * again. Where the ray home is not shared, each finished run's folder is fetched back by a follow-up job
 * (fetchBack.ts); a failed fetch is retried on re-attach. With a shipped project (shipProject.ts) the record's
 * runtime_env has its working_dir and the entrypoint is relative to it (`node engine/bin/mars-lab.mjs …`).
 */
import fs from 'node:fs';
import { RayError, type RayJobsClient } from '../ray/jobsClient';
import { GPUS_METADATA_KEY, MODEL_METADATA_KEY, type RayJobDetails } from '../ray/jobsSchemas';
import { followJobLogs } from '../ray/logTail';
import { fetchRun, wantsFetch } from './fetchBack';
import type { RunningStudy, StudyEvents } from './localStudy';
import {
  FINAL_STATES,
  openStudyLogForWrite,
  studyLogFile,
  writeStudy,
  type StudyRecord,
  type StudyRun,
} from './studyRecord';
import { rayEntrypoint } from './studyPlan';
import { lineSplitter, parseTrainLine, runHeadline } from './trainOutput';

export interface RayStudyOptions extends StudyEvents {
  /** Extra runtime_env (e.g. env_vars, working_dir) for every job. */
  runtimeEnv?: Record<string, unknown>;
  /** A shell command run before train in each job (e.g. an install step when runtime_env ships the project). */
  setup?: string;
  /** Delay between reconnects of a dropped log socket (tests make it short). */
  retryDelayMs?: number;
  /** Stops following without stopping the jobs (the app's host closing); the record keeps what it knew. */
  signal?: AbortSignal;
}

/** A Ray job's status as a run state (a job that succeeded may hold a run stopped by SIGTERM: its done line says). */
export function stateOfJob(job: RayJobDetails, doneStatus?: string): StudyRun['state'] {
  switch (job.status) {
    case 'PENDING':
      return 'submitted';
    case 'RUNNING':
      return 'running';
    case 'SUCCEEDED':
      return doneStatus === 'stopped' ? 'stopped' : 'finished';
    case 'FAILED':
      return 'failed';
    case 'STOPPED':
      return 'stopped';
  }
}

/** A log line that can say why a job failed: not Ray's preamble, not one of train's JSON lines. */
function isReasonLine(line: string): boolean {
  const t = line.trim();
  return t !== '' && !t.startsWith('{') && !t.startsWith('Running entrypoint for job ');
}

/** Re-reads a failed job's full log (up to ~10 s) until it holds a reason line, appending what the saved copy lacks. */
async function settleFailedLog(client: RayJobsClient, id: string, logFile: string): Promise<void> {
  for (let i = 0; i < 20; i++) {
    const saved = fs.readFileSync(logFile, 'utf8');
    if (saved.split('\n').some(isReasonLine)) return;
    const full = await client.logs(id).catch(() => null);
    if (full !== null && full.length > saved.length && full.startsWith(saved)) {
      fs.appendFileSync(logFile, full.slice(saved.length));
      continue;
    }
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * Why a job could not even start train, in words that name the fix: the cluster has no project at the path the
 * entrypoint names (node's "Cannot find module", whose last line is only "Node.js v20…"), or no node on its PATH.
 */
export function setupHint(log: readonly string[], study: StudyRecord): string | undefined {
  if (study.where.kind !== 'ray') return undefined;
  const text = log.join('\n');
  const missing = /Cannot find module '([^']*engine\/bin\/mars-lab\.mjs)'/.exec(text);
  if (missing) {
    return study.where.project === '.'
      ? `the job's working_dir has no ${missing[1]}: the runtime_env's working_dir is not a mars-lab package (add --ship)`
      : `the cluster has no ${missing[1]}: add --ship to send the project with the jobs, or give its folder there with --ray-project PATH`;
  }
  const node = study.where.node;
  const escaped = node.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  if (new RegExp(`(^|[\\s:])${escaped}: (command )?not found|${escaped}: No such file or directory`, 'm').test(text)) {
    return `${node} not found on the cluster: install Node.js 20 on its nodes' PATH, or give its path there with --ray-node PATH`;
  }
  return undefined;
}

function oneLine(text: string | null | undefined): string | undefined {
  if (!text) return undefined;
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const line = lines.findLast((l) => /^mars-lab: /.test(l)) ?? lines.at(-1) ?? lines[0];
  return line && (line.length > 300 ? `${line.slice(0, 300)}…` : line);
}

/** What a Ray study shares between its runs: the record, the client, the options, and whether stop was asked. */
interface RayState {
  home: string;
  study: StudyRecord;
  client: RayJobsClient;
  opts: RayStudyOptions;
  /** Aborted to stop following (the jobs go on). */
  follows: AbortController;
  /** Each run's own follow, aborted when its job was asked to stop and Ray keeps it waiting (stopUnstarted). */
  runFollows: Map<string, AbortController>;
  stopRequested: boolean;
  /** As given, else as recorded when the study started (a re-attach submits its pending runs the same way). */
  runtimeEnv: Record<string, unknown> | undefined;
  setup: string | undefined;
  save: (run: StudyRun) => void;
}

/** Submits one run as a Ray job (a duplicate that is this run's job counts as submitted). */
async function submitRun(s: RayState, run: StudyRun): Promise<void> {
  const { study, client, runtimeEnv, setup } = s;
  const entry = rayEntrypoint(study, run);
  try {
    await client.submit({
      entrypoint: setup ? `${setup} && ${entry}` : entry,
      submission_id: run.runId,
      metadata: {
        mars_lab_study: study.id,
        mars_lab_run: run.runId,
        mars_lab_preset: study.preset,
        mars_lab_variant: run.variant ?? '',
        mars_lab_seed: String(run.seed),
        ...(run.model !== undefined ? { [MODEL_METADATA_KEY]: run.model } : {}),
        ...(study.where.kind === 'ray' && (study.where.gpusPerJob ?? 0) > 0
          ? { [GPUS_METADATA_KEY]: String(study.where.gpusPerJob) }
          : {}),
      },
      ...(study.where.kind === 'ray' && study.where.cpusPerJob > 0
        ? { entrypoint_num_cpus: study.where.cpusPerJob }
        : {}),
      ...(study.where.kind === 'ray' && (study.where.gpusPerJob ?? 0) > 0
        ? { entrypoint_num_gpus: study.where.gpusPerJob }
        : {}),
      ...(runtimeEnv ? { runtime_env: runtimeEnv } : {}),
    });
  } catch (err) {
    // Submitted before (a re-attach after an answer that never arrived): that job is this run's if its metadata says so.
    if (!(err instanceof RayError) || err.kind !== 'duplicate') throw err;
    const job = await client.job(run.runId);
    if (job.metadata?.mars_lab_study !== study.id) throw err;
  }
  run.state = 'submitted';
  run.jobStatus = 'PENDING';
  s.save(run);
  if (s.stopRequested) await client.stop(run.runId).catch(() => {}); // stop came while this submit was in flight
}

/** The run folder back from a cluster without a shared home (fetchBack.ts); a fault is one line in run.fetch. */
async function fetchBackRun(s: RayState, run: StudyRun): Promise<void> {
  await fetchRun(s.home, s.study, run, s.client, { signal: s.follows.signal, pollMs: s.opts.retryDelayMs });
  s.save(run);
}

/** What a job's log said at its end: train's final metrics and status. */
interface JobOutcome {
  metrics?: Record<string, unknown>;
  status?: string;
}

/** Reads a job's log lines: the run's progress (told a line per tenth of the run) and its outcome. */
function followTrainLog(
  run: StudyRun,
  study: StudyRecord,
  opts: RayStudyOptions,
): { lines: ReturnType<typeof lineSplitter>; outcome: JobOutcome } {
  const outcome: JobOutcome = {};
  let lastShown = 0;
  const lines = lineSplitter((line) => {
    const e = parseTrainLine(line);
    if (e?.type === 'progress') {
      run.step = e.step;
      run.totalSteps = e.totalSteps;
      if (run.state === 'submitted') run.state = 'running';
      if (
        lastShown === 0 ||
        e.step === e.totalSteps ||
        e.step - lastShown >= Math.max(1, Math.ceil(e.totalSteps / 10))
      ) {
        lastShown = e.step;
        opts.onRun?.(run, study);
      }
    } else if (e?.type === 'done') {
      outcome.metrics = e.metrics;
      outcome.status = e.status;
      run.step = e.step;
    }
  });
  return { lines, outcome };
}

/** A failed or stopped run's message: a setup hint, mars-lab's own error line, a reason line of the log, or Ray's. */
function endMessage(run: StudyRun, study: StudyRecord, job: RayJobDetails, logFile: string): string | undefined {
  const saved = fs.readFileSync(logFile, 'utf8').split('\n');
  return (
    (run.state === 'failed' ? setupHint(saved, study) : undefined) ??
    oneLine(saved.filter((l) => l.startsWith('mars-lab: ')).join('\n')) ??
    (run.state === 'failed' ? oneLine(saved.filter(isReasonLine).join('\n')) : undefined) ??
    oneLine(job.message?.split('\n')[0])
  );
}

/** Follows one run's job log until the job ends, keeping the log; then its state, message, headline and folder. */
async function followRun(s: RayState, run: StudyRun): Promise<void> {
  const { home, study } = s;
  const logFile = studyLogFile(home, study.id, run.runId);
  // the follower starts again from the log's first byte; never through a link planted in the home (studyRecord.ts)
  const fd = openStudyLogForWrite(home, study.id, run.runId);
  const { lines, outcome } = followTrainLog(run, study, s.opts);
  const own = new AbortController();
  s.runFollows.set(run.runId, own);
  try {
    const r = await followJobLogs(s.client, run.runId, {
      signal: AbortSignal.any([s.follows.signal, own.signal]),
      retryDelayMs: s.opts.retryDelayMs,
      onText: (t) => {
        fs.writeSync(fd, t);
        lines.push(t);
        if (run.state === 'submitted') {
          run.state = 'running';
          run.jobStatus = 'RUNNING';
          s.save(run);
        }
      },
    });
    lines.end();
    if (r.aborted || !r.job) return;
    run.jobStatus = r.job.status;
    run.state = stateOfJob(r.job, outcome.status);
    if (r.job.start_time) run.startedAt = new Date(r.job.start_time).toISOString();
    if (r.job.end_time) run.endedAt = new Date(r.job.end_time).toISOString();
    if (run.state === 'failed' || run.state === 'stopped') {
      // Ray can mark a job FAILED before the entrypoint's last stderr line reaches the job's log (and its
      // job.message, a copy of the log's tail): read the full log again, briefly, until a line other than Ray's
      // own "Running entrypoint" preamble and train's JSON progress lines is there.
      if (run.state === 'failed') await settleFailedLog(s.client, run.runId, logFile);
      run.message = endMessage(run, study, r.job, logFile);
    }
    if (run.state === 'finished' || run.state === 'stopped') {
      run.headline = runHeadline(
        study.where.kind === 'ray' ? study.where.rayHome : home,
        run.runId,
        study.algorithm,
        outcome.metrics,
      );
    }
    s.save(run);
    if (wantsFetch(study, run)) await fetchBackRun(s, run);
  } catch (err) {
    if (!(err instanceof RayError) || (err.kind !== 'unreachable' && err.kind !== 'not-found')) throw err;
    run.state = 'unknown';
    run.message = err.message;
    s.save(run);
  } finally {
    s.runFollows.delete(run.runId);
    fs.closeSync(fd);
  }
}

/** How long a stopped job that never started may stay PENDING before the study stops waiting for it. */
const UNSTARTED_STOP_WAIT_MS = 2_000;

/**
 * Asks Ray to stop a run's job. A job that never started (waiting for a GPU the cluster does not have free) is
 * answered `stopped: true` yet kept PENDING by Ray 2.52.1, and a study waiting for its end would wait until Ray's start
 * timeout: such a run is marked stopped, saying so, and no longer followed.
 */
async function stopRun(s: RayState, run: StudyRun): Promise<void> {
  await s.client.stop(run.runId).catch(() => {});
  const pollMs = Math.min(400, s.opts.retryDelayMs ?? 400);
  for (let waited = 0; waited < UNSTARTED_STOP_WAIT_MS; waited += pollMs) {
    await new Promise((r) => setTimeout(r, pollMs));
    if (run.state !== 'submitted') return;
    const job = await s.client.job(run.runId).catch(() => undefined);
    if (job?.status !== 'PENDING') return;
  }
  run.state = 'stopped';
  run.jobStatus = 'PENDING';
  run.message =
    'stopped before it started: Ray still lists the job PENDING (it waits for the resources it asked for) and ends ' +
    'it at its start timeout (RAY_JOB_START_TIMEOUT_SECONDS on the head, 15 minutes by default); see mars-lab jobs ls';
  s.save(run);
  s.runFollows.get(run.runId)?.abort();
}

/** Submits the pending runs one by one and follows every run not final, until all are (or stop). */
async function runAll(s: RayState): Promise<StudyRecord> {
  const { home, study } = s;
  writeStudy(home, study);
  const following: Promise<void>[] = [];
  for (const run of study.runs) {
    if (wantsFetch(study, run)) following.push(fetchBackRun(s, run)); // a fetch that failed before: again
    if (FINAL_STATES.has(run.state)) continue;
    if (run.state === 'pending') {
      if (s.stopRequested) continue;
      await submitRun(s, run); // unreachable: the rest stay pending in the record
    }
    following.push(followRun(s, run));
  }
  await Promise.all(following);
  for (const r of study.runs) {
    if (r.state === 'pending' && s.stopRequested) {
      r.state = 'stopped';
      r.message = 'not submitted: the study was stopped';
    }
  }
  writeStudy(home, study);
  return study;
}

/** Submits the study's pending runs and follows every run not yet final, until all are final (or stop). */
export function runStudyOnRay(
  home: string,
  study: StudyRecord,
  client: RayJobsClient,
  opts: RayStudyOptions = {},
): RunningStudy {
  if (study.where.kind !== 'ray') throw new Error('runStudyOnRay: not a Ray study');
  const follows = new AbortController();
  opts.signal?.addEventListener('abort', () => follows.abort(), { once: true });
  const s: RayState = {
    home,
    study,
    client,
    opts,
    follows,
    runFollows: new Map(),
    stopRequested: false,
    runtimeEnv: opts.runtimeEnv ?? study.where.runtimeEnv,
    setup: opts.setup ?? study.where.setup,
    save: (run: StudyRun) => {
      writeStudy(home, study);
      opts.onRun?.(run, study);
    },
  };
  const done = runAll(s);
  return {
    done,
    stop() {
      if (s.stopRequested) {
        follows.abort(); // second Ctrl-C: stop following; the jobs were already asked to stop
        return;
      }
      s.stopRequested = true;
      for (const run of study.runs) {
        if (run.state === 'submitted' || run.state === 'running') void stopRun(s, run);
      }
    },
  };
}
