/**
 * `mars-lab study --preset P [--variants a,b] --seeds N [--set k=v …] [--ray URL --ray-home PATH]`: a preset's
 * variants × seeds, run here (as many at once as cores allow) or as one Ray job per run (`--ship`: with the project
 * sent as the jobs' runtime_env working_dir, engine/cluster/studies/shipProject.ts; a catalogue model fetched by each
 * job on its node, a model path refused unless --ray-shared-paths, jobModels.ts, as is any other local path of the
 * configs, jobPaths.ts; --ray-shared-models is its older name); prints a table of run,
 * variant, seed, status and held-out score (studyReport.ts). `study status ID [--follow]` re-reads a study
 * (re-attaching to its cluster, submitting what never reached it) and `study ls` lists them (engine/cluster/studies/).
 */
import os from 'node:os';
import { Command, InvalidArgumentError, Option } from 'commander';
import { chooseEntry } from '../bin/builtEntry.mjs';
import type { RayJobsClient } from '../cluster/ray/jobsClient';
import { resolveHome } from '../runs/folder/home';
import { runStudyHere, type RunningStudy } from '../cluster/studies/localStudy';
import { runStudyOnRay } from '../cluster/studies/rayStudy';
import { listStudyIds, readStudy, type StudyRecord } from '../cluster/studies/studyRecord';
import { fetchRule, parseSeeds, parseVariants, planStudy, PROJECT_DIR } from '../cluster/studies/studyPlan';
import { SHARED_MODELS_FLAG } from '../cluster/studies/jobModels';
import { SHARED_PATHS_FLAG } from '../cluster/studies/jobPaths';
import { ensurePackage, shipCacheDir, shipProject } from '../cluster/studies/shipProject';
import { refreshStudy } from '../cluster/studies/studyStatus';
import { UserError } from '../base/userError';
import { addRayConnectionOptions, rayClient, type RayFlags } from './jobsCommand';
import { homeOption, positiveInt, setOption } from './options';
import { finish, reporter, studyTable } from './studyReport';
import { terminalText as tt } from './terminalText';

function nonNegative(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0) throw new InvalidArgumentError('expected a number ≥ 0');
  return n;
}

function parseRuntimeEnv(text: string | undefined): Record<string, unknown> | undefined {
  if (text === undefined) return undefined;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    throw new UserError(`--ray-runtime-env: not JSON; give an object, e.g. '{"env_vars":{"OMP_NUM_THREADS":"1"}}'`);
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) {
    throw new UserError('--ray-runtime-env: give a JSON object, e.g. \'{"env_vars":{"OMP_NUM_THREADS":"1"}}\'');
  }
  return v as Record<string, unknown>;
}

/** Waits for the study to end; Ctrl-C stops its runs (each checkpoints first), a second one stops waiting. */
async function untilDone(running: RunningStudy, where: string): Promise<StudyRecord> {
  let presses = 0;
  const onSig = () => {
    presses++;
    if (presses === 1) {
      process.stderr.write(
        `\nCtrl-C: stopping the study's runs ${where} (each checkpoints first); Ctrl-C again to stop waiting\n`,
      );
    } else process.stderr.write('\nsecond Ctrl-C: not waiting any longer\n');
    running.stop();
  };
  process.on('SIGINT', onSig);
  process.on('SIGTERM', onSig);
  try {
    return await running.done;
  } finally {
    process.off('SIGINT', onSig);
    process.off('SIGTERM', onSig);
  }
}

interface StudyRunOptions extends RayFlags {
  preset: string;
  variants?: string;
  seeds: string;
  set: string[];
  home?: string;
  parallel?: number;
  rayHome?: string;
  rayProject?: string;
  rayNode: string;
  ship?: boolean;
  shipNative?: boolean;
  fetch?: boolean;
  fetchAll?: boolean;
  rayCpus: number;
  rayGpus: number;
  raySharedModels?: boolean;
  raySharedPaths?: boolean;
  raySetup?: string;
  rayRuntimeEnv?: string;
  json?: boolean;
}

/** What the study is made of: the home, the preset's variants and the seeds, as parsed from the flags. */
interface StudyParts {
  home: string;
  variants: (string | null)[];
  seeds: number[];
}

