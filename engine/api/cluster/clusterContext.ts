/**
 * What the host's study methods share (clusterMethods.ts builds it once per host): the studies followed now, each
 * study's link to its cluster, the token variables studies were started or attached with, the log bytes already
 * pushed, and the few steps every method takes (an event to the windows, a study as a window sees it, a Jobs API
 * client from a token variable's name).
 */
import type { StringDecoder } from 'node:string_decoder';
import { RAY_TOKEN_ENV, RayJobsClient } from '../../cluster/ray/jobsClient';
import { readStudy, type StudyRecord, type StudyRun } from '../../cluster/studies/studyRecord';
import { PROJECT_DIR } from '../../cluster/studies/studyPlan';
import { UserError } from '../../base/userError';
import { checkKeyGrant } from '../host/keyGrants';
import type { ApiEvent, ApiStudyView } from '../contract/contract';
import type { ClusterHostOptions } from './clusterMethods';
import { shippedPackage } from './clusterShip';

/** What the jobs run, set where the host starts (a window cannot choose the command a cluster executes). */
export const RAY_PROJECT_ENV = 'MARS_LAB_RAY_PROJECT';
export const RAY_NODE_ENV = 'MARS_LAB_RAY_NODE';

export type Link = { link: ApiStudyView['link']; message?: string };

export interface Followed {
  record: StudyRecord;
  /** The cluster's client; none for a study on this machine. */
  client?: RayJobsClient;
  stop: () => void;
  /** A study here: stop one run (running: checkpoint and stop; waiting: never start). */
  stopRun?: (runId: string) => boolean;
  detach: AbortController;
  done: Promise<void>;
}

export interface ClusterContext {
  readonly opts: ClusterHostOptions;
  readonly home: string;
  readonly presetsDir: string;
  readonly projectDir: string;
  readonly env: NodeJS.ProcessEnv;
  readonly followed: Map<string, Followed>;
  readonly links: Map<string, Link>;
  /** The token variable a study was started or attached with (never stored in its record). */
  readonly tokenEnvs: Map<string, string>;
  /** Per study and run: bytes of its kept log already pushed, and the decoder holding a split character. */
  readonly pushed: Map<string, { offset: number; decoder: StringDecoder }>;
  /** Set by close(): nothing more is pushed, and ended follows leave no trace. */
  closed: boolean;
  /** To the windows, until close(). */
  readonly emit: (event: ApiEvent) => void;
  readonly viewOf: (record: StudyRecord) => ApiStudyView;
  /** A 'studyChanged' event for the record. */
  readonly changed: (record: StudyRecord) => void;
  readonly clientFor: (url: string, tokenEnv: string | undefined) => RayJobsClient;
  /** A study followed now, or as its record reads. */
  readonly readView: (id: string) => ApiStudyView;
}

export function createClusterContext(opts: ClusterHostOptions): ClusterContext {
  const { home, presetsDir } = opts;
  const env = opts.env ?? process.env;
  const ctx: ClusterContext = {
    opts,
    home,
    presetsDir,
    projectDir: opts.projectDir ?? PROJECT_DIR,
    env,
    followed: new Map(),
    links: new Map(),
    tokenEnvs: new Map(),
    pushed: new Map(),
    closed: false,

    emit(event) {
      if (!ctx.closed) opts.broadcast(event);
    },

    viewOf(record) {
      const link = ctx.followed.has(record.id)
        ? { link: 'following' as const }
        : (ctx.links.get(record.id) ?? { link: 'idle' as const });
      return {
        id: record.id,
        createdAt: record.createdAt,
        preset: record.preset,
        where:
          record.where.kind === 'ray'
            ? {
                kind: 'ray',
                url: record.where.url,
                rayHome: record.where.rayHome,
                ...(record.where.gpusPerJob ? { gpusPerJob: record.where.gpusPerJob } : {}),
                ...(shippedPackage(record) ? { shipped: shippedPackage(record) } : {}),
              }
            : { kind: 'local' },
        runs: record.runs.map((r: StudyRun) => ({ ...r })),
        link: link.link,
        ...(link.message ? { message: link.message } : {}),
      };
    },

    changed(record) {
      ctx.emit({ type: 'studyChanged', study: ctx.viewOf(record) });
    },

    clientFor(url, tokenEnv) {
      // a window names the variable and the URL: the token goes only where the user declared it may (keyGrants.ts);
      // without a tokenEnv the client would send $MARS_LAB_RAY_TOKEN, which is held to the same rule
      const name = tokenEnv || (env[RAY_TOKEN_ENV] ? RAY_TOKEN_ENV : undefined);
      if (name === undefined) return new RayJobsClient({ url, token: '', env, timeoutMs: opts.timeoutMs ?? 15_000 });
      checkKeyGrant(tokenEnv ? 'ray.tokenEnv' : `ray.tokenEnv (empty: ${RAY_TOKEN_ENV})`, name, url, env);
      const token = env[name];
      if (!token) {
        throw new UserError(
          `ray.tokenEnv: ${name} is not set in the environment of this app's host; set it there (ray get-auth-token prints the token) or leave the field empty`,
        );
      }
      return new RayJobsClient({ url, token, env, timeoutMs: opts.timeoutMs ?? 15_000 });
    },

    readView(id) {
      return ctx.viewOf(ctx.followed.get(id)?.record ?? readStudy(home, id));
    },
  };
  return ctx;
}
