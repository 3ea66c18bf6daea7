/**
 * The host's side of studies (issue 18): the launch form's "where" (a Ray cluster, or this machine with variants ×
 * seeds) and the Runs view's study jobs. Everything goes through the code the CLI uses (engine/cluster/studies/ planStudy,
 * runStudyOnRay, runStudyHere; engine/cluster/ray/ RayJobsClient), so `mars-lab study [--ray]` and the app start, follow and
 * record a study the same way. A study here starts its runs through the host's RunLauncher and worker slots
 * (studyLauncher.ts), never as children of process.execPath (the Electron binary in the app).
 *
 * The host follows each study it started or re-attached (runStudyOnRay follows every job's log over the Jobs API's
 * WebSocket with followJobLogs and keeps it in <home>/studies/<id>/<runId>.log); the new bytes of those logs are pushed
 * to the windows as 'clusterLog' events, and every change of the record as 'studyChanged'. A cluster that cannot be
 * reached is a state, not a failure: the record keeps what it knew (runs 'unknown' or 'pending'), the study's link
 * reads 'unreachable' with the one-line reason, and attachStudy picks up from the record later.
 *
 * The page never holds a token: it names an environment variable of the host (tokenEnv), read here. Nor does it say
 * what the jobs execute: the project's folder and node on the cluster come from the host's environment
 * ($MARS_LAB_RAY_PROJECT, $MARS_LAB_RAY_NODE), so a window can only choose a preset, its config, variants and seeds,
 * and whether this host's own project is shipped with the jobs (ray.ship, clusterShip.ts; default: in a packaged app
 * without $MARS_LAB_RAY_PROJECT, whose folder, inside app.asar, is on no cluster).
 *
 * This file composes the study methods over one shared state (clusterContext.ts): beginning a study
 * (studyStartMethods.ts), the home's studies and re-attaching (studyAttachMethods.ts), a study's jobs
 * (clusterJobMethods.ts), with the following itself in studyFollow.ts.
 */
import type { ApiHandlers } from '../host/host';
import type { RunLauncher } from '../workers/runLauncher';
import type { ApiEvent } from '../contract/contract';
import { createClusterContext } from './clusterContext';
import { createClusterJobMethods } from './clusterJobMethods';
import { createStudyAttachMethods } from './studyAttachMethods';
import { createStudyFollowing } from './studyFollow';
import type { StudySlots } from './studyLauncher';
import { createStudyStartMethods } from './studyStartMethods';

export { configDiffSets } from './studySets';
export { RAY_NODE_ENV, RAY_PROJECT_ENV } from './clusterContext';

export const CLUSTER_METHODS = [
  'studyOptions',
  'startStudy',
  'listStudies',
  'attachStudy',
  'stopClusterJob',
  'getClusterLog',
] as const;
export type ClusterMethod = (typeof CLUSTER_METHODS)[number];

export interface ClusterHostOptions {
  home: string;
  presetsDir: string;
  /** Roots a window may name files in (hostGuards.ts allowedRoots). */
  roots: readonly string[];
  broadcast: (event: ApiEvent) => void;
  env?: NodeJS.ProcessEnv;
  /** Per Jobs API request; default 15 s (a window waits on it). */
  timeoutMs?: number;
  /** Delay before reconnecting a dropped log socket (tests make it short). */
  retryDelayMs?: number;
  /** How often the kept logs are read for new bytes; default 250 ms. */
  logPollMs?: number;
  /** The host's launcher and worker slots, for studies on this machine (without them such a study is refused). */
  launcher?: RunLauncher;
  slots?: StudySlots;
  /** The project a shipped study sends (default: this one, PROJECT_DIR). */
  projectDir?: string;
  /** Refuse shipped packages of this size or more (default Ray's upload cap; tests make it small). */
  shipCap?: number;
}

export interface ClusterHost {
  handlers: Pick<ApiHandlers, ClusterMethod>;
  /** Stops following (the jobs keep running; a later host re-attaches from the records). */
  close(): Promise<void>;
}

export function createClusterHost(opts: ClusterHostOptions): ClusterHost {
  const ctx = createClusterContext(opts);
  const following = createStudyFollowing(ctx);
  const handlers: ClusterHost['handlers'] = {
    ...createStudyStartMethods(ctx, following),
    ...createStudyAttachMethods(ctx, following),
    ...createClusterJobMethods(ctx),
  };

  return {
    handlers,
    async close() {
      ctx.closed = true;
      const all = [...ctx.followed.values()];
      for (const f of all) f.detach.abort();
      // a study here is held (its running processes go on, in their run folders), not waited for
      await Promise.all(all.filter((f) => f.client).map((f) => f.done));
      ctx.followed.clear();
    },
  };
}