export function registerStudyCommand(program: Command): void {
  const study = program
    .command('study')
    .description("run a preset's variants × seeds here or on a Ray cluster, and see how each run ended");
  registerStudyRunCommand(study);
  registerStudyStatusCommand(study);
  registerStudyLsCommand(study);
}

function registerStudyRunCommand(study: Command): void {
  addRayConnectionOptions(
    study
      .command('run', { isDefault: true })
      .description('start a study (the default subcommand: `mars-lab study --preset …`)')
      .requiredOption('--preset <name>', 'a preset (see `mars-lab presets`)')
      .option('--variants <a,b>', "the preset's variants to run (default: the preset as it is)")
      .requiredOption('--seeds <n|list>', 'seeds: a count (3 = seeds 0, 1, 2) or a list (0,4,7)')
      .addOption(setOption('budget.steps=50'))
      .addOption(homeOption())
      .option('--parallel <n>', 'runs at once here (default: the cores)', positiveInt)
      .option(
        '--ray <url>',
        'run each run as a Ray job on this cluster (its dashboard address, e.g. http://127.0.0.1:8265)',
      )
      .option(
        '--ray-home <path>',
        "the home the jobs write into, as the cluster sees it (a shared path, e.g. NFS); default: this home's path",
      )
      .option(
        '--ray-project <path>',
        "the project's folder on the cluster (a job image with it there, or '.' with a runtime_env working_dir); default: this one's path",
      )
      .option('--ray-node <path>', 'node on the cluster', 'node')
      .option(
        '--ship',
        'send the built engine, its packages and resources/ with the jobs (runtime_env working_dir): the cluster needs only Node.js 20, no copy of the project',
      )
      .option(
        '--ship-native',
        "with --ship, the native addon as built here too (only for a cluster of this machine's kind)",
      )
      .option(
        '--fetch',
        "fetch each finished run's folder back into this home (the ray home is not shared; on by itself when --ray-home does not exist here)",
      )
      .option('--fetch-all', 'as --fetch, with every checkpoint (default: only the last)')
      .addOption(
        new Option('--ray-cpus <n>', 'CPUs Ray reserves for each job (entrypoint_num_cpus)')
          .argParser(nonNegative)
          .default(1),
      )
      .addOption(
        new Option(
          '--ray-gpus <n>',
          'GPUs Ray reserves for each job (entrypoint_num_gpus; 0.5 shares one); such jobs train on webgpu unless --set backend=… says otherwise',
        )
          .argParser(nonNegative)
          .default(0),
      )
      .option(
        SHARED_PATHS_FLAG,
        "the configs' paths (model.path, model.from.path, task.file, …) are read at the same absolute path on every node (a shared filesystem); without it such a path is refused unless it lies in the project's resources/, and only a catalogue model name goes, which each job fetches on its node",
      )
      .option(SHARED_MODELS_FLAG, `the older name of ${SHARED_PATHS_FLAG}`)
      .option(
        '--ray-setup <command>',
        'a shell command each job runs before train (e.g. an install step with a runtime_env working_dir)',
      )
      .option('--ray-runtime-env <json>', 'the jobs\' runtime_env, e.g. \'{"working_dir":"https://…/mars-lab.zip"}\'')
      .option('--json', 'one JSON line per run change, then the study record, on stdout'),
  ).action(studyRunAction);
}

async function studyRunAction(opts: StudyRunOptions): Promise<void> {
  const parts: StudyParts = {
    home: resolveHome({ home: opts.home }),
    variants: parseVariants(opts.variants),
    seeds: parseSeeds(opts.seeds),
  };
  const runtimeEnv = checkStudyFlags(opts);
  if (!opts.ray) return studyHere(opts, parts);
  return studyOnRay(opts, parts, runtimeEnv);
}

