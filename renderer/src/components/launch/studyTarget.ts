/**
 * Where a launch runs, as the launch form's third section holds it, and what follows from it: the seeds its text
 * names, whether it makes a study, the sentence that says how many runs it makes, and what stops it from starting.
 * LaunchView starts the run or study from these, StudyTarget.svelte draws and edits them; plain functions, so both read
 * the same rules.
 */
import type { ApiRequest } from '../../../../engine/api/contract/contract';

/**
 * Where the run goes: this machine (one run; or, with several seeds or a variant, a study whose runs are processes
 * of this app, as many at once as it runs) or a Ray cluster (a study: one Ray job per run of variants × seeds).
 */
export type Where = 'here' | 'ray';

export interface StudyTarget {
  where: Where;
  rayUrl: string;
  tokenEnv: string;
  rayHome: string;
  /** GPUs Ray reserves for each job, as typed ('' or '0': none; a job given GPUs trains on webgpu). */
  gpusText: string;
  /**
   * Ship this app's project with the jobs (runtime_env working_dir, as `mars-lab study --ship`): on by default only
   * in a packaged app without $MARS_LAB_RAY_PROJECT (the host says, studyOptions.shipByDefault), until changed here.
   */
  ship: boolean;
  shipTouched: boolean;
  /**
   * The configs' paths (a model, a base checkpoint, a task file) lie where every node reads them at the same absolute
   * path (a shared filesystem), as `mars-lab study --ray-shared-paths`; off, the host refuses such a path before any
   * job is sent (unless it lies in the project's resources/).
   */
  sharedPaths: boolean;
  seedsText: string;
  /** The chosen preset's variants picked for the study. */
  pickedVariants: string[];
}

/** A fresh form's target: one run here, seed text "1", the local Ray dashboard's address ready for a cluster. */
export function newStudyTarget(): StudyTarget {
  return {
    where: 'here',
    rayUrl: 'http://127.0.0.1:8265',
    tokenEnv: '',
    rayHome: '',
    gpusText: '',
    ship: false,
    shipTouched: false,
    sharedPaths: false,
    seedsText: '1',
    pickedVariants: [],
  };
}

/** "3" is seeds 0, 1, 2; "0,4,7" those three (as `mars-lab study --seeds`); null when neither. */
export function parseSeeds(text: string): number[] | null {
  const t = text.trim();
  if (/^\d+$/.test(t)) {
    const n = Number(t);
    return n >= 1 && n <= 1000 ? Array.from({ length: n }, (_, i) => i) : null;
  }
  const parts = t.split(',').map((p) => p.trim());
  return parts.length > 0 && parts.every((p) => /^\d+$/.test(p)) ? parts.map(Number) : null;
}

/** On this machine, seeds other than "1" or a variant make a study; "1" and no variant: one run, the form's seed. */
export function isStudyHere(target: StudyTarget): boolean {
  return target.where === 'here' && (target.seedsText.trim() !== '1' || target.pickedVariants.length > 0);
}

/** The sentence under the section: how many runs the launch makes, and where. */
export function studySizeText(target: StudyTarget, seeds: number[] | null, studyHere: boolean): string {
  const studyRuns = (seeds?.length ?? 0) * Math.max(1, target.pickedVariants.length);
  return target.where === 'ray'
    ? `${studyRuns} run${studyRuns === 1 ? '' : 's'}, each a Ray job`
    : studyHere
      ? `${studyRuns} run${studyRuns === 1 ? '' : 's'} here, each its own process, as many at once as this app runs (one per core); they show in Runs`
      : 'One run, with the seed in the settings above';
}

/** What keeps a study (or a cluster launch) from starting, in words; null when nothing does, or for one run here. */
export function targetProblem(
  target: StudyTarget,
  presetName: string | undefined,
  seeds: number[] | null,
  studyHere: boolean,
): string | null {
  const { where, rayUrl, tokenEnv } = target;
  return where !== 'ray' && !studyHere
    ? null
    : !presetName
      ? where === 'ray'
        ? 'a study on a cluster starts from a preset: pick one above'
        : 'a study (several seeds or a variant) starts from a preset: pick one above'
      : where === 'ray' && !/^https?:\/\/\S+$/.test(rayUrl.trim())
        ? "the cluster's dashboard address, e.g. http://127.0.0.1:8265"
        : !seeds
          ? 'seeds: a count (3 = seeds 0, 1, 2) or a list like 0,4,7'
          : where === 'ray' && tokenEnv.trim() !== '' && !/^[A-Za-z_][A-Za-z0-9_]*$/.test(tokenEnv.trim())
            ? 'token: the name of an environment variable of the app, e.g. MARS_LAB_RAY_TOKEN'
            : where === 'ray' && gpusPerJob(target) === null
              ? 'GPUs per job: a number from 0 to 64 (0.5 shares one GPU between two jobs)'
              : null;
}

/** The GPUs per job the form's text asks for (0 when empty), or null when it is not a number from 0 to 64. */
export function gpusPerJob(target: StudyTarget): number | null {
  const t = target.gpusText.trim();
  if (t === '') return 0;
  const n = Number(t);
  return Number.isFinite(n) && n >= 0 && n <= 64 ? n : null;
}

/** The startStudy request's `ray` part for a cluster launch (empty for a study here). */
export function rayRequest(target: StudyTarget): Pick<ApiRequest<'startStudy'>, 'ray'> {
  const { where, rayUrl, tokenEnv, rayHome, ship, sharedPaths } = target;
  const gpus = gpusPerJob(target) ?? 0;
  return where === 'ray'
    ? {
        ray: {
          url: rayUrl.trim(),
          ...(tokenEnv.trim() ? { tokenEnv: tokenEnv.trim() } : {}),
          ...(rayHome.trim() ? { rayHome: rayHome.trim() } : {}),
          ...(gpus > 0 ? { gpusPerJob: gpus } : {}),
          ...(sharedPaths ? { sharedPaths: true } : {}),
          ship,
        },
      }
    : {};
}
