/**
 * Which policy sources a run config names, by the system or agent they drive — read by `eval` (which goes through
 * endpoints when any is named) and by the run launcher (which refuses to train with them). Types only: cheap to import.
 */
import type { RunConfig } from './configSchema';
import type { PolicySource } from '../../policy/policySource';

/** The policy sources a config names, by the system or agent they drive (empty when it names none). */
export function configuredSources(config: RunConfig): { label: string; source: PolicySource }[] {
  if (config.algorithm === 'mars') {
    const p = config.mars.policies;
    if (!p) return [];
    const sys2 = p.sys2 ?? { kind: 'model' as const };
    const out = [{ label: 'MARS System 2', source: sys2 }];
    // off and oracle run no System 1 model
    if (config.mars.sys1Params !== 'off' && config.mars.sys1Params !== 'oracle') {
      out.push({ label: 'MARS System 1', source: p.sys1 ?? sys2 });
    }
    return out;
  }
  if (config.algorithm === 'marti') {
    const agents = config.marti.configuration === 'single' ? config.marti.agents.slice(0, 1) : config.marti.agents;
    if (!agents.some((a) => a.policy)) return [];
    return agents.map((a) => ({ label: `MARTI agent ${a.id}`, source: a.policy ?? { kind: 'model' as const } }));
  }
  return [];
}

/** Whether the config evaluates a user's corpus (MARS task.corpus), which only endpoint policies can read. */
export function usesCorpus(config: RunConfig): boolean {
  return config.algorithm === 'mars' && config.task.corpus !== undefined;
}

/** Whether `eval` of this config goes through endpoints (then a checkpoint is needed only for model sources). */
export function usesEndpoints(config: RunConfig): boolean {
  return usesCorpus(config) || configuredSources(config).some((s) => s.source.kind === 'endpoint');
}

/**
 * The one line that refuses to train with what is for evaluation only (endpoint policies, a corpus, MARS's oracle
 * System 1), or null when the config has none of them.
 */
export function trainingWithEndpointsProblem(config: RunConfig): string | null {
  if (config.algorithm === 'mars' && config.mars.sys1Params === 'oracle') {
    return 'mars.sys1Params: oracle is for evaluation only (each System 1 window answers with the gold support sentences); train with shared, separate, frozen, sharedUntrained or off';
  }
  if (usesCorpus(config)) {
    return 'task.corpus: a corpus of your own is for evaluation with endpoint policies (mars-lab eval); training uses the generated worlds: remove task.corpus from the run config';
  }
  const named = configuredSources(config)
    .filter((s) => s.source.kind === 'endpoint')
    .map((s) => s.label);
  if (named.length === 0) return null;
  const field = config.algorithm === 'mars' ? 'mars.policies' : 'marti.agents[].policy';
  return `${named.join(', ')}: endpoint policies are for evaluation (mars-lab eval); training uses the run's own models: remove ${field} from the run config`;
}
