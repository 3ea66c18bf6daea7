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
 */
import fs from 'node:fs';
import { StringDecoder } from 'node:string_decoder';
import { loadPreset } from '../../runs/presets/presets';
import { RayError, RayJobsClient } from '../../cluster/ray/jobsClient';
import { runStudyHere, type StudyLauncher } from '../../cluster/studies/localStudy';
import { runStudyOnRay } from '../../cluster/studies/rayStudy';
import {
  FINAL_STATES,
  listStudyIds,
  readStudy,
  studyLogFile,
  type StudyRecord,
  type StudyRun,
} from '../../cluster/studies/studyRecord';
import { fetchRule, planStudy, PROJECT_DIR } from '../../cluster/studies/studyPlan';
import { ensurePackage, shipCacheDir } from '../../cluster/studies/shipProject';
import { refreshStudy } from '../../cluster/studies/studyStatus';
import { UserError } from '../../base/userError';
import type { ApiEvent, ApiParsedRequest, ApiStudyView } from '../contract/contract';
import { checkShippable, shippedPackage, shipForStudy, shipsByDefault } from './clusterShip';
import { studySets } from './studySets';

export { configDiffSets } from './studySets';
import type { ApiHandlers } from '../host/host';
import type { RunLauncher } from '../workers/runLauncher';
import { hostStudyLauncher, stopStudyHere, type StudySlots } from './studyLauncher';

/** What the jobs run, set where the host starts (a window cannot choose the command a cluster executes). */
export const RAY_PROJECT_ENV = 'MARS_LAB_RAY_PROJECT';
export const RAY_NODE_ENV = 'MARS_LAB_RAY_NODE';

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

type Link = { link: ApiStudyView['link']; message?: string };

interface Followed {
  record: StudyRecord;
  /** The cluster's client; none for a study on this machine. */
  client?: RayJobsClient;
  stop: () => void;
  /** A study here: stop one run (running: checkpoint and stop; waiting: never start). */
  stopRun?: (runId: string) => boolean;
  detach: AbortController;
  done: Promise<void>;
}

const LOG_CHUNK = 1 << 20;

