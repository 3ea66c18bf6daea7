/**
 * The contract's studies (contract.ts composes it; engine/api/cluster/clusterMethods.ts implements it,
 * engine/cluster/studies/ runs them): where a study runs, a study and its runs as a window sees them, and the methods
 * that start, list, attach, stop and read the logs of studies, on a Ray cluster or here.
 */
import { z } from 'zod';
import { empty, launchSchema, runIdSchema, type MethodSchemas } from './common';

const idText = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { error: 'letters, digits, ".", "_" and "-"' });

/**
 * Where a study runs: a Ray cluster's dashboard, reached from the host (never from the page). What the jobs execute
 * (the project's folder and node on the cluster) is the host's to say, not a window's: $MARS_LAB_RAY_PROJECT and
 * $MARS_LAB_RAY_NODE where `mars-lab serve` or the app starts (default: this project's folder, and `node`).
 */
const rayTargetSchema = z.strictObject({
  /** The dashboard's address, e.g. http://127.0.0.1:8265 (an SSH tunnel's local end for a remote head). */
  url: z.string().trim().min(1).max(2000),
  /** The NAME of an environment variable of the host that holds the bearer token (Ray token mode); never the token. */
  tokenEnv: z
    .string()
    .regex(/^[A-Za-z_][A-Za-z0-9_]{0,99}$/, { error: 'an environment variable name, e.g. MARS_LAB_RAY_TOKEN' })
    .optional(),
  /** The home the jobs write their runs into, as the cluster sees it (a shared path, e.g. NFS); default: this home. */
  rayHome: z.string().trim().min(1).max(4096).optional(),
  /** CPUs Ray reserves for each job (entrypoint_num_cpus); default 1. */
  cpusPerJob: z.number().min(0).max(4096).optional(),
  /** GPUs Ray reserves for each job (entrypoint_num_gpus; fractions share a GPU); default 0. Jobs given GPUs train on
   * the webgpu backend unless the config names one. */
  gpusPerJob: z.number().min(0).max(64).optional(),
  /**
   * Send the project with the jobs (the built engine, its packages, resources/ as the runtime_env working_dir, as
   * `study --ship`), so the cluster needs only Node.js. Default: on in a packaged app without $MARS_LAB_RAY_PROJECT.
   */
  ship: z.boolean().optional(),
  /**
   * Bring each finished run's folder back into this home through a follow-up job (as `study --fetch`/`--fetch-all`):
   * 'last' checkpoint or 'all'. Default: 'last' when rayHome is a path this machine does not have (not shared).
   */
  fetch: z.enum(['last', 'all']).optional(),
  /**
   * The configs' paths (a model, a base checkpoint, a task file) are read at the same absolute path on every node (a
   * shared filesystem), as `study --ray-shared-paths`; without it such a path is refused before anything is submitted
   * (engine/cluster/studies/jobPaths.ts). Default: not.
   */
  sharedPaths: z.boolean().optional(),
});

export const STUDY_RUN_STATES = [
  'pending',
  'submitted',
  'running',
  'finished',
  'failed',
  'stopped',
  'unknown',
] as const;

/** One run of a study as the window sees it (engine/cluster/studies/studyRecord.ts StudyRun). */
const studyRunViewSchema = z.object({
  runId: z.string(),
  variant: z.string().nullable(),
  seed: z.number(),
  state: z.enum(STUDY_RUN_STATES),
  /** The Ray job's status as last seen (PENDING, RUNNING, SUCCEEDED, FAILED, STOPPED). */
  jobStatus: z.string().optional(),
  message: z.string().optional(),
  step: z.number().optional(),
  totalSteps: z.number().optional(),
  headline: z.object({ key: z.string(), label: z.string(), value: z.number().nullable() }).nullable().optional(),
  /** The real model the run's config names (a catalogue name or a path; engine/cluster/studies/jobModels.ts). */
  model: z.string().optional(),
});

