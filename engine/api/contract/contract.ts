/**
 * The contract between the host (Electron main, or the web server of `mars-lab serve`) and the window: every request and
 * its response, and the events the host pushes, as zod schemas (docs/architecture.md "The shape of the house": engine/api/).
 *
 * The host validates every request against these schemas before it acts, whichever transport carried it (IPC or the
 * web-mode socket). The renderer imports only *types* from here, so zod never reaches the page; the preload imports
 * only methods.ts. Keep this file free of Node, DOM and Electron imports.
 *
 * Values that JSON cannot carry are normalised by the host before they leave it: a metric that was NaN or infinite is
 * sent as null (both transports then carry the same thing).
 */
import { z } from 'zod';
import { RUN_STATUSES, runSummarySchema } from '../../runs/summary/runSummary';
import { API_KEYS, API_METHODS, type ApiMethod } from './methods';

export { API_EVENT_CHANNEL, API_KEYS, API_METHODS, apiChannel, isApiMethod, type ApiMethod } from './methods';

// ---- shared pieces ---------------------------------------------------------------------------------------------------

/** A run id is a folder name under runs/ (engine/runs/folder/home.ts runDir): it may never climb out of it. */
export const runIdSchema = z
  .string()
  .min(1)
  .max(200)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, { error: 'a run id: letters, digits, ".", "_" and "-"' })
  .refine((s) => !s.includes('..'), { error: 'a run id may not contain ".."' });

export const runStatusSchema = z.enum(RUN_STATUSES);
export type RunStatus = z.infer<typeof runStatusSchema>;

/** run.json (engine/runs/folder/runFolder.ts RunMeta). */
export const runMetaSchema = z.object({
  id: z.string(),
  createdAt: z.string(),
  algorithm: z.string(),
  preset: z.string().optional(),
  config: z.unknown(),
  engineVersion: z.string(),
  backend: z.custom<object>((v) => typeof v === 'object' && v !== null).optional(),
  seed: z.number(),
  status: runStatusSchema,
  statusAt: z.string(),
  pid: z.number().int().optional(),
  tags: z.array(z.string()),
  notes: z.string(),
  lastCheckpointStep: z.number().int().nonnegative().optional(),
});
export type ApiRunMeta = z.infer<typeof runMetaSchema>;

/** A metric value as sent: null where the run logged NaN or an infinity. */
const metricValue = z.number().nullable();

/** One line of metrics.jsonl as sent: step, time (seconds since the epoch) and the metrics. */
export const metricPointSchema = z.object({ step: z.number(), time: metricValue }).catchall(metricValue);
export type ApiMetricPoint = z.infer<typeof metricPointSchema>;

/** One row of the run list (engine/runs/summary/runIndex.ts RunSummary). */
export { runSummarySchema };
export type ApiRunSummary = z.infer<typeof runSummarySchema>;

export const configIssueSchema = z.object({ path: z.string(), message: z.string() });
export type ApiConfigIssue = z.infer<typeof configIssueSchema>;

/** A config as the form or a file gives it: an object, validated by the run config schema on the host. */
const rawConfigSchema = z.record(z.string(), z.unknown());

/** What to launch: a preset, a config, or both (the config then is the preset's, edited; the preset names the run). */
const launchSchema = z.strictObject({
  preset: z.string().min(1).max(100).optional(),
  config: rawConfigSchema.optional(),
  /** `path=value` overrides, exactly as the CLI's `--set` takes them. */
  sets: z.array(z.string().max(10_000)).max(200).optional(),
});

const checkpointRefSchema = z.strictObject({ runId: runIdSchema, step: z.number().int().nonnegative() });

const evalItemSchema = z.looseObject({
  id: z.string(),
  correct: z.boolean(),
  score: z.number(),
  output: z.string().optional(),
  target: z.string().optional(),
});

export const checkpointEvalSchema = z.object({
  checkpoint: z.string(),
  runId: z.string(),
  step: z.number(),
  identity: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
  metrics: z.record(z.string(), z.number().nullable()),
  items: z.array(evalItemSchema),
  cached: z.boolean(),
});
export type ApiCheckpointEval = z.infer<typeof checkpointEvalSchema>;

const presetInfoSchema = z.object({
  name: z.string(),
  description: z.string(),
  algorithm: z.string(),
  expectedRuntime: z.object({
    cpuSeconds: z.number().nullable(),
    gpuSeconds: z.number().nullable(),
    measuredOn: z.string(),
  }),
  /** The preset's partial config as written; the schema's defaults fill the rest. */
  config: rawConfigSchema,
  /** The one a newcomer should run first (listed first); sized for a GPU only. */
  recommended: z.boolean().optional(),
  gpuOnly: z.boolean().optional(),
});
export type ApiPreset = z.infer<typeof presetInfoSchema>;

