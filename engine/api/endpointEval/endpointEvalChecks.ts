/**
 * What an endpoint evaluation from the app must be, beyond the run config's schema (engine/runs/config/configSchema.ts, which
 * the form's config passes first): MARS or MARTI, every system or agent an endpoint (the app evaluates no checkpoint
 * here), API keys named by environment variables of the app and never written in the form, and the user's files
 * (a corpus folder and its questions, a MARTI task file) inside the folders a window may name (hostGuards.ts).
 *
 * A key variable must also be a key's name declared for the endpoint's host in MARS_LAB_ALLOW_KEYS (keyGrants.ts):
 * otherwise a window holding the web token could have the host's secrets sent to a URL of its choosing. The worker
 * checks again (endpointEvalProblem) on a start and on a resume, whose config comes from a run folder in the home.
 *
 * Issues carry the config's dotted field path, so the form shows each beside its field. No message ever repeats what
 * was typed into a key-variable field: if it was a key, it must not travel on (into a log, an event, an error line).
 */
import { ENV_NAME } from '../../policy/policySource';
import { configuredSources } from '../../runs/config/configuredSources';
import type { ConfigIssue, RunConfig } from '../../runs/config/configSchema';
import { looksLikeKey } from '../../pure/apiKeyText';
import { pathProblem, taskFileSources } from '../host/hostGuards';
import { keyGrantProblem } from '../host/keyGrants';

/** The field path of each configured policy source, as configuredSources labels them. */
function sourceFields(
  config: RunConfig,
): { field: string; label: string; source: ReturnType<typeof configuredSources>[number]['source'] }[] {
  if (config.algorithm === 'mars') {
    const p = config.mars.policies ?? {};
    const out = [{ field: 'mars.policies.sys2', label: 'MARS System 2', source: p.sys2 ?? { kind: 'model' as const } }];
    if (config.mars.sys1Params !== 'off' && config.mars.sys1Params !== 'oracle' && p.sys1) {
      out.push({ field: 'mars.policies.sys1', label: 'MARS System 1', source: p.sys1 });
    }
    return out;
  }
  if (config.algorithm === 'marti') {
    const agents = config.marti.configuration === 'single' ? config.marti.agents.slice(0, 1) : config.marti.agents;
    return agents.map((a, i) => ({
      field: `marti.agents.${i}.policy`,
      label: `MARTI agent ${a.id}`,
      source: a.policy ?? { kind: 'model' as const },
    }));
  }
  return [];
}

/**
 * Every reason `config` cannot be evaluated with endpoints from a window, as issues on its fields; [] when it can.
 * `env` is the app's environment (the worker's: it inherits it); `roots` the folders a window may name.
 */
export function endpointEvalIssues(
  config: RunConfig,
  opts: { env?: NodeJS.ProcessEnv; roots?: readonly string[] } = {},
): ConfigIssue[] {
  if (config.algorithm !== 'mars' && config.algorithm !== 'marti') {
    return [{ path: 'algorithm', message: 'endpoint evaluations are for MARS and MARTI' }];
  }
  const issues: ConfigIssue[] = [];
  const env = opts.env ?? process.env;
  for (const { field, label, source } of sourceFields(config)) {
    if (source.kind !== 'endpoint') {
      issues.push({
        path: field,
        message: `${label} needs an endpoint (base URL and model): the app evaluates endpoints here; a checkpoint is evaluated from its run's page`,
      });
      continue;
    }
    const name = source.apiKeyEnv;
    if (name === undefined) continue;
    if (!ENV_NAME.test(name) || looksLikeKey(name)) {
      issues.push({
        path: `${field}.apiKeyEnv`,
        message:
          'this looks like a key itself: give the NAME of an environment variable that holds it (e.g. OPENAI_API_KEY); what was typed was not kept',
      });
    } else if (keyGrantProblem(name, source.baseUrl, env)) {
      // before "is it set": a window learns nothing of the host's environment from a variable it may not use
      issues.push({ path: `${field}.apiKeyEnv`, message: keyGrantProblem(name, source.baseUrl, env)! });
    } else if (!env[name]) {
      issues.push({
        path: `${field}.apiKeyEnv`,
        message: `the app's environment has no variable ${name}: start the app with ${name} set to the key, or leave the field empty for a server without one`,
      });
    }
  }
  for (const [field, p] of opts.roots ? taskFileSources(config) : []) {
    const problem = p === undefined ? undefined : pathProblem(p, opts.roots!);
    if (problem) issues.push({ path: field, message: problem });
  }
  return issues;
}

/** The first issue as one line (the worker's last check, after the host's), or null when there is none. */
export function endpointEvalProblem(config: RunConfig, env?: NodeJS.ProcessEnv): string | null {
  const first = endpointEvalIssues(config, { env })[0];
  return first ? `${first.path}: ${first.message}` : null;
}
