/**
 * A run as a command names it (`show`, `resume`, `export`, `eval`'s and `compare`'s checkpoints): its id, a unique id
 * prefix, or its folder's path, resolved against the home's runs/ folder with an error that says what else to try.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../base/userError';
import { runsDir } from '../runs/folder/home';
import { checkJsonNesting } from './ioErrors';

/** A run by id, unique id prefix, or folder path; its run.json is checked for nesting no code here could process. */
export function resolveRun(home: string, spec: string): string {
  const dir = findRun(home, spec);
  checkJsonNesting(path.join(dir, 'run.json'), 'run.json');
  return dir;
}

function findRun(home: string, spec: string): string {
  if (fs.existsSync(path.join(spec, 'run.json'))) return path.resolve(spec);
  const root = runsDir(home);
  const direct = path.join(root, spec);
  if (fs.existsSync(direct)) return direct;
  const matches = fs.existsSync(root) ? fs.readdirSync(root).filter((n) => n.startsWith(spec)) : [];
  if (matches.length === 1) return path.join(root, matches[0]!);
  if (matches.length > 1) {
    throw new UserError(
      `run '${spec}' is ambiguous: ${matches.slice(0, 5).join(', ')}${matches.length > 5 ? ', …' : ''}`,
    );
  }
  throw new UserError(`no run '${spec}' in ${root} (see 'npx mars-lab ls'; pass --home if the runs live elsewhere)`);
}