const seriesSchema = z.object({
  /** Bucket x (the step or the time of the bucket's last point) and its min, max and last value (decimate.ts). */
  x: z.array(z.number()),
  min: z.array(z.number()),
  max: z.array(z.number()),
  last: z.array(z.number()),
});
export type ApiSeries = z.infer<typeof seriesSchema>;

/** Which trajectories a search keeps (engine/runs/trajectories/trajectoryQuery.ts says what each field means per record kind). */
export const trajectoryFilterSchema = z.strictObject({
  stepMin: z.number().int().min(0).optional(),
  stepMax: z.number().int().min(0).optional(),
  rewardMin: z.number().optional(),
  rewardMax: z.number().optional(),
  /** A MARS question family (direct, paraphrase, bridge…). */
  family: z.string().min(1).max(100).optional(),
  /** A MARTI agent id. */
  agent: z.string().min(1).max(100).optional(),
  outcome: z.enum(['solved', 'unsolved']).optional(),
  malformed: z.boolean().optional(),
  /** Case-insensitive text in the question, answers, turns, outputs, statement or programs. */
  text: z.string().min(1).max(200).optional(),
});
export type ApiTrajectoryFilter = z.infer<typeof trajectoryFilterSchema>;

// ---- studies on a Ray cluster (engine/api/cluster/clusterMethods.ts; engine/cluster/studies/) ---------------------------------------

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
  }),
  runs: z.array(studyRunViewSchema),
  link: z.enum(['following', 'unreachable', 'error', 'idle']),
  message: z.string().optional(),
});
export type ApiStudyView = z.infer<typeof studyViewSchema>;

// ---- methods ---------------------------------------------------------------------------------------------------------

const empty = z.strictObject({});

