/**
 * What each path under runs/ means to the watcher (watcher.ts): which paths chokidar looks at at all, and what an add,
 * change or unlink of a run folder, one of its files or one of its checkpoint folders does to that run's state.
 */
import path from 'node:path';
import { LOG_FILES, RUN_FILES, type LogFileName } from '../folder/home';
import { isCompleteCheckpoint, isRunFolderName } from '../folder/runFolder';
import { onLive, readLive } from './liveFile';
import { scheduleCheck, tail } from './logTail';
import { loadMeta, scheduleMetaCheck } from './metaFile';
import { emit, stateOf, type WatchContext } from './watchState';

export type PathEventKind = 'add' | 'addDir' | 'change' | 'unlink' | 'unlinkDir';

const STEP_NAME = /^\d+$/;
const CHECKPOINT_RETRIES = 10;
const CHECKPOINT_RETRY_MS = 200;

function isLogFile(name: string): name is LogFileName {
  return (LOG_FILES as readonly string[]).includes(name);
}

/** Relative parts of a path under runs/, and whether chokidar should look at it at all. */
export function wanted(parts: string[]): boolean {
  if (parts.length === 0) return true;
  if (!isRunFolderName(parts[0]!)) return false;
  if (parts.length === 1) return true;
  if (parts.length === 2) {
    const name = parts[1]!;
    return (
      name === RUN_FILES.meta ||
      name === RUN_FILES.labels ||
      name === RUN_FILES.live ||
      name === RUN_FILES.checkpoints ||
      isLogFile(name)
    );
  }
  return parts.length === 3 && parts[1] === RUN_FILES.checkpoints && STEP_NAME.test(parts[2]!);
}

function onLog(ctx: WatchContext, runId: string, log: LogFileName): void {
  const s = stateOf(ctx, runId);
  if (s.meta === null && !loadMeta(ctx, runId, s)) {
    s.pending.add(log);
    return;
  }
  tail(ctx, runId, s, log);
  scheduleCheck(ctx, runId, s, log);
}

function onCheckpointDir(ctx: WatchContext, runId: string, stepName: string, folder: string, attempt = 0): void {
  const s = ctx.runs.get(runId);
  if (!s || ctx.closed) return;
  if (!isCompleteCheckpoint(folder)) {
    // A folder copied in by hand fills up after it appears; our own writer renames complete ones into place.
    if (attempt < CHECKPOINT_RETRIES) {
      setTimeout(() => onCheckpointDir(ctx, runId, stepName, folder, attempt + 1), CHECKPOINT_RETRY_MS);
    }
    return;
  }
  const step = Number(stepName);
  s.checkpoints.add(step);
  if (ctx.ready || ctx.fromStart) emit(ctx, { type: 'checkpointAdded', runId, step, path: folder });
}

/** runs/<id> itself: only its removal matters (its files announce the run). */
function onRunFolder(ctx: WatchContext, kind: PathEventKind, runId: string): void {
  if (kind === 'unlinkDir' && ctx.runs.has(runId)) {
    const s = ctx.runs.get(runId)!;
    for (const timer of s.timers.values()) clearTimeout(timer);
    if (s.metaTimer) clearTimeout(s.metaTimer);
    if (s.liveTimer) clearTimeout(s.liveTimer);
    ctx.runs.delete(runId);
    if (s.meta !== null) emit(ctx, { type: 'runRemoved', runId });
  }
}

/** runs/<id>/<name>: run.json, labels.json, live.json or a log. */
function onRunFile(ctx: WatchContext, kind: PathEventKind, runId: string, name: string): void {
  if (name === RUN_FILES.live) {
    if (kind === 'add' || kind === 'change') onLive(ctx, runId);
    else if (kind === 'unlink' && ctx.runs.get(runId)?.meta) readLive(ctx, runId, ctx.runs.get(runId)!);
    return;
  }
  if (kind === 'unlink' && name === RUN_FILES.labels) {
    if (ctx.runs.has(runId)) loadMeta(ctx, runId, ctx.runs.get(runId)!);
    return;
  }
  if (kind === 'unlink') {
    const s = ctx.runs.get(runId);
    clearTimeout(s?.timers.get(name as LogFileName));
    s?.timers.delete(name as LogFileName);
    s?.tails.delete(name as LogFileName);
    return;
  }
  if (kind !== 'add' && kind !== 'change') return;
  if (name === RUN_FILES.meta || name === RUN_FILES.labels) {
    loadMeta(ctx, runId, stateOf(ctx, runId));
    scheduleMetaCheck(ctx, runId);
  } else if (isLogFile(name)) {
    onLog(ctx, runId, name);
  }
}

/** runs/<id>/checkpoints/<step>: a checkpoint added or removed. */
function onCheckpointPath(ctx: WatchContext, kind: PathEventKind, runId: string, stepName: string, abs: string): void {
  const s = ctx.runs.get(runId) ?? (kind === 'addDir' ? stateOf(ctx, runId) : undefined);
  if (!s) return;
  if (kind === 'addDir') {
    if (s.meta === null) loadMeta(ctx, runId, s);
    onCheckpointDir(ctx, runId, stepName, abs);
  } else if (kind === 'unlinkDir') {
    const step = Number(stepName);
    if (s.checkpoints.delete(step)) emit(ctx, { type: 'checkpointRemoved', runId, step });
  }
}

/** One event chokidar reported, at an absolute path. */
export function handlePathEvent(ctx: WatchContext, kind: PathEventKind, abs: string): void {
  if (ctx.closed) return;
  const rel = path.relative(ctx.root, abs);
  if (rel === '' || rel.startsWith('..')) return;
  const parts = rel.split(path.sep);
  const runId = parts[0]!;
  if (parts.length === 1) onRunFolder(ctx, kind, runId);
  else if (parts.length === 2) onRunFile(ctx, kind, runId, parts[1]!);
  else if (parts.length === 3) onCheckpointPath(ctx, kind, runId, parts[2]!, abs);
}
