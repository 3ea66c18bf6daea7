/**
 * run.json (with labels.json) as the watcher reads it (watcher.ts): the first readable version announces the run and
 * tails the logs that waited for it; later ones become status or meta events. It is replaced by rename, so each change
 * also arms a follow-up read just after chokidar's throttle.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../../base/userError';
import { RUN_FILES } from '../folder/home';
import { readRunMeta, type RunMeta, type RunStatus } from '../folder/runFolder';
import { reportTornEnds, scheduleCheck, tail } from './logTail';
import { emit, problem, type RunState, type WatchContext } from './watchState';

const SETTLED: ReadonlySet<RunStatus> = new Set(['stopped', 'finished', 'failed', 'interrupted']);

/** Read run.json; announce the run the first time, its status changes after. Returns whether the run is known. */
export function loadMeta(ctx: WatchContext, runId: string, s: RunState): boolean {
  let meta: RunMeta;
  try {
    meta = readRunMeta(path.join(ctx.root, runId));
  } catch (err) {
    if (!(err instanceof UserError)) throw err;
    // A folder without run.json yet is a run being created by hand or by an older writer: wait for it quietly.
    if (s.meta !== null || fs.existsSync(path.join(ctx.root, runId, RUN_FILES.meta))) {
      problem(ctx, runId, s, err.message);
    }
    return s.meta !== null;
  }
  s.lastProblem = null;
  const before = s.meta;
  s.meta = meta;
  if (before === null) {
    if (ctx.ready || ctx.fromStart) emit(ctx, { type: 'runCreated', runId, meta });
    for (const log of s.pending) {
      tail(ctx, runId, s, log);
      scheduleCheck(ctx, runId, s, log);
    }
    s.pending.clear();
  } else if (before.status !== meta.status || before.statusAt !== meta.statusAt) {
    // Lines written before the status changed are sent before it ("finished" comes after the last metrics).
    for (const log of s.tails.keys()) tail(ctx, runId, s, log);
    emit(ctx, { type: 'runStatus', runId, status: meta.status, meta });
    if (SETTLED.has(meta.status)) reportTornEnds(ctx, runId, s);
  } else if (JSON.stringify(before) !== JSON.stringify(meta)) {
    emit(ctx, { type: 'runMeta', runId, meta });
  }
  return true;
}

/** run.json is replaced by rename; two replacements within chokidar's throttle would otherwise hide the second. */
export function scheduleMetaCheck(ctx: WatchContext, runId: string): void {
  const s = ctx.runs.get(runId);
  if (!s || ctx.closed) return;
  if (s.metaTimer) clearTimeout(s.metaTimer);
  s.metaTimer = setTimeout(() => {
    s.metaTimer = null;
    if (ctx.closed || ctx.runs.get(runId) !== s) return;
    const before = JSON.stringify(s.meta);
    loadMeta(ctx, runId, s);
    if (JSON.stringify(s.meta) !== before) scheduleMetaCheck(ctx, runId);
  }, ctx.settleMs);
}
