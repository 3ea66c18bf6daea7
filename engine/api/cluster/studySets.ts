/**
 * The launch form's config as a study's `path=value` sets over its preset's (issue 18), so every run of the study,
 * here or as a Ray job, resolves it as `train --preset … --set …`: only what changed, a changed union member whole.
 * The edited config is checked first (size, schema, paths a window may name), so a bad one is refused before anything
 * is recorded or submitted.
 */
import { configSizeProblem } from '../../base/boundedText';
import { applySets } from '../../runs/config/configOverrides';
import { checkRunConfig, ConfigValidationError } from '../../runs/config/configSchema';
import { resolvePresetConfig } from '../../runs/presets/presets';
import { UserError } from '../../base/userError';
import { configPathIssues } from '../host/hostGuards';

/** The leaves where `edited` differs from `base`, as `path=value` sets (a changed object of other keys: the whole of it). */
export function configDiffSets(base: unknown, edited: unknown, prefix: string[] = [], out: string[] = []): string[] {
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (isObj(base) && isObj(edited)) {
    const a = Object.keys(base).sort();
    const b = Object.keys(edited).sort();
    if (prefix.length === 0 || JSON.stringify(a) === JSON.stringify(b)) {
      for (const key of b) configDiffSets(base[key], edited[key], [...prefix, key], out);
      return out;
    }
  }
  if (JSON.stringify(base) !== JSON.stringify(edited) && prefix.length > 0) {
    out.push(`${prefix.join('.')}=${JSON.stringify(edited)}`);
  }
  return out;
}

/** The form's config (or the preset's with `sets`) checked, as sets over the preset's (the seed is the study's). */
export function studySets(
  preset: string,
  config: unknown,
  extra: readonly string[] | undefined,
  presetsDir: string,
  roots: readonly string[],
): string[] {
  const tooBig = config ? configSizeProblem(config) : undefined;
  if (tooBig) throw new UserError(`config: the config ${tooBig}`);
  const base = resolvePresetConfig(preset, [], presetsDir);
  const edited = checkRunConfig(applySets(config ?? base, [...(extra ?? [])]));
  if (!edited.success) throw new ConfigValidationError(edited.issues, `preset '${preset}'`);
  const pathIssues = configPathIssues(edited.data, roots);
  if (pathIssues.length) throw new ConfigValidationError(pathIssues, `preset '${preset}'`);
  return configDiffSets(base, edited.data).filter((s) => !s.startsWith('seed='));
}
