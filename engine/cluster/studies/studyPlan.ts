/**
 * Turns `study --preset P --variants a,b --seeds N --set …` into its runs: every variant × seed, each a
 * `mars-lab train` command line with its own run id. Every run's config is resolved here first, so a bad variant,
 * seed or --set is one UserError before anything starts or is submitted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../base/projectRoot';
import { resolvePresetConfig } from '../../runs/presets/presets';
import type { RunConfig } from '../../runs/config/configSchema';
import { headlineMetricOf, type HeadlineScore } from '../../runs/summary/headlineMetric';
import { UserError } from '../../base/userError';
import { trainingWithEndpointsProblem } from '../../runs/config/configuredSources';
import { checkJobModel, configModel, modelFetchStep } from './jobModels';
import { configPaths } from './jobPathFields';
import { checkJobPaths } from './jobPaths';
import { newStudyId, studyRunId, type StudyRecord, type StudyWhere } from './studyRecord';

/** This project's folder (where engine/bin/mars-lab.mjs is). */
export const PROJECT_DIR = PROJECT_ROOT;

/** `--seeds 3` is seeds 0, 1, 2; `--seeds 4,7` is those two. */
export function parseSeeds(spec: string): number[] {
  const s = spec.trim();
  if (/^\d+$/.test(s)) {
    const n = Number(s);
    if (n < 1 || n > 1000) throw new UserError(`--seeds ${spec}: give a count from 1 to 1000, or a list like 0,3,7`);
    return Array.from({ length: n }, (_, i) => i);
  }
  const parts = s.split(',').map((p) => p.trim());
  if (parts.length < 2 || parts.some((p) => !/^\d+$/.test(p))) {
    throw new UserError(`--seeds ${spec}: give a count (3 means seeds 0, 1, 2) or a list of seeds like 0,3,7`);
  }
  const seeds = parts.map(Number);
  if (new Set(seeds).size !== seeds.length) throw new UserError(`--seeds ${spec}: a seed is listed twice`);
  return seeds;
}

export function parseVariants(spec: string | undefined): (string | null)[] {
  if (spec === undefined) return [null];
  const names = spec.split(',').map((v) => v.trim());
  if (names.some((n) => n === '')) {
    throw new UserError(`--variants ${spec}: an empty name; give names separated by commas, e.g. full,sys1-off`);
  }
  if (new Set(names).size !== names.length) throw new UserError(`--variants ${spec}: a variant is listed twice`);
  return names;
}

/**
 * Whether a Ray study's run folders come back through fetch jobs: as asked ('last' checkpoint or 'all'), or 'last' when
 * the jobs' home is a path this machine does not have (not shared; a path that exists here may be the same mount, so
 * that takes asking). The CLI's --fetch/--fetch-all and the app's ray.fetch both come here.
 */
export function fetchRule(opts: { fetch?: 'last' | 'all'; rayHome?: string }): { fetch?: 'last' | 'all' } {
  if (opts.fetch) return { fetch: opts.fetch };
  return opts.rayHome !== undefined && !fs.existsSync(opts.rayHome) ? { fetch: 'last' } : {};
}

export interface PlanInput {
  preset: string;
  variants: (string | null)[];
  seeds: number[];
  sets: string[];
  where: StudyWhere;
  now?: Date;
}

/** How a refusal names a run before the study has an id: `seed 0`, or `variant full, seed 0`. */
function runLabel(variant: string | null, seed: number): string {
  return variant === null ? `seed ${seed}` : `variant ${variant}, seed ${seed}`;
}

/**
 * Refuses, before anything is submitted, a run whose Ray job would fail on its node: a config train refuses (an
 * endpoint policy, a corpus: configuredSources.ts), a model (jobModels.ts) or another path (a base checkpoint, a task
 * file: jobPaths.ts) the node could not read.
 */
function checkRayRun(config: RunConfig, run: string, where: Extract<StudyWhere, { kind: 'ray' }>): void {
  const training = trainingWithEndpointsProblem(config);
  if (training !== null) throw new UserError(`${training} (run ${run})`);
  for (const m of configPaths(config)) {
    if (m.kind === 'model') checkJobModel(m.value, where.sharedModels === true, m.field);
  }
  checkJobPaths(config, run, { shared: where.sharedModels === true, project: where.project });
}

