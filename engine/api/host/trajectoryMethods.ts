/**
 * The host's methods for trajectories: lines of trajectories.jsonl for the inspectors, by position, step or filter
 * (trajectoryQuery.ts over the kept index, trajectoryLines.ts), with their capacities and MARS pages computed here; and
 * the records of the step in flight (live.json).
 *
 * A home's files are untrusted (issue 34): an answer is held to ANSWER_BYTES of lines (fewer records than asked, and
 * `truncated`, when the lines are larger; the position or `next` says where to continue), and a record nested deeper
 * than any the engine writes is answered as `{unreadable: true, line}`, like a line that is not JSON, so the valid
 * records beside it still arrive.
 */
import path from 'node:path';
import { RUN_FILES } from '../../runs/folder/home';
import { MAX_RECORD_DEPTH, valueNestedDeeper } from '../../runs/folder/homeFile';
import { readLiveTrajectories } from '../../runs/folder/liveTrajectories';
import { readRunMeta } from '../../runs/folder/runFolder';
import type { TrajectoryIndex } from '../../runs/trajectories/trajectoryIndex';
import { linesOfStep } from '../../runs/trajectories/trajectoryIndex';
import { marsPagesOf, withCapacities } from '../../runs/trajectories/trajectoryPages';
import { queryTrajectories, type TrajectoryAnswer } from '../../runs/trajectories/trajectoryQuery';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';

/** The most bytes of trajectories.jsonl lines one answer carries (unless its first line alone is larger). */
export const ANSWER_BYTES = 16 << 20;

const lineBytes = (index: TrajectoryIndex, p: number): number => index.ends[p]! - index.starts[p]!;

/** How many lines from position `first` (at most `limit`) fit in ANSWER_BYTES; at least one. */
function fittingLimit(index: TrajectoryIndex, first: number, limit: number): number {
  let bytes = 0;
  let n = 0;
  while (n < limit && first + n < index.starts.length) {
    bytes += lineBytes(index, first + n);
    if (n > 0 && bytes > ANSWER_BYTES) break;
    n++;
  }
  return Math.max(1, n);
}

/** A filtered page cut to ANSWER_BYTES, keeping the newest records; `next` then continues before the oldest kept. */
function cutFiltered(index: TrajectoryIndex, answer: TrajectoryAnswer): TrajectoryAnswer & { truncated?: true } {
  const positions = answer.positions ?? [];
  let bytes = 0;
  let keep = positions.length;
  while (keep > 0) {
    bytes += lineBytes(index, positions[keep - 1]!);
    if (keep < positions.length && bytes > ANSWER_BYTES) break;
    keep--;
  }
  if (keep === 0) return answer;
  return {
    ...answer,
    records: answer.records.slice(keep),
    positions: positions.slice(keep),
    offset: positions[keep] ?? answer.offset,
    next: positions[keep]!,
    truncated: true,
  };
}

/** Records nested too deeply to be walked or sent become the placeholder of an unreadable line. */
function readable(records: unknown[], positionOf: (i: number) => number): unknown[] {
  return records.map((r, i) =>
    valueNestedDeeper(r, MAX_RECORD_DEPTH) ? { unreadable: true, line: positionOf(i) + 1 } : r,
  );
}

export function createTrajectoryMethods(
  ctx: HostContext,
): Pick<ApiHandlers, 'getTrajectories' | 'getLiveTrajectories'> {
  const { dirOf, trajectoryLines } = ctx;
  return {
    async getTrajectories({ runId, ...req }) {
      const index = trajectoryLines(runId);
      const filtered = req.filter !== undefined || (req.step !== undefined && req.before !== undefined);
      let answer: TrajectoryAnswer & { truncated?: true };
      if (filtered) {
        answer = cutFiltered(index, queryTrajectories(index, req));
      } else {
        const first =
          req.step !== undefined ? (linesOfStep(index, req.step)?.first ?? index.starts.length) : req.offset;
        const limit = Math.min(req.limit, fittingLimit(index, first, req.limit));
        answer = queryTrajectories(index, { ...req, limit });
        if (limit < req.limit && first + limit < (answer.stepEnd ?? index.starts.length)) answer.truncated = true;
      }
      const positions = answer.positions;
      const records0 = readable(answer.records, (i) => (positions ? positions[i]! : answer.offset + i));
      const { config } = readRunMeta(dirOf(runId));
      const records = withCapacities(records0, config);
      const pages = marsPagesOf(records, config);
      return Object.keys(pages).length ? { ...answer, records, pages } : { ...answer, records };
    },

    async getLiveTrajectories({ runId }) {
      const live = readLiveTrajectories(path.join(dirOf(runId), RUN_FILES.live));
      return live ? { step: live.step, records: live.records } : { step: null, records: [] };
    },
  };
}
