/**
 * The host's methods for a study's runs as jobs: stop one run or every run still going (on a Ray cluster through the
 * Jobs API; here, through the host's own launcher, studyLauncher.ts), and read the end of a run's kept job log.
 */
import fs from 'node:fs';
import { FINAL_STATES, openStudyLog, readStudy } from '../../cluster/studies/studyRecord';
import { UserError } from '../../base/userError';
import type { ApiHandlers } from '../host/host';
import type { ClusterContext } from './clusterContext';
import { stopStudyHere } from './studyLauncher';

export function createClusterJobMethods(ctx: ClusterContext): Pick<ApiHandlers, 'stopClusterJob' | 'getClusterLog'> {
  const { home, followed, tokenEnvs, clientFor } = ctx;
  return {
    async stopClusterJob({ studyId, runId }) {
      const live = followed.get(studyId);
      const record = live?.record ?? readStudy(home, studyId);
      const going = record.runs.filter((r) => !FINAL_STATES.has(r.state) && (runId === undefined || r.runId === runId));
      if (runId !== undefined && !record.runs.some((r) => r.runId === runId)) {
        throw new UserError(`runId: study ${studyId} has no run '${runId}'`);
      }
      if (record.where.kind !== 'ray' && !live) {
        throw new UserError(`study ${studyId} runs here, not from this app: stop its runs from their own rows`);
      }
      if (going.length === 0) {
        return {
          stopping: false,
          message: runId ? `run ${runId} has ended` : `every run of study ${studyId} has ended`,
        };
      }
      if (record.where.kind !== 'ray') return stopStudyHere(live!, going, runId);
      if (live && runId === undefined) {
        live.stop(); // pending runs are not submitted; the others are asked to stop
        return {
          stopping: true,
          message: `asked Ray to stop ${going.length} job${going.length === 1 ? '' : 's'} (each checkpoints first)`,
        };
      }
      const client = live?.client ?? clientFor(record.where.url, tokenEnvs.get(studyId));
      let asked = 0;
      for (const run of going) {
        if (run.state === 'pending') continue;
        if (await client.stop(run.runId)) asked++;
      }
      return {
        stopping: asked > 0,
        message:
          asked > 0
            ? `asked Ray to stop ${asked === 1 ? `job ${going[0]!.runId}` : `${asked} jobs`} (the run checkpoints first)`
            : 'Ray says the job was not running',
      };
    },

    async getClusterLog({ studyId, runId, maxBytes }) {
      const record = followed.get(studyId)?.record ?? readStudy(home, studyId);
      if (!record.runs.some((r) => r.runId === runId)) {
        throw new UserError(`runId: study ${studyId} has no run '${runId}'`);
      }
      // a link out of the home or a FIFO is refused unread (studyRecord.ts openStudyLog)
      const fd = openStudyLog(home, record.id, runId);
      if (fd === null) return { text: '', from: 0, size: 0 }; // not followed yet
      let size: number;
      let from: number;
      let buf: Buffer;
      try {
        size = fs.fstatSync(fd).size;
        from = Math.max(0, size - maxBytes);
        buf = Buffer.alloc(size - from);
        buf = buf.subarray(0, fs.readSync(fd, buf, 0, buf.length, from));
      } finally {
        fs.closeSync(fd);
      }
      // from a line start when cut, so no character is split
      let text = buf.toString('utf8');
      let start = from;
      if (from > 0) {
        const nl = buf.indexOf(10);
        if (nl >= 0) {
          text = buf.subarray(nl + 1).toString('utf8');
          start = from + nl + 1;
        }
      }
      return { text, from: start, size };
    },
  };
}
