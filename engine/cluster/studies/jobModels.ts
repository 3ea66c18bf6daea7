/**
 * How a real model reaches the node a study's Ray job runs on (issue 33, item 6). A model in this machine's cache is
 * not in the shipped project (shipProject.ts: 100 MiB at most, and the cache lies outside the checkout), so:
 *
 * - a config that names a model `model fetch` knows (the catalogue, engine/fetch/catalogue.ts, e.g.
 *   `smollm2-135m-instruct`) has each job fetch it on its node first: the entrypoint is `node … model fetch NAME &&
 *   node … train …`. The fetch is checked against the catalogue's sha256 and cached on the node
 *   (`${MARS_LAB_MODELS:-~/.cache/mars-lab/models}` of the user Ray runs jobs as), so only a node's first job
 *   downloads; a node needs python3 with pip and the package index. A cache every node shares (MARS_LAB_MODELS in the
 *   runtime_env's env_vars, pointing at a shared folder) is found there and nothing is downloaded.
 * - a config that names a model by path (an HF folder or a .gguf file) is refused before any job is sent, since a
 *   node reads that path on its own disk, unless the user asserts that every node reads it at the same absolute path
 *   (a shared filesystem: `study --ray-shared-paths`, or its older name `--ray-shared-models`); then the path goes to
 *   the jobs as it is.
 *
 * Which field names a real model is a row of kind 'model' in jobPathFields.ts (chatgrpo's `model.path` today); the
 * config's other paths (a base checkpoint, a task file) are checked by jobPaths.ts, under the same flag, whose general
 * name is `--ray-shared-paths`.
 */
import path from 'node:path';
import { UserError } from '../../base/userError';
import { CATALOGUE } from '../../fetch/catalogue';
import type { RunConfig } from '../../runs/config/configSchema';
import { configPaths } from './jobPathFields';
import { SHARED_PATHS_FLAG } from './jobPaths';

/** The CLI flag that asserts model paths are readable on every node: the older name of --ray-shared-paths (jobPaths.ts). */
export const SHARED_MODELS_FLAG = '--ray-shared-models';

/** The real model a run's config names (a field of kind 'model': a catalogue name or a path), or undefined for none. */
export function configModel(config: RunConfig): string | undefined {
  return configPaths(config).find((p) => p.kind === 'model')?.value;
}

/** Whether `model` is a name `model fetch` knows (then each job fetches it on its node). */
export function isCatalogueModel(model: string): boolean {
  return CATALOGUE.some((a) => a.kind === 'model' && a.name === model);
}

/**
 * Refuses, in one line naming the field and the ways out, a model a Ray job could not read on its node: a path on
 * this machine (unless `shared`), or a relative path (a job starts in its own working folder on the node).
 */
export function checkJobModel(model: string, shared: boolean, field = 'model.path'): void {
  if (isCatalogueModel(model)) return;
  const names = CATALOGUE.filter((a) => a.kind === 'model').map((a) => a.name);
  if (!shared) {
    throw new UserError(
      `${field}: ${model} is a path on this machine and a Ray job reads it on its node's disk: name a catalogue model instead (${names.join(', ')}: each job fetches it on its node), or put the model where every node reads it at the same absolute path (a shared filesystem) and add ${SHARED_PATHS_FLAG} (or ${SHARED_MODELS_FLAG})`,
    );
  }
  if (!path.isAbsolute(model)) {
    throw new UserError(
      `${field}: ${model} is relative, and a job starts in its own folder on the node: with ${SHARED_PATHS_FLAG} give the absolute path every node reads the model at`,
    );
  }
}

/** The shell step a job runs before train to have its model on the node (`cli` quoted), or undefined for none. */
export function modelFetchStep(cli: readonly string[], model: string | undefined): string[] | undefined {
  return model !== undefined && isCatalogueModel(model) ? [...cli, 'model', 'fetch', model] : undefined;
}