/** Every method's request and response. Adding a method: add it here and to methods.ts, then implement it in host.ts. */
export const apiSchemas = {
  /** The host's engine version and home folder; proves the bridge and the host are alive. */
  ping: {
    request: empty,
    response: z.object({ engineVersion: z.string(), home: z.string(), transport: z.enum(['electron', 'web']) }),
  },
  listPresets: { request: empty, response: z.object({ presets: z.array(presetInfoSchema) }) },
  /** The run config as JSON Schema (draft 2020-12), from which the launch form is drawn. */
  configSchema: { request: empty, response: z.object({ schema: z.record(z.string(), z.unknown()) }) },
  /** The config a launch would run, with defaults filled in, or every issue with its dotted field path. */
  validateConfig: {
    request: launchSchema,
    response: z.discriminatedUnion('ok', [
      z.object({ ok: z.literal(true), config: rawConfigSchema }),
      z.object({ ok: z.literal(false), issues: z.array(configIssueSchema) }),
    ]),
  },
  /** Starts a run in its own process; answers once its folder exists. An invalid config is refused with its issues. */
  startRun: { request: launchSchema, response: z.object({ runId: z.string() }) },
  /** Asks the run's process to finish its step, write a checkpoint and stop (as Ctrl-C does in a terminal). */
  stopRun: {
    request: z.strictObject({ runId: runIdSchema }),
    response: z.object({ stopping: z.boolean(), message: z.string() }),
  },
  /** Continues a stopped, failed or interrupted run from its last checkpoint, in a new process. */
  resumeRun: { request: z.strictObject({ runId: runIdSchema }), response: z.object({ runId: z.string() }) },
  listRuns: { request: empty, response: z.object({ home: z.string(), runs: z.array(runSummarySchema) }) },
  /** One run: run.json, its summary, checkpoints, the latest events, what its logs hold. Metrics: getMetricSeries. */
  getRun: {
    request: z.strictObject({ runId: runIdSchema, eventsLimit: z.number().int().min(0).max(5000).optional() }),
    response: z.object({
      meta: runMetaSchema,
      summary: runSummarySchema.optional(),
      checkpoints: z.array(z.object({ step: z.number() })),
      /** The last `eventsLimit` (default 200) lines of events.jsonl, oldest first; eventsTotal counts them all. */
      events: z.array(z.record(z.string(), z.unknown())),
      eventsTotal: z.number(),
      metricNames: z.array(z.string()),
      metricPoints: z.number(),
      /** Step of the last metrics line; null before the first. */
      lastStep: z.number().nullable(),
      trajectories: z.number(),
      /** Whether this host launched the process now running it (stop works for terminal runs too, by their pid). */
      hostProcess: z.boolean(),
    }),
  },
  /**
   * Metric series decimated to at most `width` buckets of min/max/last (engine/runs/summary/decimate.ts), over the whole run or
   * the zoomed range [xMin, xMax]; x is the step or the time (seconds since the epoch).
   */
  getMetricSeries: {
    request: z.strictObject({
      runId: runIdSchema,
      names: z.array(z.string().max(200)).max(100).optional(),
      x: z.enum(['step', 'time']).default('step'),
      width: z.number().int().min(1).max(20_000).default(1000),
      xMin: z.number().optional(),
      xMax: z.number().optional(),
    }),
    response: z.object({
      points: z.number(),
      lastStep: z.number().nullable(),
      series: z.record(z.string(), seriesSchema),
    }),
  },
  /**
   * Several runs' series of the same metrics (the Runs view's overlay), each decimated to `width` buckets as
   * getMetricSeries does, with each run's progress: last step, total steps (budget.steps), recent seconds per step.
   * A run that cannot be read answers its `error` instead of failing the call (engine/api/views/runsSeries.ts).
   */
  getRunsMetricSeries: {
    request: z.strictObject({
      runIds: z.array(runIdSchema).min(1).max(50),
      names: z.array(z.string().max(200)).max(100),
      x: z.enum(['step', 'time']).default('step'),
      width: z.number().int().min(1).max(5000).default(600),
    }),
    response: z.object({
      runs: z.array(
        z.object({
          runId: z.string(),
          /** Step of the last complete metrics line (read from the end of the log), null before the first. */
          lastStep: z.number().nullable(),
          totalSteps: z.number().nullable(),
          secondsPerStep: z.number().nullable(),
          /** Time (seconds since the epoch) of the last metrics line. */
          lastTime: z.number().nullable(),
          series: z.record(z.string(), seriesSchema),
          error: z.string().optional(),
        }),
      ),
    }),
  },
  /**
   * Lines of trajectories.jsonl for the inspectors (engine/runs/trajectories/trajectoryIndex.ts, trajectoryQuery.ts); `total` is the
   * count of complete lines so far. By position (0 = the first) from `offset`; or, with `step`, that step's lines
   * directly (the first step at or after it; `offset`..`stepEnd` are its positions); or, with `filter`, the lines
   * that pass it, scanned newest first from `before` (default: the end) within a byte budget: `positions` say where
   * each record is, `next` where to continue (null: every line in range was looked at). `pages` holds the text of
   * the pages MARS episodes found, by `w<world seed>:<page id>`.
   */
  getTrajectories: {
    request: z.strictObject({
      runId: runIdSchema,
      offset: z.number().int().min(0).default(0),
      limit: z.number().int().min(1).max(500).default(20),
      step: z.number().int().min(0).optional(),
      filter: trajectoryFilterSchema.optional(),
      before: z.number().int().min(0).optional(),
    }),
    response: z.object({
      total: z.number(),
      offset: z.number(),
      records: z.array(z.unknown()),
      steps: z.object({ first: z.number().nullable(), last: z.number().nullable(), count: z.number() }).optional(),
      step: z.number().nullable().optional(),
      stepEnd: z.number().optional(),
      positions: z.array(z.number()).optional(),
      next: z.number().nullable().optional(),
      scanned: z.number().optional(),
      pages: z.record(z.string(), z.object({ title: z.string(), text: z.string() })).optional(),
    }),
  },
  /**
   * The records of the step in flight (live.json: MARTI's trees as they grow), or step null and none between steps.
   * They are not final: the step's records in trajectories.jsonl replace them (same step and tree id) when it ends.
   */
  getLiveTrajectories: {
    request: z.strictObject({ runId: runIdSchema }),
    response: z.object({ step: z.number().nullable(), records: z.array(z.unknown()) }),
  },
  /** Replaces a run's tags and/or notes (kept in labels.json, laid over run.json's). */
  setRunLabels: {
    request: z.strictObject({
      runId: runIdSchema,
      tags: z.array(z.string().trim().min(1).max(64)).max(32).optional(),
      notes: z.string().max(10_000).optional(),
    }),
    response: z.object({ meta: runMetaSchema }),
  },
  /** Scores a checkpoint on its run's held-out items, in a separate process; cached under <home>/evals/. */
  evaluateCheckpoint: { request: checkpointRefSchema, response: checkpointEvalSchema },
  /** Both checkpoints on the same held-out items (A's): metric table, flipped items, McNemar, paired bootstrap. */
  compareCheckpoints: {
    request: z.strictObject({ a: checkpointRefSchema, b: checkpointRefSchema }),
    response: z.object({
      identity: z.record(z.string(), z.union([z.string(), z.number(), z.boolean()])),
      a: checkpointEvalSchema,
      b: checkpointEvalSchema,
      metrics: z.array(
        z.object({ name: z.string(), a: z.number().nullable(), b: z.number().nullable(), diff: z.number().nullable() }),
      ),
      flippedToWrong: z.array(z.string()),
      flippedToRight: z.array(z.string()),
      mcnemar: z.object({ n01: z.number(), n10: z.number(), pValue: z.number() }),
      scoreDiff: z.object({ meanDiff: z.number(), low: z.number(), high: z.number() }),
    }),
  },
  /** The steps at which a run logged rollouts (trajectories.jsonl) and their kind: what compareRollouts can pair. */
  rolloutSteps: {
    request: z.strictObject({ runId: runIdSchema }),
    response: z.object({
      kind: z.string().nullable(),
      steps: z.array(z.number()),
      records: z.number(),
      skipped: z.number(),
    }),
  },
  /**
   * Two runs (or two steps of one; a side without a step: every step pooled) compared on the rollouts they logged,
   * paired by prompt, no evaluation (rolloutCompare.ts): what runs imported from verl or MARTI, which have no
   * checkpoints, can be compared on. Per shared prompt each side's mean sample score; McNemar when they are all 0/1,
   * the paired bootstrap always; the prompts listed largest difference first (at most 500).
   */
  compareRollouts: {
    request: z.strictObject({
      a: z.strictObject({ runId: runIdSchema, step: z.number().int().nonnegative().optional() }),
      b: z.strictObject({ runId: runIdSchema, step: z.number().int().nonnegative().optional() }),
    }),
    response: z.object({
      kind: z.string(),
      a: z.object({ runId: z.string(), step: z.number().nullable(), prompts: z.number(), samples: z.number() }),
      b: z.object({ runId: z.string(), step: z.number().nullable(), prompts: z.number(), samples: z.number() }),
      shared: z.number(),
      onlyA: z.number(),
      onlyB: z.number(),
      meanA: z.number().nullable(),
      meanB: z.number().nullable(),
      outcome: z.enum(['binary', 'real']),
      mcnemar: z.object({ n01: z.number(), n10: z.number(), pValue: z.number() }).nullable(),
      scoreDiff: z.object({ meanDiff: z.number(), low: z.number(), high: z.number() }).nullable(),
      prompts: z.array(
        z.object({
          key: z.string(),
          text: z.string(),
          a: z.object({ mean: z.number(), n: z.number() }),
          b: z.object({ mean: z.number(), n: z.number() }),
        }),
      ),
    }),
  },
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
  /**
   * An evaluation with endpoint agents (MARS systems, MARTI agents) as `mars-lab eval` runs it, launched from the app:
   * the launch's config through the run config schema, then every system or agent an endpoint, key variables that are
   * names set in the app's environment, files inside the folders a window may name (endpointEvalMethods.ts).
   */
  validateEndpointEval: {
    request: launchSchema.extend({ fresh: z.boolean().optional() }),
    response: z.discriminatedUnion('ok', [
      z.object({ ok: z.literal(true), config: rawConfigSchema }),
      z.object({ ok: z.literal(false), issues: z.array(configIssueSchema) }),
    ]),
  },
  /**
   * Starts it as a run (its own process; answers once the folder exists): live in Runs, stopped by stopRun (requests in
   * flight cancelled, answered ones kept), resumed by resumeRun; `fresh` asks every request again.
   */
  startEndpointEval: {
    request: launchSchema.extend({ fresh: z.boolean().optional() }),
    response: z.object({ runId: z.string() }),
  },
} as const satisfies Record<ApiMethod, { request: z.ZodType; response: z.ZodType }>;

