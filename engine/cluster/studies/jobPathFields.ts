/**
 * The run-config fields that name a file or folder on the machine a run starts on, by algorithm (issue 33, item 6): a
 * study checks each before its Ray jobs are sent (jobPaths.ts; a real model, jobModels.ts), since a job reads them on
 * its node's disk. One row per field: an algorithm that names a new path (or a new algorithm) adds its rows here,
 * and nothing else changes. Endpoints (URLs) are not paths and have no row.
 */
import type { RunConfig } from '../../runs/config/configSchema';

/**
 * How a job on its node reads the field's value:
 * - 'model': a real model: a name `model fetch` knows (each job fetches it on its node) or a path (jobModels.ts);
 * - 'checkpoint': a folder, a relative one found from the job's working folder, else from its project folder
 *   (engine/training/configuredTraining.ts checkpointPath), so `resources/…` is the project's own;
 * - 'file': a file or folder, a relative one found from the job's working folder only;
 * - 'data': a 'file' that may also be a data set `data fetch` knows (humaneval), which a job does not fetch (jobPaths.ts).
 */
export type PathFieldKind = 'model' | 'checkpoint' | 'file' | 'data';

export interface PathField {
  algorithm: RunConfig['algorithm'];
  /** The dotted field, as `--set` names it; `[]` after a name steps into each element of that array. */
  field: string;
  kind: PathFieldKind;
}

export const PATH_FIELDS: readonly PathField[] = [
  { algorithm: 'seqgrpo', field: 'model.from.path', kind: 'checkpoint' },
  { algorithm: 'mars', field: 'model.from.path', kind: 'checkpoint' },
  // evaluation only: training refuses a corpus first (configuredSources.ts), this row is for a day it does not
  { algorithm: 'mars', field: 'task.corpus.folder', kind: 'file' },
  { algorithm: 'mars', field: 'task.corpus.questions', kind: 'file' },
  { algorithm: 'marti', field: 'model.from.path', kind: 'checkpoint' },
  { algorithm: 'marti', field: 'marti.agents[].from.path', kind: 'checkpoint' },
  { algorithm: 'marti', field: 'task.file', kind: 'file' },
  { algorithm: 'chatgrpo', field: 'model.path', kind: 'model' },
  { algorithm: 'martipy', field: 'model.path', kind: 'model' },
  { algorithm: 'martipy', field: 'team.agents[].model', kind: 'model' },
  { algorithm: 'martipy', field: 'task.evalTasks', kind: 'data' },
];

/** A field's string values in `config`, each with its concrete dotted name (`marti.agents.1.from.path`). */
export function fieldValues(config: unknown, field: string): { field: string; value: string }[] {
  let at: { field: string; value: unknown }[] = [{ field: '', value: config }];
  for (const step of field.split('.')) {
    const each = step.endsWith('[]');
    const key = each ? step.slice(0, -2) : step;
    at = at.flatMap(({ field: name, value }) => {
      if (typeof value !== 'object' || value === null || !Object.hasOwn(value, key)) return [];
      const next = (value as Record<string, unknown>)[key];
      const nextName = name ? `${name}.${key}` : key;
      if (!each) return [{ field: nextName, value: next }];
      return Array.isArray(next) ? next.map((v: unknown, i) => ({ field: `${nextName}.${i}`, value: v })) : [];
    });
  }
  return at.filter((a): a is { field: string; value: string } => typeof a.value === 'string');
}

/** Every path-naming field `config` fills, with its row's kind. */
export function configPaths(config: RunConfig): { field: string; value: string; kind: PathFieldKind }[] {
  return PATH_FIELDS.filter((row) => row.algorithm === config.algorithm).flatMap((row) =>
    fieldValues(config, row.field).map((v) => ({ ...v, kind: row.kind })),
  );
}
