/**
 * live.json (the step in flight, liveTrajectories.ts) as the watcher reads it (watcher.ts): replaced whole by rename,
 * each new version is sent whole and its removal as `step: null`; a follow-up read after chokidar's throttle catches a
 * replacement the throttle hid.
 */
import fs from 'node:fs';
import path from 'node:path';
import { RUN_FILES } from '../folder/home';
import { readLiveTrajectories } from '../folder/liveTrajectories';
import { loadMeta } from './metaFile';
import { emit, stateOf, type RunState, type WatchContext } from './watchState';

/** Send live.json if it changed since the last read (or say it is gone); returns whether anything was sent. */
export function readLive(ctx: WatchContext, runId: string, s: RunState): boolean {
  const file = path.join(ctx.root, runId, RUN_FILES.live);
  let st: fs.Stats;
  try {
    st = fs.statSync(file);
  } catch {
    if (s.live === null) return false;
    s.live = null;
    emit(ctx, { type: 'liveTrajectories', runId, step: null, records: [] });
    return true;
  }
  const version = `${st.ino}:${st.size}:${st.mtimeMs}`;
  if (version === s.live) return false;
  const live = readLiveTrajectories(file);
  // Removed or replaced between the stat and the read: the change that did it arms another check.
  if (!live) return false;
  s.live = version;
  if (ctx.ready || ctx.fromStart) {
    emit(ctx, { type: 'liveTrajectories', runId, step: live.step, records: live.records });
  }
  return true;
}

/** live.json is replaced by rename, as run.json is: a replacement within chokidar's throttle is read by this check. */
function scheduleLiveCheck(ctx: WatchContext, runId: string, s: RunState): void {
  if (ctx.closed) return;
  if (s.liveTimer) clearTimeout(s.liveTimer);
  s.liveTimer = setTimeout(() => {
    s.liveTimer = null;
    if (ctx.closed || ctx.runs.get(runId) !== s) return;
    if (readLive(ctx, runId, s)) scheduleLiveCheck(ctx, runId, s);
  }, ctx.settleMs);
}

/** live.json appeared or changed. */
export function onLive(ctx: WatchContext, runId: string): void {
  const s = stateOf(ctx, runId);
  if (s.meta === null && !loadMeta(ctx, runId, s)) return;
  readLive(ctx, runId, s);
  scheduleLiveCheck(ctx, runId, s);
}