export type ApiRequest<M extends ApiMethod> = z.input<(typeof apiSchemas)[M]['request']>;
export type ApiParsedRequest<M extends ApiMethod> = z.output<(typeof apiSchemas)[M]['request']>;
export type ApiResponse<M extends ApiMethod> = z.output<(typeof apiSchemas)[M]['response']>;

// ---- events ----------------------------------------------------------------------------------------------------------

/**
 * What the host pushes: 'host-ready', the home watcher's RunEvent union (engine/runs/watch/watcher.ts; host.ts checks at
 * compile time that every RunEvent fits here), and notices about the run processes this host started.
 */
export const apiEventSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('host-ready'), engineVersion: z.string() }),
  z.object({ type: z.literal('runCreated'), runId: z.string(), meta: runMetaSchema }),
  z.object({ type: z.literal('runStatus'), runId: z.string(), status: runStatusSchema, meta: runMetaSchema }),
  z.object({ type: z.literal('runMeta'), runId: z.string(), meta: runMetaSchema }),
  z.object({ type: z.literal('runRemoved'), runId: z.string() }),
  z.object({ type: z.literal('metrics'), runId: z.string(), points: z.array(metricPointSchema) }),
  z.object({ type: z.literal('trajectories'), runId: z.string(), records: z.array(z.unknown()) }),
  /** live.json changed (the whole of it), or was removed when its step's records were written (step null). */
  z.object({
    type: z.literal('liveTrajectories'),
    runId: z.string(),
    step: z.number().nullable(),
    records: z.array(z.unknown()),
  }),
  z.object({ type: z.literal('event'), runId: z.string(), record: z.record(z.string(), z.unknown()) }),
  z.object({ type: z.literal('checkpointAdded'), runId: z.string(), step: z.number(), path: z.string() }),
  z.object({ type: z.literal('checkpointRemoved'), runId: z.string(), step: z.number() }),
  z.object({
    type: z.literal('fileReset'),
    runId: z.string(),
    file: z.enum(['metrics.jsonl', 'trajectories.jsonl', 'events.jsonl']),
  }),
  z.object({ type: z.literal('warning'), runId: z.string().optional(), message: z.string() }),
  /** A process this host started for a run (training, resume) ended; `error` holds the end of its stderr on failure. */
  /** A study's record or link changed (a run submitted, progressed, ended; the cluster became unreachable). */
  z.object({ type: z.literal('studyChanged'), study: studyViewSchema }),
  /**
   * startStudy with ray.ship, before it answers: packing the project (or taking it from the cache), uploading it (or
   * finding it on the cluster), shipped. `message` is one line for the launch form.
   */
  z.object({
    type: z.literal('shipProgress'),
    phase: z.enum(['packing', 'uploading', 'shipped']),
    message: z.string(),
  }),
  /** New text of a cluster job's log, as followed over the Jobs API's WebSocket: bytes `from`..`to` of the kept log. */
  z.object({
    type: z.literal('clusterLog'),
    studyId: z.string(),
    runId: z.string(),
    from: z.number(),
    to: z.number(),
    text: z.string(),
  }),
  z.object({
    type: z.literal('runProcessExit'),
    runId: z.string(),
    code: z.number().nullable(),
    error: z.string().optional(),
  }),
]);
export type ApiEvent = z.infer<typeof apiEventSchema>;

