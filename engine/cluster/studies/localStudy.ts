/**
 * Runs a study on this machine: each run is a `mars-lab train … --json` process, as many at once as `parallel`, the
 * rest waiting their turn. The record is rewritten as each run starts and ends.
 *
 * Who starts the processes is the caller's: the command line (`mars-lab study` without --ray) uses `cliStudyLauncher`,
 * a child of this Node.js in its own process group, so a Ctrl-C in the terminal reaches it once, through `stop()`
 * (checkpoint, then stop), not twice (which would mean "quit at once"). The app's host passes its own launcher
 * (engine/api/cluster/clusterMethods.ts over the host's RunLauncher: a utility process in Electron, where process.execPath is
 * the Electron binary), which may also make a run wait for a free worker slot: `launch` then resolves later, or with
 * null when the study was stopped while the run waited.
 */
import { spawn } from 'node:child_process';
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

/** A study here can also stop one run, and be held by a host that closes. */
export interface RunningStudyHere extends RunningStudy {
  /**
   * One run: a running one checkpoints and stops, a waiting one never starts (it is recorded stopped). False when the
   * run has ended or is not this study's.
   */
  stopRun: (runId: string) => boolean;
  /** No new runs start; running ones go on, in their own processes (a host that closes leaves them to their folders). */
  hold: () => void;
}

/** What a study's launcher is told of one process (the shape of engine/api/workers/runLauncher.ts RunProcessHandlers). */
export interface StudyProcessHandlers {
  onStdoutLine(line: string): void;
  onStderr(text: string): void;
  /** Once, when the process has ended (code null: ended by a signal). */
  onExit(code: number | null): void;
}

export interface StudyProcess {
  /** Checkpoint and stop (train's Ctrl-C); a second call quits at once (exit code 130). */
  terminate(): void;
}

export interface StudyLauncher {
  /** Starts `mars-lab <args…>`; resolves once it started, or null when `signal` aborted while it waited to start. */
  launch(args: readonly string[], handlers: StudyProcessHandlers, signal: AbortSignal): Promise<StudyProcess | null>;
  /** What a failed start names (e.g. the program), for the run's message. */
  readonly what: string;
}

/** The command line's launcher: a child of this Node.js on this project's CLI, in its own process group. */
export function cliStudyLauncher(): StudyLauncher {
  const cli = path.join(PROJECT_DIR, 'engine/bin/mars-lab.mjs');
  return {
    what: process.execPath,
    async launch(args, handlers) {
      const child = spawn(process.execPath, [cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
      const out = lineSplitter((line) => handlers.onStdoutLine(line));
      child.stdout.setEncoding('utf8').on('data', out.push);
      child.stderr.setEncoding('utf8').on('data', (text: string) => handlers.onStderr(text));
      let exited = false;
      child.on('error', (e) => {
        handlers.onStderr(`mars-lab: could not start ${process.execPath}: ${e.message}\n`);
        if (!exited) {
          exited = true;
          handlers.onExit(null);
        }
      });
      child.on('close', (code, signal) => {
        out.end();
        if (exited) return;
        exited = true;
        handlers.onExit(signal ? null : code);
      });
      return {
        terminate() {
          try {
            child.kill('SIGINT'); // train: first = checkpoint and stop, second = quit at once
          } catch {
            // already gone
          }
        },
      };
    },
  };
}

// eslint-disable-next-line max-lines-per-function -- one pass in order; not yet split by step (issue 29, left for the next session)
export function runStudyHere(
  home: string,
  study: StudyRecord,
  events: StudyEvents = {},
  launcher: StudyLauncher = cliStudyLauncher(),
): RunningStudyHere {
  if (study.where.kind !== 'local') throw new Error('runStudyHere: not a local study');
  const parallel = study.where.parallel;
  const processes = new Map<string, StudyProcess>();
  const stopped = new AbortController();
  const held = new AbortController();
  /** Runs asked to stop (stopRun), and the waits of runs not started yet. */
  const skipped = new Set<string>();
  const waiting = new Map<string, AbortController>();
  const save = (run: StudyRun) => {
    writeStudy(home, study);
    events.onRun?.(run, study);
  };

  const runOne = async (run: StudyRun): Promise<void> => {
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
    const err = lineSplitter(onLine);
    let exited!: (code: number | null) => void;
    const exit = new Promise<number | null>((resolve) => (exited = resolve));
    let started: StudyProcess | null;
    const wait = new AbortController();
    waiting.set(run.runId, wait);
    try {
      started = await launcher.launch(
        // Each run's BLAS threads default to its share of the cores beside the others running at once.
        [...trainArgs(study, run, home), '--worker-slots', String(parallel)],
        { onStdoutLine: onLine, onStderr: err.push, onExit: (code) => exited(code) },
        AbortSignal.any([stopped.signal, held.signal, wait.signal]),
      );
    } catch (e) {
      run.state = 'failed';
      run.message = `could not start ${launcher.what}: ${(e as Error).message.split('\n')[0]}`;
      run.endedAt = new Date().toISOString();
      save(run);
      return;
    } finally {
      waiting.delete(run.runId);
    }
    if (!started) return; // stopped while it waited for its turn: left pending, marked below
    if (skipped.has(run.runId)) started.terminate(); // asked to stop while it was being started
    processes.set(run.runId, started);
    run.state = 'running';
    run.startedAt = new Date().toISOString();
    save(run);
    const code = await exit;
    err.end();
    processes.delete(run.runId);
    run.endedAt = new Date().toISOString();
    if (code === 0 && doneStatus === 'finished') run.state = 'finished';
    else if (code === 0 && doneStatus === 'stopped') run.state = 'stopped';
    else if (code === null || code === 130) {
      run.state = 'stopped';
      run.message = `ended by ${code === null ? 'a signal' : 'a second Ctrl-C'} before its final checkpoint`;
    } else {
      run.state = 'failed';
      run.message = error ?? `mars-lab train exited with code ${code}`;
    }
    run.headline = runHeadline(home, run.runId, study.algorithm, doneMetrics);
    save(run);
  };

  // runs not started yet; one already running (a study taken up again after its host closed) goes on in its process
  const queue = study.runs.filter((r) => r.state === 'pending');
  const worker = async () => {
    for (let run = queue.shift(); run; run = queue.shift()) {
      if (stopped.signal.aborted || held.signal.aborted) break;
      if (skipped.has(run.runId)) continue;
      await runOne(run);
    }
  };
  writeStudy(home, study);
  const done = Promise.all(Array.from({ length: Math.min(parallel, queue.length) }, worker)).then(() => {
    for (const r of study.runs) {
      // a held study's waiting runs stay pending: they were not stopped, only not started by this host
      if (r.state === 'pending' && (!held.signal.aborted || stopped.signal.aborted)) {
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
      stopped.abort();
      for (const p of processes.values()) p.terminate();
    },
    stopRun(runId) {
      const run = study.runs.find((r) => r.runId === runId);
      if (!run || FINAL_STATES.has(run.state) || skipped.has(runId)) return false;
      skipped.add(runId);
      if (run.state === 'pending') {
        waiting.get(runId)?.abort();
        run.state = 'stopped';
        run.message = 'not started: stopped while it waited for its turn';
        run.endedAt = new Date().toISOString();
        save(run);
      } else processes.get(runId)?.terminate();
      return true;
    },
    hold() {
      held.abort();
    },
  };
}
