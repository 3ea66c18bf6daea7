/**
 * The host's methods for the studies a home holds: their list from the records (no cluster is asked), and attachStudy,
 * which re-attaches to a study's cluster from its record (an unreachable cluster is a link state, not an error) or,
 * for a study here, reads its runs' states from their folders and may start the runs still waiting.
 */
import { RayError } from '../../cluster/ray/jobsClient';
import { FINAL_STATES, listStudyIds, readStudy } from '../../cluster/studies/studyRecord';
import { ensurePackage, shipCacheDir } from '../../cluster/studies/shipProject';
import { refreshStudy } from '../../cluster/studies/studyStatus';
import { UserError } from '../../base/userError';
import type { ApiStudyView } from '../contract/contract';
import type { ApiHandlers } from '../host/host';
import type { ClusterContext } from './clusterContext';
import { shippedPackage } from './clusterShip';
import { hostStudyLauncher } from './studyLauncher';
import type { StudyFollowing } from './studyFollow';

export function createStudyAttachMethods(
  ctx: ClusterContext,
  { follow, followHere }: StudyFollowing,
): Pick<ApiHandlers, 'listStudies' | 'attachStudy'> {
  const { opts, home, followed, links, tokenEnvs, emit, viewOf, changed, clientFor, readView } = ctx;
  return {
    async listStudies() {
      const studies: ApiStudyView[] = [];
      for (const id of listStudyIds(home).reverse()) {
        try {
          studies.push(readView(id));
        } catch {
          // an unreadable record: `mars-lab study ls` names it
        }
      }
      return { studies };
    },

    async attachStudy({ studyId, ray, startWaiting }) {
      const live = followed.get(studyId);
      if (live) return { study: viewOf(live.record) };
      const record = readStudy(home, studyId);
      if (record.where.kind === 'local') {
        await refreshStudy(home, record); // its runs' states from their folders
        if (startWaiting && record.runs.some((r) => r.state === 'pending')) {
          // a study here whose host closed before every run started: the rest start now, as when it began
          if (!opts.launcher || !opts.slots) {
            throw new UserError(
              `study ${studyId}: this host starts no runs itself; run its waiting runs with mars-lab`,
            );
          }
          followHere(record, hostStudyLauncher(opts.launcher, opts.slots, emit));
        }
        return { study: viewOf(record) };
      }
      const tokenEnv = ray?.tokenEnv ?? tokenEnvs.get(record.id);
      const client = clientFor(ray?.url ?? record.where.url, tokenEnv); // refused: the variable is not kept either
      if (tokenEnv) tokenEnvs.set(record.id, tokenEnv);
      try {
        await client.version();
      } catch (err) {
        if (!(err instanceof RayError) || err.kind !== 'unreachable') throw err;
        links.set(record.id, { link: 'unreachable', message: err.message });
        changed(record);
        return { study: viewOf(record) };
      }
      if (record.runs.every((r) => FINAL_STATES.has(r.state))) {
        links.delete(record.id);
        return { study: viewOf(record) };
      }
      // a shipped study's runs not yet submitted need its package, which the cluster deletes once no job uses it
      const shipped = shippedPackage(record);
      if (shipped && record.runs.some((r) => r.state === 'pending')) {
        await ensurePackage(client, shipped, shipCacheDir(home));
      }
      follow(record, client);
      return { study: viewOf(record) };
    },
  };
}
