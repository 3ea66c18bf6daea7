/**
 * Drives a trainer inside its run folder (docs/architecture.md "Run folder", "Processes"): one metrics line per step, trajectory
 * records, checkpoints and evaluations on their cadences, status in run.json and events.jsonl, a lock against a second
 * writer, Ctrl-C as "checkpoint, then stop", and resume from the last checkpoint with the same random streams.
 *
 * Crash safety: every line is one write; a checkpoint records the byte length of metrics.jsonl and
 * trajectories.jsonl at its step, and resume truncates both files to those lengths, so lines written after the last
 * checkpoint (including a torn one) are dropped and recomputed identically, never duplicated.
 *
 * While a step runs, what the trainer reports of it (StepHooks.live) replaces live.json (liveTrajectories.ts); once
 * the step's records are appended, live.json is removed. It is for windows only: nothing here reads it back.
 */
import fs from 'node:fs';
import path from 'node:path';
import { algorithmFor } from './registry';
import { trainingWithEndpointsProblem } from './config/configuredSources';
import { loadCheckpoint, saveCheckpoint } from '../model/formats/checkpoint';
import { faultPoint } from '../base/faultPoints';
import { backendReport } from '../tensor/backend';
import { UserError } from '../base/userError';
import { ENGINE_VERSION } from '../base/version';
import { parseRunConfig, type RunConfig } from './config/configSchema';
import { JsonlAppender, truncateTo } from './folder/jsonl';
import { clearLiveTrajectories, writeLiveTrajectories } from './folder/liveTrajectories';
import {
  appendEvent,
  createRunFolder,
  listCheckpoints,
  readRunMeta,
  runFilePaths,
  updateRunMeta,
  updateStatus,
  type RunMeta,
} from './folder/runFolder';
import { acquireRunLock } from './folder/runLock';
import { SummaryKeeper } from './summary/summarySidecar';
import type { Trainer } from '../training/trainer';

export interface Progress {
  runId: string;
  step: number;
  totalSteps: number;
  /** This step's metrics (training, plus eval.* on evaluation steps). */
  metrics: Record<string, number>;
  tokensPerSec: number;
  elapsedMs: number;
}

export interface RunOptions {
  /** Called after every step. */
  onProgress?: (p: Progress) => void;
  /** Aborting stops after the step in flight, writes a checkpoint and marks the run 'stopped'. */
  signal?: AbortSignal;
  /** Stop (as if aborted) once this many steps are done in this process; for tests and `--steps`. */
  stopAfterStep?: number;
}

export interface RunOutcome {
  runId: string;
  dir: string;
  status: 'finished' | 'stopped';
  step: number;
  lastMetrics: Record<string, number>;
}

/** Offsets recorded in a checkpoint's trainer_state.json. */
interface Offsets {
  metrics: number;
  trajectories: number;
}

interface CheckpointState {
  step: number;
  algorithm: string;
  config: RunConfig;
  offsets: Offsets;
  [k: string]: unknown;
}

export interface StartOptions extends RunOptions {
  preset?: string;
  /** The run's id (e.g. a Ray job's submission id, `train --run-id`); default: a new one from the time and preset. */
  runId?: string;
  /** Called once the run folder exists, before the (possibly slow) trainer is built: a host learns the run's id early. */
  onCreated?: (run: { runId: string; dir: string }) => void;
}

export async function startRun(home: string, config: RunConfig, opts: StartOptions = {}): Promise<RunOutcome> {
  const endpoints = trainingWithEndpointsProblem(config); // before a run folder exists
  if (endpoints) throw new UserError(endpoints);
  const { id, dir } = createRunFolder(
    home,
    {
      algorithm: config.algorithm,
      preset: opts.preset,
      config,
      engineVersion: ENGINE_VERSION,
      backend: backendReport() ?? undefined,
      seed: config.seed,
      status: 'created',
      tags: config.tags,
      notes: config.notes,
    },
    { id: opts.runId },
  );
  const release = acquireRunLock(dir);
  opts.onCreated?.({ runId: id, dir });
  try {
    const trainer = await building(dir, 0, () => algorithmFor(config).createTrainer(config));
    return await drive(id, dir, config, trainer, opts);
  } finally {
    release();
  }
}

