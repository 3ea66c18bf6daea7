/**
 * Runs a study on this machine: each run is a child `mars-lab train … --json` process, as many at once as
 * `parallel` (default: the cores), the rest waiting their turn. Each child has its own process group, so a Ctrl-C in
 * the terminal reaches it once, through `stop()` (checkpoint, then stop), not twice (which would mean "quit at once").
 * The record is rewritten as each run starts and ends.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { FINAL_STATES, writeStudy, type StudyRecord, type StudyRun } from './studyRecord';
import { PROJECT_DIR, trainArgs } from './studyPlan';
import { lineSplitter, parseTrainLine, runHeadline } from './trainOutput';

export interface StudyEvents {
  /** A run changed state (started, progressed, ended). */
  onRun?: (run: StudyRun, study: StudyRecord) => void;
}

export interface RunningStudy {
  done: Promise<StudyRecord>;
  /** Ctrl-C: no new runs start; running ones checkpoint and stop. A second call ends them at once. */
  stop: () => void;
}

export function runStudyHere(home: string, study: StudyRecord, events: StudyEvents = {}): RunningStudy {
  if (study.where.kind !== 'local') throw new Error('runStudyHere: not a local study');
  const parallel = study.where.parallel;
  const children = new Map<string, ChildProcess>();
  let stopping = 0;
  const save = (run: StudyRun) => {
    writeStudy(home, study);
    events.onRun?.(run, study);
  };

  const runOne = (run: StudyRun) =>
    new Promise<void>((resolve) => {
      const child = spawn(
        process.execPath,
        [path.join(PROJECT_DIR, 'engine/bin/mars-lab.mjs'), ...trainArgs(study, run, home)],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
          detached: true,
        },
      );
      children.set(run.runId, child);
      run.state = 'running';
      run.startedAt = new Date().toISOString();
      save(run);
      let doneMetrics: Record<string, unknown> | undefined;
      let doneStatus: string | undefined;
      let error: string | undefined;
      let lastShown = 0;
      const onLine = (line: string) => {
        const e = parseTrainLine(line);
        if (!e) return;
        if (e.type === 'progress') {
          run.step = e.step;
          run.totalSteps = e.totalSteps;
          // a line per tenth of the run, not per step
          if (
            lastShown === 0 ||
            e.step === e.totalSteps ||
            e.step - lastShown >= Math.max(1, Math.ceil(e.totalSteps / 10))
          ) {
            lastShown = e.step;
            events.onRun?.(run, study);
          }
        } else if (e.type === 'done') {
          doneMetrics = e.metrics;
          doneStatus = e.status;
          run.step = e.step;
        } else error = e.message;
      };
      const out = lineSplitter(onLine);
      const err = lineSplitter(onLine);
      child.stdout.setEncoding('utf8').on('data', out.push);
      child.stderr.setEncoding('utf8').on('data', err.push);
      child.on('error', (e) => {
        error = `could not start ${process.execPath}: ${e.message}`;
      });
      child.on('close', (code, signal) => {
        out.end();
        err.end();
        children.delete(run.runId);
        run.endedAt = new Date().toISOString();
        if (code === 0 && doneStatus === 'finished') run.state = 'finished';
        else if (code === 0 && doneStatus === 'stopped') run.state = 'stopped';
        else if (signal || code === 130) {
          run.state = 'stopped';
          run.message = `ended by ${signal ?? 'a second Ctrl-C'} before its final checkpoint`;
        } else {
          run.state = 'failed';
          run.message = error ?? `mars-lab train exited with code ${code}`;
        }
        run.headline = runHeadline(home, run.runId, study.algorithm, doneMetrics);
        save(run);
        resolve();
      });
    });

  const queue = study.runs.filter((r) => !FINAL_STATES.has(r.state));
  const worker = async () => {
    for (let run = queue.shift(); run; run = queue.shift()) {
      if (stopping) break;
      await runOne(run);
    }
  };
  writeStudy(home, study);
  const done = Promise.all(Array.from({ length: Math.min(parallel, queue.length) }, worker)).then(() => {
    for (const r of study.runs) {
      if (r.state === 'pending') {
        r.state = 'stopped';
        r.message = 'not started: the study was stopped';
      }
    }
    writeStudy(home, study);
    return study;
  });
  return {
    done,
    stop() {
      stopping++;
      for (const child of children.values()) {
        try {
          child.kill('SIGINT'); // train: first = checkpoint and stop, second = quit at once
        } catch {
          // already gone
        }
      }
    },
  };
}