/**
 * The study's record with every run pending; throws a UserError for any run whose config does not resolve, or (on
 * Ray) whose job could not run on its node (checkRayRun), so nothing is recorded or submitted.
 */
export function planStudy(input: PlanInput): StudyRecord {
  let algorithm = '';
  const models = new Map<string, string>();
  for (const variant of input.variants) {
    for (const seed of input.seeds) {
      const config = resolvePresetConfig(
        input.preset,
        [...input.sets, `seed=${seed}`],
        undefined,
        variant ?? undefined,
      );
      algorithm = config.algorithm;
      if (input.where.kind === 'ray') checkRayRun(config, runLabel(variant, seed), input.where);
      const model = configModel(config);
      if (model === undefined) continue;
      models.set(JSON.stringify([variant, seed]), model);
    }
  }
  const id = newStudyId(input.preset, input.now);
  return {
    version: 1,
    id,
    createdAt: (input.now ?? new Date()).toISOString(),
    preset: input.preset,
    algorithm,
    variants: input.variants,
    seeds: input.seeds,
    sets: input.sets,
    where: input.where,
    runs: input.variants.flatMap((variant) =>
      input.seeds.map((seed) => {
        const model = models.get(JSON.stringify([variant, seed]));
        return {
          runId: studyRunId(id, variant, seed),
          variant,
          seed,
          ...(model !== undefined ? { model } : {}),
          state: 'pending' as const,
        };
      }),
    ),
  };
}

/** The `mars-lab train …` arguments of one run (after the program), writing into `home`. */
export function trainArgs(
  study: StudyRecord,
  run: { runId: string; variant: string | null; seed: number },
  home: string,
): string[] {
  const args = ['train', '--preset', study.preset];
  if (run.variant !== null) args.push('--variant', run.variant);
  for (const s of [...study.sets, `seed=${run.seed}`]) args.push('--set', s);
  args.push('--run-id', run.runId, '--home', home, '--json');
  return args;
}

/** A word for the shell, quoted when it needs to be. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=,@%+-]+$/.test(word) ? word : `'${word.replaceAll("'", `'\\''`)}'`;
}

/**
 * The Ray job's entrypoint: node running this project's CLI at the path it has on the cluster. A job that Ray gives
 * GPUs (where.gpusPerJob) trains on the webgpu backend unless the study's sets name a backend: 'auto' would fall back
 * to wasm on a node without a usable adapter and leave the GPU idle, where webgpu refuses in one line (issue 33). A run
 * whose config names a catalogue model fetches it on its node first (`model fetch NAME && train …`, jobModels.ts).
 */
export function rayEntrypoint(
  study: StudyRecord,
  run: { runId: string; variant: string | null; seed: number; model?: string },
): string {
  if (study.where.kind !== 'ray') throw new Error('rayEntrypoint: not a Ray study');
  const cli = path.posix.join(study.where.project, 'engine/bin/mars-lab.mjs');
  const gpuBackend =
    (study.where.gpusPerJob ?? 0) > 0 && !study.sets.some((s) => s.startsWith('backend='))
      ? ['--set', 'backend=webgpu']
      : [];
  const train = [study.where.node, cli, ...trainArgs(study, run, study.where.rayHome), ...gpuBackend];
  const fetch = modelFetchStep([study.where.node, cli], run.model);
  return (fetch ? [fetch, train] : [train]).map((words) => words.map(shellQuote).join(' ')).join(' && ');
}

/** The headline score from a `train --json` "done" line's metrics (the last step's), when no run folder is readable. */
export function headlineFromMetrics(algorithm: string, metrics: Record<string, unknown>): HeadlineScore | null {
  const h = headlineMetricOf(algorithm);
  if (!h) return null;
  const v = metrics[h.key];
  return { ...h, value: typeof v === 'number' && Number.isFinite(v) ? v : null };
}