/** Refuses flags that do not go together (before anything is planned); returns the parsed --ray-runtime-env. */
function checkStudyFlags(opts: StudyRunOptions): Record<string, unknown> | undefined {
  if (!opts.ray && (opts.rayHome || opts.rayProject || opts.raySetup || opts.rayRuntimeEnv)) {
    throw new UserError('--ray-home, --ray-project, --ray-setup and --ray-runtime-env need --ray URL');
  }
  if (!opts.ray && opts.raySharedModels) {
    throw new UserError(`${SHARED_MODELS_FLAG} says where a Ray job's node reads the model: it needs --ray URL`);
  }
  if (!opts.ray && opts.raySharedPaths) {
    throw new UserError(
      `${SHARED_PATHS_FLAG} says where a Ray job's node reads the config's paths: it needs --ray URL`,
    );
  }
  if (!opts.ray && (opts.fetch || opts.fetchAll)) {
    throw new UserError('--fetch and --fetch-all bring runs back from a Ray cluster: they need --ray URL');
  }
  if (!opts.ray && (opts.ship || opts.shipNative)) {
    throw new UserError('--ship sends the project to a Ray cluster: it needs --ray URL');
  }
  if (opts.shipNative && !opts.ship) throw new UserError('--ship-native adds to --ship: give both');
  if (opts.ship && opts.rayProject !== undefined) {
    throw new UserError(
      '--ship and --ray-project: choose one (--ship runs the jobs from the copy it sends; --ray-project from a copy the cluster has)',
    );
  }
  const runtimeEnv = parseRuntimeEnv(opts.rayRuntimeEnv);
  if (opts.ship && runtimeEnv?.working_dir !== undefined) {
    throw new UserError(
      "--ship sets the runtime_env's working_dir itself: drop working_dir from --ray-runtime-env, or drop --ship",
    );
  }
  if (opts.ship) {
    // the jobs run the build: one older than the sources would run code that is not this checkout's
    const entry = chooseEntry(PROJECT_DIR, { ...process.env, MARS_LAB_DEV: undefined });
    if (entry.kind === 'sources') {
      throw new UserError(
        `--ship sends the built engine, and it is not up to date (${entry.reason}): run npm run build`,
      );
    }
  }
  return runtimeEnv;
}

/** The study's runs on this machine, `--parallel` at once. */
async function studyHere(opts: StudyRunOptions, { home, variants, seeds }: StudyParts): Promise<void> {
  const record = planStudy({
    preset: opts.preset,
    variants,
    seeds,
    sets: opts.set,
    where: { kind: 'local', parallel: opts.parallel ?? Math.max(1, os.availableParallelism()) },
  });
  if (!opts.json) {
    process.stderr.write(
      `study ${record.id}: ${record.runs.length} runs here, ${record.where.kind === 'local' ? record.where.parallel : 1} at once\n`,
    );
  }
  const done = await untilDone(runStudyHere(home, record, { onRun: reporter(opts.json) }), 'here');
  return finish(done, opts.json, '');
}

/** The study's runs as Ray jobs: planned, the cluster asked, the project shipped if asked, then followed to the end. */
async function studyOnRay(
  opts: StudyRunOptions,
  { home, variants, seeds }: StudyParts,
  runtimeEnv: Record<string, unknown> | undefined,
): Promise<void> {
  const client = rayClient(opts);
  const record = planStudy({
    preset: opts.preset,
    variants,
    seeds,
    sets: opts.set,
    where: {
      kind: 'ray',
      url: client.where,
      rayHome: opts.rayHome ?? home,
      project: opts.ship ? '.' : (opts.rayProject ?? PROJECT_DIR),
      node: opts.rayNode,
      cpusPerJob: opts.rayCpus,
      ...(opts.rayGpus > 0 ? { gpusPerJob: opts.rayGpus } : {}),
      ...(opts.raySharedPaths || opts.raySharedModels ? { sharedModels: true as const } : {}),
      ...fetchRule({ fetch: opts.fetchAll ? 'all' : opts.fetch ? 'last' : undefined, rayHome: opts.rayHome }),
    },
  });
  const v = await client.version(); // unreachable or not Ray: one line, and nothing recorded or submitted
  let jobEnv = runtimeEnv;
  if (opts.ship) jobEnv = { ...runtimeEnv, working_dir: await shipForJobs(client, home, opts) };
  if (record.where.kind === 'ray') {
    if (jobEnv) record.where.runtimeEnv = jobEnv;
    if (opts.raySetup) record.where.setup = opts.raySetup;
  }
  if (!opts.json) {
    process.stderr.write(
      `study ${record.id}: ${record.runs.length} runs as jobs on Ray ${v.ray_version} at ${client.where}\n`,
    );
  }
  const done = await untilDone(
    runStudyOnRay(home, record, client, { onRun: reporter(opts.json) }),
    `on ${client.where}`,
  );
  finish(done, opts.json, ` --ray ${client.where}`);
}