export async function resumeRun(runDirPath: string, opts: RunOptions = {}): Promise<RunOutcome> {
  const meta = readRunMeta(runDirPath);
  const config = parseRunConfig(meta.config, path.join(runDirPath, 'run.json'));
  const release = acquireRunLock(runDirPath);
  try {
    const files = runFilePaths(runDirPath);
    const last = listCheckpoints(runDirPath).at(-1);
    const trainer = await building(runDirPath, last?.step ?? 0, async () => {
      if (!last) {
        truncateTo(files.metrics, 0);
        truncateTo(files.trajectories, 0);
        return algorithmFor(config).createTrainer(config);
      }
      const contents = await loadCheckpoint(last.path);
      const state = contents.trainerState as Partial<CheckpointState> | undefined;
      if (!state?.offsets) {
        throw new UserError(
          `${last.path}/trainer_state.json: offsets are missing; this checkpoint cannot resume a run`,
        );
      }
      truncateTo(files.metrics, state.offsets.metrics);
      truncateTo(files.trajectories, state.offsets.trajectories);
      return algorithmFor(config).createTrainer(config, contents);
    });
    if (trainer.step >= config.budget.steps) {
      trainer.dispose();
      return { runId: meta.id, dir: runDirPath, status: 'finished', step: trainer.step, lastMetrics: {} };
    }
    appendEvent(runDirPath, { type: 'resumed', fromStep: last?.step ?? 0, pid: process.pid });
    return await drive(meta.id, runDirPath, config, trainer, opts);
  } finally {
    release();
  }
}

/** Builds a run's trainer; when that fails (a missing model.from, a task pool too small, …) the run is marked failed,
 * with why, instead of staying 'created' or keeping the status it was resumed from. */
async function building(dir: string, step: number, build: () => Promise<Trainer>): Promise<Trainer> {
  try {
    return await build();
  } catch (err) {
    updateStatus(dir, 'failed', { step, error: (err as Error).message });
    throw err;
  }
}

