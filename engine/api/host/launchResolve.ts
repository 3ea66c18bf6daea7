/**
 * The config a launch request describes (a preset, a config, `--set` overrides), validated through the run config
 * schema and the host's path guards. Shared by the preset methods (validateConfig), the run processes (startRun) and
 * the endpoint evaluations (endpointEvalMethods.ts), so every launch is judged the same way.
 */
import { applySets } from '../../runs/config/configOverrides';
import { checkRunConfig, type Checked, type RunConfig } from '../../runs/config/configSchema';
import { loadPreset } from '../../runs/presets/presets';
import { configSizeProblem } from '../../base/boundedText';
import { UserError } from '../../base/userError';
import type { ApiParsedRequest } from '../contract/contract';
import { configPathIssues } from './hostGuards';

/** The config a launch request describes, validated; never throws for a user's mistake. */
export function resolveLaunch(
  req: ApiParsedRequest<'validateConfig'>,
  presetsDir: string,
  roots: readonly string[],
): Checked<RunConfig> {
  let base: object;
  // Before any work: a config of megabytes (or nested thousands deep) would hold the host for minutes.
  const tooBig = req.config ? configSizeProblem(req.config) : undefined;
  if (tooBig) return { success: false, issues: [{ path: '', message: `the config ${tooBig}` }] };
  if (req.config) base = req.config;
  else if (req.preset) {
    try {
      base = loadPreset(req.preset, presetsDir).config;
    } catch (err) {
      if (err instanceof UserError) return { success: false, issues: [{ path: '', message: err.message }] };
      throw err;
    }
  } else return { success: false, issues: [{ path: '', message: 'give a preset or a config to launch' }] };
  if (req.preset && req.config) {
    try {
      loadPreset(req.preset, presetsDir);
    } catch (err) {
      if (err instanceof UserError) return { success: false, issues: [{ path: '', message: err.message }] };
      throw err;
    }
  }
  let withSets: object;
  try {
    withSets = applySets(base, req.sets ?? []);
  } catch (err) {
    if (err instanceof UserError) return { success: false, issues: [{ path: '', message: err.message }] };
    throw err;
  }
  const checked = checkRunConfig(withSets);
  if (!checked.success) return checked;
  // A window names files only inside the home, resources/ or the allow-list (a terminal user is not restricted).
  const issues = configPathIssues(checked.data, roots);
  return issues.length > 0 ? { success: false, issues } : checked;
}