/** `--ship`: packs and uploads the project (unless the cluster has it), says so, and returns its package URI. */
async function shipForJobs(client: RayJobsClient, home: string, opts: StudyRunOptions): Promise<string> {
  const shipped = await shipProject(client, {
    root: PROJECT_DIR,
    cacheDir: shipCacheDir(home),
    native: opts.shipNative,
  });
  if (opts.json) process.stdout.write(`${JSON.stringify({ type: 'ship', ...shipped })}\n`);
  else {
    const mb = (shipped.bytes / 2 ** 20).toFixed(1);
    const s = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
    process.stderr.write(
      `shipping the project as ${shipped.uri} (${mb} MiB, ${shipped.files} files; ${shipped.cached ? 'packed before' : `packed in ${s(shipped.packMs)}`}, ${shipped.uploaded ? `uploaded in ${s(shipped.uploadMs)}` : 'on the cluster already'})\n`,
    );
  }
  return shipped.uri;
}

function registerStudyStatusCommand(study: Command): void {
  addRayConnectionOptions(
    study
      .command('status')
      .description(
        "a study's runs as they stand (asking its Ray cluster, if it ran there); --follow re-attaches until all end",
      )
      .argument('<study>', 'study id or unique prefix (see `mars-lab study ls`)')
      .addOption(homeOption())
      .option('--ray <url>', "the cluster's dashboard address (default: the one the study was submitted to)")
      .option('--follow', 'submit what never reached the cluster, follow the rest until they end (Ctrl-C stops them)')
      .option('--json', 'print the study record as JSON'),
  ).action(studyStatusAction);
}

async function studyStatusAction(
  spec: string,
  opts: RayFlags & { home?: string; follow?: boolean; json?: boolean },
): Promise<void> {
  const home = resolveHome({ home: opts.home });
  const record = readStudy(home, spec);
  if (record.where.kind === 'local') {
    if (opts.follow) {
      throw new UserError(
        `study ${record.id} ran here: --follow is for studies on a Ray cluster (see its runs with mars-lab ls)`,
      );
    }
    await refreshStudy(home, record);
    if (opts.json) return console.log(JSON.stringify(record, null, 2));
    return console.log(studyTable(record));
  }
  const client = rayClient({ ...opts, ray: opts.ray ?? record.where.url });
  if (client.where !== record.where.url) record.where.url = client.where; // the cluster's address now, for the next re-attach
  if (opts.follow) {
    await client.version();
    // a shipped study's runs not yet submitted need its package on the cluster (deleted there once unused)
    const shipped = record.where.runtimeEnv?.working_dir;
    if (typeof shipped === 'string' && shipped.startsWith('gcs://') && record.runs.some((r) => r.state === 'pending')) {
      await ensurePackage(client, shipped, shipCacheDir(home));
    }
    const done = await untilDone(
      runStudyOnRay(home, record, client, { onRun: reporter(opts.json) }),
      `on ${client.where}`,
    );
    return finish(done, opts.json, opts.ray ? ` --ray ${client.where}` : '');
  }
  try {
    await refreshStudy(home, record, client);
  } catch (err) {
    // unreachable: show what the record last knew, then say so
    console.log(opts.json ? JSON.stringify(record, null, 2) : studyTable(record));
    throw err;
  }
  console.log(opts.json ? JSON.stringify(record, null, 2) : studyTable(record));
}

function registerStudyLsCommand(study: Command): void {
  study
    .command('ls')
    .description('the studies in this home, with where they ran and how many runs finished')
    .addOption(homeOption())
    .action(studyLsAction);
}

async function studyLsAction(opts: { home?: string }): Promise<void> {
  const home = resolveHome({ home: opts.home });
  const ids = listStudyIds(home);
  if (ids.length === 0) {
    return console.log(`no studies in ${tt(home)} (start one with: mars-lab study --preset seqgrpo-copy --seeds 3)`);
  }
  for (const id of ids) {
    try {
      const s = readStudy(home, id);
      const fin = s.runs.filter((r) => r.state === 'finished').length;
      console.log(
        `${tt(s.id)}  ${tt(s.preset)}  ${s.where.kind === 'local' ? 'here' : tt(s.where.url)}  ${fin}/${s.runs.length} finished`,
      );
    } catch (err) {
      console.log(`${tt(id)}  (unreadable: ${tt((err as Error).message)})`);
    }
  }
}
