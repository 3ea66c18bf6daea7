/**
 * A task file named by its path or by a data set `mars-lab data fetch` knows (humaneval: its cached copy; a run or a
 * command never fetches), for `code …` commands (`--tasks`) and martipy's evaluation (`task.evalTasks`).
 */
import { UserError } from '../../base/userError';
import { CATALOGUE } from '../../fetch/catalogue';
import { cachedArtefactPath } from '../../fetch/fetchArtefact';

/** The file `spec` names: the cached copy of a data set, or `spec` itself; `field` names where the user wrote it. */
export async function taskFilePath(spec: string, field: string): Promise<string> {
  const named = CATALOGUE.find((a) => a.kind === 'data' && a.name === spec);
  if (!named) return spec;
  const cached = await cachedArtefactPath(named);
  if (!cached) throw new UserError(`${field} ${spec}: not fetched yet; run \`mars-lab data fetch ${spec}\` first`);
  return cached;
}
