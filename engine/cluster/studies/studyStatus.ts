/**
 * A study's state as it stands now, and its table. Runs here are read from their run folders (run.json); runs on a
 * cluster from the Ray Jobs API (one GET of the job list), with the headline score from the run folder when the
 * cluster's home is readable here, else from the job's log (its `train --json` done line). When the cluster cannot
 * be reached, the record keeps what it last knew and the caller says so.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { RayJobsClient } from '../ray/jobsClient';
import { runsDir } from '../../runs/folder/home';
import { readRunMeta } from '../../runs/folder/runFolder';
import { shownStatus } from '../../runs/folder/writerProcess';
import { stateOfJob } from './rayStudy';
import { FINAL_STATES, studyLogFile, writeStudy, type StudyRecord, type StudyRun } from './studyRecord';
import { parseTrainLine, runHeadline } from './trainOutput';

/** A local run's state from its folder (a run whose writer died reads 'stopped', with why). */
function refreshLocal(home: string, study: StudyRecord, run: StudyRun): void {
  const dir = path.join(runsDir(home), run.runId);
  if (!fs.existsSync(path.join(dir, 'run.json'))) return;
  const meta = readRunMeta(dir);
  const status = shownStatus(dir, meta);
  const state: StudyRun['state'] | undefined =
    status === 'finished'
      ? 'finished'
      : status === 'failed'
        ? 'failed'
        : status === 'running'
          ? 'running'
          : status === 'stopped' || status === 'interrupted'
            ? 'stopped'
            : undefined;
  if (state === undefined) return;
  if (status === 'interrupted') {
    run.message = 'interrupted: its process ended without a final status (resume it: mars-lab resume ID)';
  }
  run.state = state;
  if (FINAL_STATES.has(state)) run.headline = runHeadline(home, run.runId, study.algorithm);
}

/** Refreshes every run not yet final; returns false when the cluster could not be reached (the record is unchanged). */
export async function refreshStudy(home: string, study: StudyRecord, client?: RayJobsClient): Promise<boolean> {
  if (study.where.kind === 'local') {
    for (const run of study.runs) {
      if (!FINAL_STATES.has(run.state) || run.headline === undefined) refreshLocal(home, study, run);
    }
    writeStudy(home, study);
    return true;
  }
  if (!client) return false;
  if (study.runs.every((r) => FINAL_STATES.has(r.state) && r.headline !== undefined)) return true; // nothing left to ask
  const jobs = new Map((await client.list()).map((j) => [j.submission_id ?? '', j]));
  for (const run of study.runs) {
    if (FINAL_STATES.has(run.state) && run.headline !== undefined) continue;
    const job = jobs.get(run.runId);
    if (!job) {
      if (run.state !== 'pending') {
        run.state = 'unknown';
        run.message = `the cluster at ${client.where} has no job '${run.runId}' (a new cluster, or the job was deleted)`;
      }
      continue;
    }
    run.jobStatus = job.status;
    let doneStatus: string | undefined;
    let doneMetrics: Record<string, unknown> | undefined;
    if (job.status === 'SUCCEEDED' || job.status === 'STOPPED' || job.status === 'FAILED') {
      const logs = await client.logs(run.runId);
      const file = studyLogFile(home, study.id, run.runId);
      fs.mkdirSync(path.dirname(file), { recursive: true });
      fs.writeFileSync(file, logs);
      for (const line of logs.split('\n')) {
        const e = parseTrainLine(line);
        if (e?.type === 'done') {
          doneStatus = e.status;
          doneMetrics = e.metrics;
        }
        if (e?.type === 'progress') {
          run.step = e.step;
          run.totalSteps = e.totalSteps;
        }
        if (e?.type === 'error') run.message = e.message;
      }
    }
    run.state = stateOfJob(job, doneStatus);
    if (job.status === 'FAILED' && !run.message) run.message = job.message ?? undefined;
    if (job.start_time) run.startedAt = new Date(job.start_time).toISOString();
    if (job.end_time) run.endedAt = new Date(job.end_time).toISOString();
    if (run.state === 'finished' || run.state === 'stopped') {
      run.headline = runHeadline(study.where.rayHome, run.runId, study.algorithm, doneMetrics);
    }
  }
  writeStudy(home, study);
  return true;
}
