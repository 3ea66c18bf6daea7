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

/** What a study here shares between its runs: the record, the processes running, and the signals to stop or hold. */
interface HereState {
  home: string;
  study: StudyRecord;
  events: StudyEvents;
  launcher: StudyLauncher;
  parallel: number;
  processes: Map<string, StudyProcess>;
  stopped: AbortController;
  held: AbortController;
  /** Runs asked to stop (stopRun), and the waits of runs not started yet. */
  skipped: Set<string>;
  waiting: Map<string, AbortController>;
  save: (run: StudyRun) => void;
}

/** What a run's `train --json` output said at its end: its final metrics and status, or its error. */
interface TrainOutcome {
  metrics?: Record<string, unknown>;
  status?: string;
  error?: string;
}

/** Reads a run's `train --json` lines: its progress (told a line per tenth of the run) and its outcome. */
function followTrainOutput(
  run: StudyRun,
  study: StudyRecord,
  events: StudyEvents,
): { onLine: (line: string) => void; outcome: TrainOutcome } {
  const outcome: TrainOutcome = {};
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
      outcome.metrics = e.metrics;
      outcome.status = e.status;
      run.step = e.step;
    } else outcome.error = e.message;
  };
  return { onLine, outcome };
}

/** A run's final state from its exit code and what its output said. */
function settleRun(run: StudyRun, code: number | null, outcome: TrainOutcome): void {
  if (code === 0 && outcome.status === 'finished') run.state = 'finished';
  else if (code === 0 && outcome.status === 'stopped') run.state = 'stopped';
  else if (code === null || code === 130) {
    run.state = 'stopped';
    run.message = `ended by ${code === null ? 'a signal' : 'a second Ctrl-C'} before its final checkpoint`;
  } else {
    run.state = 'failed';
    run.message = outcome.error ?? `mars-lab train exited with code ${code}`;
  }
}

/** One run, from waiting for its turn to its end. */
async function runOne(s: HereState, run: StudyRun): Promise<void> {
  const { home, study, launcher, parallel } = s;
  const { onLine, outcome } = followTrainOutput(run, study, s.events);
  const err = lineSplitter(onLine);
  let exited!: (code: number | null) => void;
  const exit = new Promise<number | null>((resolve) => (exited = resolve));
  let started: StudyProcess | null;
  const wait = new AbortController();
  s.waiting.set(run.runId, wait);
  try {
    started = await launcher.launch(
      // Each run's BLAS threads default to its share of the cores beside the others running at once.
      [...trainArgs(study, run, home), '--worker-slots', String(parallel)],
      { onStdoutLine: onLine, onStderr: err.push, onExit: (code) => exited(code) },
      AbortSignal.any([s.stopped.signal, s.held.signal, wait.signal]),
    );
  } catch (e) {
    run.state = 'failed';
    run.message = `could not start ${launcher.what}: ${(e as Error).message.split('\n')[0]}`;
    run.endedAt = new Date().toISOString();
    s.save(run);
    return;
  } finally {
    s.waiting.delete(run.runId);
  }
  if (!started) return; // stopped while it waited for its turn: left pending, marked below
  if (s.skipped.has(run.runId)) started.terminate(); // asked to stop while it was being started
  s.processes.set(run.runId, started);
  run.state = 'running';
  run.startedAt = new Date().toISOString();
  s.save(run);
  const code = await exit;
  err.end();
  s.processes.delete(run.runId);
  run.endedAt = new Date().toISOString();
  settleRun(run, code, outcome);
  run.headline = runHeadline(home, run.runId, study.algorithm, outcome.metrics);
  s.save(run);
}

/** Runs the study's pending runs, `parallel` at once; resolves with the record once none is left to start. */
function runQueue(s: HereState): Promise<StudyRecord> {
  const { home, study, stopped, held } = s;
  // runs not started yet; one already running (a study taken up again after its host closed) goes on in its process
  const queue = study.runs.filter((r) => r.state === 'pending');
  const worker = async () => {
    for (let run = queue.shift(); run; run = queue.shift()) {
      if (stopped.signal.aborted || held.signal.aborted) break;
      if (s.skipped.has(run.runId)) continue;
      await runOne(s, run);
    }
  };
  writeStudy(home, study);
  return Promise.all(Array.from({ length: Math.min(s.parallel, queue.length) }, worker)).then(() => {
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
}

export function runStudyHere(
  home: string,
  study: StudyRecord,
  events: StudyEvents = {},
  launcher: StudyLauncher = cliStudyLauncher(),
): RunningStudyHere {
  if (study.where.kind !== 'local') throw new Error('runStudyHere: not a local study');
  const s: HereState = {
    home,
    study,
    events,
    launcher,
    parallel: study.where.parallel,
    processes: new Map(),
    stopped: new AbortController(),
    held: new AbortController(),
    skipped: new Set(),
    waiting: new Map(),
    save: (run: StudyRun) => {
      writeStudy(home, study);
      events.onRun?.(run, study);
    },
  };
  const done = runQueue(s);
  return {
    done,
    stop() {
      s.stopped.abort();
      for (const p of s.processes.values()) p.terminate();
    },
    stopRun(runId) {
      const run = study.runs.find((r) => r.runId === runId);
      if (!run || FINAL_STATES.has(run.state) || s.skipped.has(runId)) return false;
      s.skipped.add(runId);
      if (run.state === 'pending') {
        s.waiting.get(runId)?.abort();
        run.state = 'stopped';
        run.message = 'not started: stopped while it waited for its turn';
        run.endedAt = new Date().toISOString();
        s.save(run);
      } else s.processes.get(runId)?.terminate();
      return true;
    },
    hold() {
      s.held.abort();
    },
  };
}