export function createClusterHost(opts: ClusterHostOptions): ClusterHost {
  const { home, presetsDir } = opts;
  const projectDir = opts.projectDir ?? PROJECT_DIR;
  const env = opts.env ?? process.env;
  const followed = new Map<string, Followed>();
  const links = new Map<string, Link>();
  /** The token variable a study was started or attached with (never stored in its record). */
  const tokenEnvs = new Map<string, string>();
  /** Per study and run: bytes of its kept log already pushed, and the decoder holding a split character. */
  const pushed = new Map<string, { offset: number; decoder: StringDecoder }>();
  let closed = false;

  const emit = (event: ApiEvent) => {
    if (!closed) opts.broadcast(event);
  };

  const viewOf = (record: StudyRecord): ApiStudyView => {
    const link = followed.has(record.id)
      ? { link: 'following' as const }
      : (links.get(record.id) ?? { link: 'idle' as const });
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
              ...(shippedPackage(record) ? { shipped: shippedPackage(record) } : {}),
            }
          : { kind: 'local' },
      runs: record.runs.map((r: StudyRun) => ({ ...r })),
      link: link.link,
      ...(link.message ? { message: link.message } : {}),
    };
  };
  const changed = (record: StudyRecord) => emit({ type: 'studyChanged', study: viewOf(record) });

  const clientFor = (url: string, tokenEnv: string | undefined): RayJobsClient => {
    let token: string | undefined;
    if (tokenEnv) {
      token = env[tokenEnv];
      if (!token) {
        throw new UserError(
          `ray.tokenEnv: ${tokenEnv} is not set in the environment of this app's host; set it there (ray get-auth-token prints the token) or leave the field empty`,
        );
      }
    }
    return new RayJobsClient({ url, ...(token ? { token } : {}), env, timeoutMs: opts.timeoutMs ?? 15_000 });
  };

  /** Pushes what each run's kept log gained since the last push. */
  const pumpLogs = (record: StudyRecord) => {
    for (const run of record.runs) {
      const file = studyLogFile(home, record.id, run.runId);
      const key = `${record.id}/${run.runId}`;
      let size: number;
      try {
        size = fs.statSync(file).size;
      } catch {
        continue; // not followed yet
      }
      let state = pushed.get(key);
      // the follower rewrites the log from its first byte on a re-attach
      if (!state || size < state.offset) pushed.set(key, (state = { offset: 0, decoder: new StringDecoder('utf8') }));
      if (size === state.offset) continue;
      const length = Math.min(size - state.offset, LOG_CHUNK);
      const buf = Buffer.alloc(length);
      const fd = fs.openSync(file, 'r');
      try {
        fs.readSync(fd, buf, 0, length, state.offset);
      } finally {
        fs.closeSync(fd);
      }
      const from = state.offset;
      state.offset += length;
      const text = state.decoder.write(buf);
      emit({ type: 'clusterLog', studyId: record.id, runId: run.runId, from, to: state.offset, text });
    }
  };

  /** Follows a study (submitting what is pending) until every run ends or the cluster is lost. */
  const follow = (record: StudyRecord, client: RayJobsClient, runtimeEnv?: Record<string, unknown>) => {
    const detach = new AbortController();
    links.delete(record.id);
    const running = runStudyOnRay(home, record, client, {
      onRun: () => changed(record),
      signal: detach.signal,
      ...(runtimeEnv ? { runtimeEnv } : {}),
      ...(opts.retryDelayMs !== undefined ? { retryDelayMs: opts.retryDelayMs } : {}),
    });
    const timer = setInterval(() => pumpLogs(record), opts.logPollMs ?? 250);
    const finish = (err?: unknown) => {
      clearInterval(timer);
      if (closed) return;
      pumpLogs(record);
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
  };

  /** Runs a study here through the host's launcher until every run ends; close() holds it (no new run starts). */
  const followHere = (record: StudyRecord, launcher: StudyLauncher) => {
    const detach = new AbortController();
    links.delete(record.id);
    const running = runStudyHere(home, record, { onRun: () => changed(record) }, launcher);
    detach.signal.addEventListener('abort', () => running.hold(), { once: true });
    const finish = (err?: unknown) => {
      if (closed) return;
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
  };

  const readView = (id: string): ApiStudyView => viewOf(followed.get(id)?.record ?? readStudy(home, id));

  const handlers: ClusterHost['handlers'] = {
    async studyOptions({ preset }) {
      return {
        variants: Object.keys(loadPreset(preset, presetsDir).variants ?? {}),
        shipByDefault: shipsByDefault(projectDir, env, RAY_PROJECT_ENV),
      };
    },

    async startStudy(req: ApiParsedRequest<'startStudy'>) {
      if (!req.preset) {
        throw new UserError(
          `preset: a study${req.ray ? ' on a cluster' : ''} starts from a preset; pick one above (a cloned run without one cannot be a study)`,
        );
      }
      const sets = studySets(req.preset, req.config, req.sets, presetsDir, opts.roots);
      if (!req.ray) {
        // this machine: the runs start through the host's launcher and slots, as single runs do
        if (!opts.launcher || !opts.slots) {
          throw new UserError('ray: this host starts no runs itself; give a Ray cluster, or run mars-lab study here');
        }
        const record = planStudy({
          preset: req.preset,
          variants: req.variants?.length ? req.variants : [null],
          seeds: [...new Set(req.seeds)],
          sets,
          where: { kind: 'local', parallel: opts.slots.max },
        });
        followHere(record, hostStudyLauncher(opts.launcher, opts.slots, emit));
        return { study: viewOf(record) };
      }
      const client = clientFor(req.ray.url, req.ray.tokenEnv);
      // unless told: shipped from a packaged app that names no project folder on the cluster (clusterShip.ts)
      const ship = req.ray.ship ?? shipsByDefault(projectDir, env, RAY_PROJECT_ENV);
      if (ship) checkShippable(projectDir);
      const record = planStudy({
        preset: req.preset,
        variants: req.variants?.length ? req.variants : [null],
        seeds: [...new Set(req.seeds)],
        sets,
        where: {
          kind: 'ray',
          url: client.where,
          rayHome: req.ray.rayHome ?? home,
          // shipped: the jobs start in the package's folder, so the entrypoint names no path of this machine
          project: ship ? '.' : env[RAY_PROJECT_ENV] || projectDir,
          node: env[RAY_NODE_ENV] || 'node',
          cpusPerJob: req.ray.cpusPerJob ?? 1,
          ...fetchRule(req.ray),
        },
      });
      await client.version(); // unreachable or not Ray: one line, and nothing recorded or submitted
      if (ship && record.where.kind === 'ray') {
        // packed and uploaded before the study is recorded: a package over the cap is one line, nothing recorded
        const uri = await shipForStudy(client, { root: projectDir, home, emit, cap: opts.shipCap });
        record.where.runtimeEnv = { working_dir: uri };
      }
      if (req.ray.tokenEnv) tokenEnvs.set(record.id, req.ray.tokenEnv);
      follow(record, client);
      return { study: viewOf(record) };
    },

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
      if (ray?.tokenEnv) tokenEnvs.set(record.id, ray.tokenEnv);
      const client = clientFor(ray?.url ?? record.where.url, tokenEnvs.get(record.id));
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
      const file = studyLogFile(home, record.id, runId);
      let size: number;
      try {
        size = fs.statSync(file).size;
      } catch {
        return { text: '', from: 0, size: 0 }; // not followed yet
      }
      const from = Math.max(0, size - maxBytes);
      const buf = Buffer.alloc(size - from);
      const fd = fs.openSync(file, 'r');
      try {
        fs.readSync(fd, buf, 0, buf.length, from);
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

  return {
    handlers,
    async close() {
      closed = true;
      const all = [...followed.values()];
      for (const f of all) f.detach.abort();
      // a study here is held (its running processes go on, in their run folders), not waited for
      await Promise.all(all.filter((f) => f.client).map((f) => f.done));
      followed.clear();
    },
  };
}