/**
 * A study (its record in <home>/studies/<id>.json) and this host's link to its cluster: 'following' (its jobs' logs
 * are followed now), 'unreachable' (the last try to reach the cluster failed: `message` says why; nothing recorded is
 * lost and attachStudy retries), 'error' (following ended on another fault, e.g. a refused token: `message`), or
 * 'idle' (nothing followed: every run ended, or not attached yet).
 */
export const studyViewSchema = z.object({
  id: z.string(),
  createdAt: z.string(),
  preset: z.string(),
  where: z.object({
    kind: z.enum(['local', 'ray']),
    url: z.string().optional(),
    rayHome: z.string().optional(),
    /** The shipped project's package (gcs://_ray_pkg_<sha1>.zip), when the study sent it with its jobs. */
    shipped: z.string().optional(),
    /** GPUs each job asked Ray for, when any. */
    gpusPerJob: z.number().optional(),
  }),
  runs: z.array(studyRunViewSchema),
  link: z.enum(['following', 'unreachable', 'error', 'idle']),
  message: z.string().optional(),
});
export type ApiStudyView = z.infer<typeof studyViewSchema>;

/** The methods of studies. */
export const studySchemas = {
  /** A preset's variants (the names a study may run). */
  studyOptions: {
    request: z.strictObject({ preset: z.string().min(1).max(100) }),
    /** shipByDefault: whether a study on a cluster ships the project unless told (a packaged app, no $MARS_LAB_RAY_PROJECT). */
    response: z.object({ variants: z.array(z.string()), shipByDefault: z.boolean().optional() }),
  },
  /**
   * Starts a study (the preset, its config as edited on the form, variants × seeds) through the same engine/studies code
   * as `mars-lab study`: with `ray`, one Ray job per run (as `--ray`), answering once the cluster has answered and the
   * study is recorded; without it, here, each run a process of the host's launcher within its worker limit (as a single
   * run). Each change is a studyChanged event. An unreachable cluster or a bad variant is refused in one line, with
   * nothing recorded.
   */
  startStudy: {
    request: launchSchema.extend({
      variants: z.array(idText.max(100)).max(50).optional(),
      seeds: z
        .array(
          z
            .number()
            .int()
            .min(0)
            .max(2 ** 31 - 1),
        )
        .min(1)
        .max(1000),
      ray: rayTargetSchema.optional(),
    }),
    response: z.object({ study: studyViewSchema }),
  },
  /** The home's studies, newest first, from their records (no cluster is asked). */
  listStudies: { request: empty, response: z.object({ studies: z.array(studyViewSchema) }) },
  /**
   * Re-attaches to a study's cluster from its record: what was never submitted is submitted, the rest followed until it
   * ends. An unreachable cluster is not an error: the answer's link says 'unreachable' and why. A study here: its runs'
   * states read from their folders, and with `startWaiting` its runs that never started (its host closed first) start.
   */
  attachStudy: {
    request: z.strictObject({
      studyId: idText,
      ray: rayTargetSchema.pick({ url: true, tokenEnv: true }).partial().optional(),
      startWaiting: z.boolean().optional(),
    }),
    response: z.object({ study: studyViewSchema }),
  },
  /**
   * Stops one run of a study (it checkpoints first), or every run still going: on a Ray cluster through the Jobs API;
   * here, for a study this host runs (a run still waiting for its turn never starts).
   */
  stopClusterJob: {
    request: z.strictObject({ studyId: idText, runId: runIdSchema.optional() }),
    response: z.object({ stopping: z.boolean(), message: z.string() }),
  },
  /** The end of a run's job log as kept in <home>/studies/<id>/<runId>.log; `from` is the byte offset of `text`. */
  getClusterLog: {
    request: z.strictObject({
      studyId: idText,
      runId: runIdSchema,
      maxBytes: z
        .number()
        .int()
        .min(1)
        .max(4 << 20)
        .default(256 << 10),
    }),
    response: z.object({ text: z.string(), from: z.number(), size: z.number() }),
  },
} as const satisfies MethodSchemas;