// ---- what window.api is --------------------------------------------------------------------------------------------

type MethodOf<M extends ApiMethod> =
  // Whether an empty request satisfies the method's request type (then the argument is optional): `{}` is that test.
  // eslint-disable-next-line @typescript-eslint/no-empty-object-type
  {} extends ApiRequest<M>
    ? (request?: ApiRequest<M>) => Promise<ApiResponse<M>>
    : (request: ApiRequest<M>) => Promise<ApiResponse<M>>;

/**
 * What the page may call: one method per capability and one subscription, nothing generic (no channel names, no
 * ipcRenderer). A call rejects with an Error whose message says what was wrong (an invalid request names the field).
 */
export type MarsLabApi = { [M in ApiMethod]: MethodOf<M> } & {
  /** Subscribes to host events; returns the function that unsubscribes. */
  onEvent(listener: (event: ApiEvent) => void): () => void;
};

// Compile-time proof that API_KEYS and MarsLabApi name the same members.
type MissingFromKeys = Exclude<keyof MarsLabApi, (typeof API_KEYS)[number]>;
type UnknownInKeys = Exclude<(typeof API_KEYS)[number], keyof MarsLabApi>;
const keysMatchContract: [MissingFromKeys, UnknownInKeys] extends [never, never] ? true : false = true;
void keysMatchContract;
void API_METHODS;

/** The error a rejected call carries across a transport: a message, and for configs the issues by field path. */
export const apiErrorSchema = z.object({ message: z.string(), issues: z.array(configIssueSchema).optional() });
export type ApiErrorPayload = z.infer<typeof apiErrorSchema>;
