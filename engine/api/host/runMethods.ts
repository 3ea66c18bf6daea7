/**
 * The host's methods for runs as folders: the run list (from the run index), one run (run.json with its shown status,
 * summary, checkpoints, latest events, what its logs hold) and its labels (tags, notes).
 */
import path from 'node:path';
import { RUN_FILES } from '../../runs/folder/home';
import { readJsonl } from '../../runs/folder/jsonl';
import { listCheckpoints, readRunMeta, writeRunLabels } from '../../runs/folder/runFolder';
import { shownStatus } from '../../runs/folder/writerProcess';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';
import { isRecord } from './jsonValues';

export function createRunMethods(ctx: HostContext): Pick<ApiHandlers, 'listRuns' | 'getRun' | 'setRunLabels'> {
  const { home, index, running, dirOf, trajectoryLines } = ctx;
  return {
    async listRuns() {
      return { home, runs: index.list() };
    },

    async getRun({ runId, eventsLimit }) {
      const dir = dirOf(runId);
      const written = readRunMeta(dir);
      // 'running' whose writer is gone (killed, out of memory) is shown interrupted; run.json stays the run's.
      const meta = { ...written, status: shownStatus(dir, written) };
      // This run's entry of the run index alone, its metrics summarised incrementally (runIndex.ts): names, lines and
      // the last step without reading the whole log.
      const indexed = index.get(runId);
      const summary = indexed?.summary;
      const events = readJsonl<Record<string, unknown>>(path.join(dir, RUN_FILES.events), {
        tail: true,
        validate: (v) => (isRecord(v) ? undefined : 'is not a JSON object'),
      }).records;
      const limit = eventsLimit ?? 200;
      return {
        meta,
        ...(summary ? { summary } : {}),
        checkpoints: listCheckpoints(dir).map((c) => ({ step: c.step })),
        events: limit === 0 ? [] : events.slice(-limit),
        eventsTotal: events.length,
        metricNames: Object.keys(summary?.metrics ?? {}).sort(),
        metricPoints: indexed?.metricLines ?? 0,
        lastStep: summary?.steps ?? null,
        trajectories: trajectoryLines(runId).starts.length,
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
