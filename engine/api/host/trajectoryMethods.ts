/**
 * The host's methods for trajectories: lines of trajectories.jsonl for the inspectors, by position, step or filter
 * (trajectoryQuery.ts over the kept index, trajectoryLines.ts), with their capacities and MARS pages computed here; and
 * the records of the step in flight (live.json).
 */
import path from 'node:path';
import { RUN_FILES } from '../../runs/folder/home';
import { readLiveTrajectories } from '../../runs/folder/liveTrajectories';
import { readRunMeta } from '../../runs/folder/runFolder';
import { marsPagesOf, withCapacities } from '../../runs/trajectories/trajectoryPages';
import { queryTrajectories } from '../../runs/trajectories/trajectoryQuery';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';

export function createTrajectoryMethods(
  ctx: HostContext,
): Pick<ApiHandlers, 'getTrajectories' | 'getLiveTrajectories'> {
  const { dirOf, trajectoryLines } = ctx;
  return {
    async getTrajectories({ runId, ...req }) {
      const answer = queryTrajectories(trajectoryLines(runId), req);
      const { config } = readRunMeta(dirOf(runId));
      const records = withCapacities(answer.records, config);
      const pages = marsPagesOf(records, config);
      return Object.keys(pages).length ? { ...answer, records, pages } : { ...answer, records };
    },

    async getLiveTrajectories({ runId }) {
      const live = readLiveTrajectories(path.join(dirOf(runId), RUN_FILES.live));
      return live ? { step: live.step, records: live.records } : { step: null, records: [] };
    },
  };
}
