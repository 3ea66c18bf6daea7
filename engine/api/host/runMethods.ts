/**
 * The host's methods for runs as folders: the run list (from the run index), one run (run.json with its shown status,
 * summary, checkpoints, latest events, what its logs hold) and its labels (tags, notes).
 */
import path from 'node:path';
import { RUN_FILES } from '../../runs/folder/home';
import { HomeFileError } from '../../runs/folder/homeFile';
import { readJsonl } from '../../runs/folder/jsonl';
import { listCheckpoints, readRunMeta, writeRunLabels } from '../../runs/folder/runFolder';
import { shownStatus } from '../../runs/folder/writerProcess';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';
import { isRecord } from './jsonValues';

/** What `read` returns, or `none` when a file it reads is refused (homeFile.ts: not a regular file, a link out). */
function orNone<T>(read: () => T, none: T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof HomeFileError) return none;
    throw err;
  }
}

/** The most JSON of events one getRun answer carries (the last events come first; `eventsFrom` says where it cut). */
export const EVENTS_ANSWER_BYTES = 4 << 20;

/** Up to `limit` events before position `before`, the newest first in, within EVENTS_ANSWER_BYTES. */
function latestEvents(
  events: Record<string, unknown>[],
  limit: number,
  before: number,
): { events: Record<string, unknown>[]; from: number } {
  const end = Math.min(before, events.length);
  let from = end;
  let bytes = 0;
  while (from > 0 && end - from < limit) {
    // Each line passed readJsonl's depth and length bounds, so it can be measured as JSON.
    bytes += JSON.stringify(events[from - 1]).length + 1;
    if (bytes > EVENTS_ANSWER_BYTES && from < end) break;
    if (bytes > EVENTS_ANSWER_BYTES) {
      // one event alone larger than the bound: skipped, so the answer stays bounded
      from--;
      return { events: [], from };
    }
    from--;
  }
  return { events: events.slice(from, end), from };
}

export function createRunMethods(ctx: HostContext): Pick<ApiHandlers, 'listRuns' | 'getRun' | 'setRunLabels'> {
  const { home, index, running, dirOf, trajectoryLines } = ctx;
  return {
    async listRuns() {
      return { home, runs: index.list() };
    },

    async getRun({ runId, eventsLimit, eventsBefore }) {
      const dir = dirOf(runId);
      const written = readRunMeta(dir);
      // 'running' whose writer is gone (killed, out of memory) is shown interrupted; run.json stays the run's.
      const meta = { ...written, status: shownStatus(dir, written) };
      // This run's entry of the run index alone, its metrics summarised incrementally (runIndex.ts): names, lines and
      // the last step without reading the whole log.
      const indexed = index.get(runId);
      const summary = indexed?.summary;
      // A hostile events.jsonl or trajectories.jsonl (a FIFO, a link out of the folder: homeFile.ts) costs the page
      // those lines, not the run.
      const events = orNone(
        () =>
          readJsonl<Record<string, unknown>>(path.join(dir, RUN_FILES.events), {
            tail: true,
            validate: (v) => (isRecord(v) ? undefined : 'is not a JSON object'),
          }).records,
        [],
      );
      const shown = latestEvents(events, eventsLimit ?? 200, eventsBefore ?? events.length);
      return {
        meta,
        ...(summary ? { summary } : {}),
        checkpoints: listCheckpoints(dir).map((c) => ({ step: c.step })),
        events: shown.events,
        eventsTotal: events.length,
        eventsFrom: shown.from,
        metricNames: Object.keys(summary?.metrics ?? {}).sort(),
        metricPoints: indexed?.metricLines ?? 0,
        lastStep: summary?.steps ?? null,
        trajectories: orNone(() => trajectoryLines(runId).starts.length, 0),
        hostProcess: running.has(runId),
      };
    },

    async setRunLabels({ runId, tags, notes }) {
      // Into labels.json, not run.json: the run's process rewrites run.json (status, checkpoints) at any moment, and
      // a read-modify-write of it here could undo its change, or it ours (engine/runs/folder/runFolder.ts readRunMeta).
      const meta = writeRunLabels(dirOf(runId), {
        ...(tags ? { tags: [...new Set(tags)] } : {}),
        ...(notes !== undefined ? { notes } : {}),
      });
      return { meta };
    },
  };
}
