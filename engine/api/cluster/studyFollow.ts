/**
 * How the host follows a study it started or re-attached: on a Ray cluster, runStudyOnRay submits what is pending and
 * follows every job's log into <home>/studies/<id>/<runId>.log, whose new bytes are pushed to the windows as
 * 'clusterLog' events; here, runStudyHere starts its runs through the host's launcher. Every change of the record is a
 * 'studyChanged' event, and how following ended (the cluster unreachable, another fault) becomes the study's link.
 */
import fs from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { RayError, type RayJobsClient } from '../../cluster/ray/jobsClient';
import { runStudyHere, type StudyLauncher } from '../../cluster/studies/localStudy';
import { runStudyOnRay } from '../../cluster/studies/rayStudy';
import { openStudyLog, type StudyRecord } from '../../cluster/studies/studyRecord';
import type { ClusterContext } from './clusterContext';

const LOG_CHUNK = 1 << 20;

export interface StudyFollowing {
  /** Follows a study (submitting what is pending) until every run ends or the cluster is lost. */
  readonly follow: (record: StudyRecord, client: RayJobsClient, runtimeEnv?: Record<string, unknown>) => void;
  /** Runs a study here through the host's launcher until every run ends; close() holds it (no new run starts). */
  readonly followHere: (record: StudyRecord, launcher: StudyLauncher) => void;
}

/** Pushes what each run's kept log gained since the last push. */
function pumpLogs(ctx: ClusterContext, record: StudyRecord): void {
  const { home, pushed } = ctx;
  for (const run of record.runs) {
    const key = `${record.id}/${run.runId}`;
    let fd: number | null;
    try {
      fd = openStudyLog(home, record.id, run.runId); // a link out of the home or a FIFO: refused, nothing pushed
    } catch {
      continue;
    }
    if (fd === null) continue; // not followed yet
    let state: { offset: number; decoder: StringDecoder } | undefined;
    let buf: Buffer;
    try {
      const size = fs.fstatSync(fd).size;
      state = pushed.get(key);
      // the follower rewrites the log from its first byte on a re-attach
      if (!state || size < state.offset) pushed.set(key, (state = { offset: 0, decoder: new StringDecoder('utf8') }));
      if (size === state.offset) continue;
      const length = Math.min(size - state.offset, LOG_CHUNK);
      buf = Buffer.alloc(length);
      buf = buf.subarray(0, fs.readSync(fd, buf, 0, length, state.offset));
    } finally {
      fs.closeSync(fd);
    }
    const length = buf.length;
    const from = state.offset;
    state.offset += length;
    const text = state.decoder.write(buf);
    ctx.emit({ type: 'clusterLog', studyId: record.id, runId: run.runId, from, to: state.offset, text });
  }
}

export function createStudyFollowing(ctx: ClusterContext): StudyFollowing {
  const { home, opts, followed, links, changed } = ctx;
  return {
    follow(record, client, runtimeEnv) {
      const detach = new AbortController();
      links.delete(record.id);
      const running = runStudyOnRay(home, record, client, {
        onRun: () => changed(record),
        signal: detach.signal,
        ...(runtimeEnv ? { runtimeEnv } : {}),
        ...(opts.retryDelayMs !== undefined ? { retryDelayMs: opts.retryDelayMs } : {}),
      });
      const timer = setInterval(() => pumpLogs(ctx, record), opts.logPollMs ?? 250);
      const finish = (err?: unknown) => {
        clearInterval(timer);
        if (ctx.closed) return;
        pumpLogs(ctx, record);
        followed.delete(record.id);
        const lost = record.runs.find((r) => r.state === 'unknown' && r.message);
        if (err instanceof RayError && err.kind === 'unreachable') {
          links.set(record.id, { link: 'unreachable', message: err.message });
        } else if (err) {
          links.set(record.id, {
            link: 'error',
            message: err instanceof Error ? err.message.split('\n')[0]! : 'following ended without a reason',
          });
        } else if (lost) links.set(record.id, { link: 'unreachable', message: lost.message! });
        changed(record);
      };
      const done = running.done.then(
        () => finish(),
        (err: unknown) => finish(err),
      );
      followed.set(record.id, { record, client, stop: running.stop, detach, done });
      changed(record);
    },

    followHere(record, launcher) {
      const detach = new AbortController();
      links.delete(record.id);
      const running = runStudyHere(home, record, { onRun: () => changed(record) }, launcher);
      detach.signal.addEventListener('abort', () => running.hold(), { once: true });
      const finish = (err?: unknown) => {
        if (ctx.closed) return;
        followed.delete(record.id);
        if (err) {
          links.set(record.id, {
            link: 'error',
            message: err instanceof Error ? err.message.split('\n')[0]! : 'the study ended without a reason',
          });
        }
        changed(record);
      };
      const done = running.done.then(
        () => finish(),
        (err: unknown) => finish(err),
      );
      followed.set(record.id, { record, stop: running.stop, stopRun: running.stopRun, detach, done });
      changed(record);
    },
  };
}
