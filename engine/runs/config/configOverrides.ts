/**
 * `--set path=value`: edits a raw config before it is validated, so an override is checked by exactly the same schema
 * and gives exactly the same messages as the field written in a file or a preset.
 *
 * The value is JSON when it parses as JSON (`rl.lr=3e-4`, `tags=["a","b"]`, `model.from={"kind":"random"}`) and a
 * string otherwise (`task.kind=reverse`), so strings need no shell-escaped quotes.
 */
import { UserError } from '../../base/userError';
import { boundedJson, clip, MAX_CONFIG_DEPTH } from '../../base/boundedText';

export class InvalidSetError extends UserError {}

/** Keys that would reach Object.prototype instead of the config. */
const FORBIDDEN_KEYS = new Set(['__proto__', 'prototype', 'constructor']);

export interface ParsedAssignment {
  /** The path's segments: `rl.schedule.kind` → ['rl', 'schedule', 'kind']. */
  path: string[];
  value: unknown;
}

const EXAMPLE = 'e.g. --set rl.lr=3e-4 or --set task.kind=reverse';

export function parseAssignment(assignment: string): ParsedAssignment {
  const eq = assignment.indexOf('=');
  if (eq < 0) throw new InvalidSetError(`--set ${clip(assignment)}: expected path=value, ${EXAMPLE}`);
  const pathText = assignment.slice(0, eq).trim();
  if (pathText === '') {
    throw new InvalidSetError(`--set ${clip(assignment)}: the field path before '=' is empty, ${EXAMPLE}`);
  }
  const path = pathText.split('.').map((s) => s.trim());
  if (path.some((s) => s === '')) {
    throw new InvalidSetError(
      `--set ${clip(assignment)}: the path '${clip(pathText)}' has an empty segment; separate fields with single dots, ${EXAMPLE}`,
    );
  }
  if (path.length > MAX_CONFIG_DEPTH) {
    throw new InvalidSetError(
      `--set ${clip(assignment)}: the path has ${path.length} fields; a config is at most ${MAX_CONFIG_DEPTH} deep`,
    );
  }
  const bad = path.find((s) => FORBIDDEN_KEYS.has(s));
  if (bad) throw new InvalidSetError(`--set ${clip(assignment)}: '${clip(bad, 40)}' is not a config field`);
  const raw = assignment.slice(eq + 1);
  let value: unknown;
  try {
    value = JSON.parse(raw);
  } catch {
    value = raw;
  }
  return { path, value };
}

function isContainer(v: unknown): v is Record<string, unknown> | unknown[] {
  return typeof v === 'object' && v !== null;
}

/**
 * The key of `seg` in `container`. A list index may be at most the list's length (that one appends): a larger one
 * would make a sparse list of that many slots (`tags.4294967294=x`: minutes of work and gigabytes, then refused).
 */
function childKey(
  container: Record<string, unknown> | unknown[],
  seg: string,
  assignment: string,
  at: string,
): string | number {
  if (!Array.isArray(container)) return seg;
  if (!/^\d+$/.test(seg)) {
    throw new InvalidSetError(
      `--set ${clip(assignment)}: ${at} is a list, so '${clip(seg, 40)}' must be an index (0, 1, …)`,
    );
  }
  const index = Number(seg);
  if (index > container.length) {
    throw new InvalidSetError(
      `--set ${clip(assignment)}: ${at} is a list of ${container.length} item${container.length === 1 ? '' : 's'}, so the index must be ` +
        `from 0 to ${container.length} (${container.length} adds one at the end), not ${clip(seg, 40)}`,
    );
  }
  return index;
}

/**
 * A copy of `config` with the field at the assignment's path replaced; missing intermediate objects are created.
 * The input is not modified. The result is not validated: pass it to parseRunConfig.
 */
export function applySet(config: object, assignment: string): object {
  if (!isContainer(config) || Array.isArray(config)) {
    throw new InvalidSetError(
      `--set ${clip(assignment)}: the config is not a JSON object, so it has no field '${clip(parseAssignment(assignment).path[0]!, 40)}'`,
    );
  }
  const root = structuredClone<Record<string, unknown>>(config);
  setInPlace(root, assignment);
  return root;
}

/** Applies one assignment to `root` itself (applySets clones once, then edits the copy). */
function setInPlace(root: Record<string, unknown>, assignment: string): void {
  const { path, value } = parseAssignment(assignment);
  let node: Record<string, unknown> | unknown[] = root;
  for (let i = 0; i < path.length - 1; i++) {
    const at = path.slice(0, i + 1).join('.');
    const key = childKey(node, path[i]!, assignment, path.slice(0, i).join('.') || 'the config');
    const next: unknown = (node as Record<string | number, unknown>)[key];
    if (next === undefined) {
      const created: Record<string, unknown> = {};
      (node as Record<string | number, unknown>)[key] = created;
      node = created;
    } else if (isContainer(next)) {
      node = next;
    } else {
      throw new InvalidSetError(
        `--set ${clip(assignment)}: ${at} is ${boundedJson(next)}, not an object, so it has no field '${clip(path[i + 1]!, 40)}' (set ${at} itself instead)`,
      );
    }
  }
  const last = childKey(node, path[path.length - 1]!, assignment, path.slice(0, -1).join('.') || 'the config');
  (node as Record<string | number, unknown>)[last] = value;
}

/**
 * Applies the assignments in order (a later one wins over an earlier one on the same field), to one copy of the
 * config: copying it per assignment made 200 of them on a large config cost seconds.
 */
export function applySets(config: object, assignments: readonly string[]): object {
  if (assignments.length === 0) return config;
  if (!isContainer(config) || Array.isArray(config)) return applySet(config, assignments[0]!);
  const root = structuredClone<Record<string, unknown>>(config);
  for (const a of assignments) setInPlace(root, a);
  return root;
}
