/**
 * The files and folders a study's run configs name (a base checkpoint, a task file, a corpus: jobPathFields.ts),
 * checked before any Ray job is sent (issue 33, item 6): a job reads them on its node's disk, so a path that exists
 * only on this machine would fail there, far from the user. A path passes when
 *
 * - it travels with the project: relative, inside the project's resources/ (and there on this machine). The project
 *   on the cluster has this project's resources/ — shipped (`--ship` packs all of resources/, shipProject.ts) or a
 *   copy at `--ray-project`, from whose resources/presets the job already reads the study's preset. A checkpoint is
 *   found from the job's project folder (configuredTraining.ts checkpointPath), so it passes either way; a file is
 *   found from the job's working folder only, which is the project's copy when it is shipped (project '.');
 * - or the user says every node reads it at the same absolute path (a shared filesystem): `--ray-shared-paths`, or
 *   its older name `--ray-shared-models`, or the launch form's "Shared paths" box; then it must be absolute.
 *
 * A real model (kind 'model') is jobModels.ts's: a catalogue name is fetched on the node.
 */
import fs from 'node:fs';
import path from 'node:path';
import { PROJECT_ROOT } from '../../base/projectRoot';
import { CATALOGUE } from '../../fetch/catalogue';
import { UserError } from '../../base/userError';
import type { RunConfig } from '../../runs/config/configSchema';
import { configPaths, type PathFieldKind } from './jobPathFields';

/** The CLI flag that asserts the config's paths are readable at the same absolute path on every node. */
export const SHARED_PATHS_FLAG = '--ray-shared-paths';

/** Where the jobs run: whether the paths are asserted shared, and the project's folder on the cluster ('.' shipped). */
export interface JobPathsWhere {
  shared: boolean;
  project: string;
}

/** Whether a relative `value` lies in the project's resources/ (here, under `root`), which the cluster's copy has. */
function inResources(value: string, root: string): boolean {
  if (path.isAbsolute(value)) return false;
  const resources = path.join(root, 'resources');
  const rel = path.relative(resources, path.resolve(root, value));
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) && fs.existsSync(path.join(resources, rel));
}

/** Whether the job finds `value` in its own copy of the project. */
function travelsWithProject(value: string, kind: PathFieldKind, where: JobPathsWhere, root: string): boolean {
  return inResources(value, root) && (kind === 'checkpoint' || where.project === '.');
}

/**
 * The one line that refuses a path field a run's Ray job could not read on its node, or null when it can. `run` names
 * the run (`seed 0`, `variant full, seed 0`).
 */
export function jobPathProblem(
  entry: { field: string; value: string; kind: PathFieldKind },
  run: string,
  where: JobPathsWhere,
  root: string = PROJECT_ROOT,
): string | null {
  const { field, value, kind } = entry;
  if (kind === 'model' || travelsWithProject(value, kind, where, root)) return null;
  const at = `${field}: ${value} (run ${run})`;
  if (kind === 'data' && CATALOGUE.some((a) => a.kind === 'data' && a.name === value)) {
    return `${at} is a data set in this machine's cache, and a Ray job does not fetch data sets: copy the file into this project's resources/ and name it relative (sent with --ship), or give the absolute path every node reads it at with ${SHARED_PATHS_FLAG}`;
  }
  if (!where.shared) {
    const ship = kind === 'checkpoint' ? '' : ', sent with --ship';
    return `${at} is a path on this machine, and its Ray job reads it on the node's disk: put it in this project's resources/ and name it relative (resources/…${ship}), or where every node reads it at the same absolute path (a shared filesystem) and add ${SHARED_PATHS_FLAG} (in the app: the launch form's "Shared paths" box)`;
  }
  if (!path.isAbsolute(value)) {
    return `${at} is relative, and a job starts in its own folder on the node: with ${SHARED_PATHS_FLAG} give the absolute path every node reads it at`;
  }
  return null;
}

/** Throws the UserError of the first path field in `config` that run's Ray job could not read (jobPathProblem). */
export function checkJobPaths(config: RunConfig, run: string, where: JobPathsWhere, root: string = PROJECT_ROOT): void {
  for (const entry of configPaths(config)) {
    const problem = jobPathProblem(entry, run, where, root);
    if (problem !== null) throw new UserError(problem);
  }
}