async function drive(
  runId: string,
  dir: string,
  config: RunConfig,
  trainer: Trainer,
  opts: RunOptions,
): Promise<RunOutcome> {
  const files = runFilePaths(dir);
  const metrics = new JsonlAppender(files.metrics);
  const trajectories = new JsonlAppender(files.trajectories);
  // metrics.summary.json: what a cold listing of the home shows of this run without reading its whole log.
  const summaryKeeper = new SummaryKeeper(dir);
  const total = config.budget.steps;
  const t0 = Date.now();
  let tokens = 0;
  let lastMetrics: Record<string, number> = {};
  let lastCheckpoint = trainer.step;
  const stepsAtStart = trainer.step;
  // Where the time goes (engine/pure/timeSplit.ts): each line's interval since the previous one, and the checkpoint
  // written after the previous step, which falls in this line's interval.
  let lineEnd = performance.now();
  let checkpointMs = 0;

  const checkpoint = async () => {
    const c0 = performance.now();
    // Offsets must refer to lines that are on disk before the checkpoint that names them.
    metrics.sync();
    trajectories.sync();
    const snap = await trainer.snapshot();
    const state: CheckpointState = {
      ...snap.state,
      step: trainer.step,
      algorithm: config.algorithm,
      config,
      offsets: { metrics: metrics.byteLength, trajectories: trajectories.byteLength },
    };
    await saveCheckpoint(path.join(dir, 'checkpoints', String(trainer.step)), snap.model, {
      optimizer: snap.optimizer,
      trainerState: state,
      files: snap.files,
    });
    lastCheckpoint = trainer.step;
    updateRunMeta(dir, (meta) => ({ ...meta, lastCheckpointStep: trainer.step }));
    pruneCheckpoints(dir, config.checkpoint.keep);
    summaryKeeper.flush();
    checkpointMs += performance.now() - c0;
  };

  // What a step in flight looks like so far; each report replaces the last (windows show it, nothing reads it back).
  let inFlight = 0;
  const live = (records: object[]): void => {
    const step = inFlight;
    writeLiveTrajectories(files.live, { step, time: Date.now() / 1000, records: records.map((r) => ({ step, ...r })) });
  };

  try {
    // A crash may have left the live file of a step that was never finished.
    clearLiveTrajectories(files.live);
    updateStatus(dir, 'running', { pid: process.pid, step: trainer.step });
    while (trainer.step < total) {
      await yieldToEventLoop();
      inFlight = trainer.step + 1;
      const out = await trainer.trainStep({ live });
      tokens += out.tokens;
      const step = trainer.step;
      const line: Record<string, number> = { step, time: Date.now() / 1000, ...out.metrics };
      const evalDue = (config.eval.every > 0 && step % config.eval.every === 0) || step === total;
      if (evalDue) {
        const e0 = performance.now();
        const ev = await trainer.evaluate();
        for (const [k, v] of Object.entries(ev.metrics)) line[`eval.${k}`] = v;
        line['timing.evalMs'] = performance.now() - e0;
      }
      const now = performance.now();
      Object.assign(line, {
        'timing.stepMs': now - lineEnd,
        'timing.checkpointMs': checkpointMs,
        'timing.rolloutTokens': out.tokens,
      });
      lineEnd = now;
      checkpointMs = 0;
      faultPoint('append', () => {
        // What a kill in the middle of a write leaves behind: half a line.
        const text = JSON.stringify(line);
        fs.appendFileSync(files.metrics, text.slice(0, text.length >> 1));
      });
      metrics.append(line);
      summaryKeeper.maybeFlush();
      for (const t of out.trajectories) trajectories.append({ step, ...t });
      // The step's final records are in trajectories.jsonl: the live file of the step would only repeat them.
      clearLiveTrajectories(files.live);
      lastMetrics = line;
      const elapsedMs = Date.now() - t0;
      opts.onProgress?.({
        runId,
        step,
        totalSteps: total,
        metrics: line,
        tokensPerSec: tokens / Math.max(elapsedMs / 1000, 1e-9),
        elapsedMs,
      });
      const stopping =
        opts.signal?.aborted || (opts.stopAfterStep !== undefined && step - stepsAtStart >= opts.stopAfterStep);
      if (step % config.checkpoint.every === 0 || step === total || stopping) await checkpoint();
      if (stopping && step < total) {
        updateStatus(dir, 'stopped', { step });
        return { runId, dir, status: 'stopped', step, lastMetrics };
      }
    }
    if (lastCheckpoint !== trainer.step) await checkpoint();
    updateStatus(dir, 'finished', { step: trainer.step });
    return { runId, dir, status: 'finished', step: trainer.step, lastMetrics };
  } catch (err) {
    updateStatus(dir, 'failed', { step: trainer.step, error: (err as Error).message });
    throw err;
  } finally {
    clearLiveTrajectories(files.live);
    metrics.close();
    summaryKeeper.flush();
    trajectories.close();
    trainer.dispose();
  }
}

/**
 * On wasm and cpu every await in a step resolves as a microtask, so without this the event loop would never reach
 * its I/O phase during training: no signal (Ctrl-C), timer or parent-process message would be handled.
 */
export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function pruneCheckpoints(dir: string, keep: number | 'all'): void {
  if (keep === 'all') return;
  const all = listCheckpoints(dir);
  for (const c of all.slice(0, Math.max(0, all.length - keep))) fs.rmSync(c.path, { recursive: true, force: true });
}

export type { RunMeta };
