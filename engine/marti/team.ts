/**
 * The team a MARTI config names (docs/algorithms.md §3.1): its agents, the parameter set each writes to, and the
 * AB-MCTS-A search configuration over them. Shared by the trainer, the evaluation and endpoint evaluations.
 *
 * Parameter sets: `single` → one set 'policy' (first agent only); `homogeneous` → one set 'shared' for all agents;
 * `heterogeneous` → one set per agent, named by the agent id.
 */
import type { MartiConfig } from './configSchema';
import type { AgentSpec } from './rollout';
import { makeSearchConfig, type SearchConfig } from './search/abmcts';

export type TeamConfiguration = 'single' | 'homogeneous' | 'heterogeneous';

/**
 * The agents a configuration fields, each with the parameter set it writes to (§3.1): `single` the first agent alone,
 * set 'policy'; `homogeneous` every agent, set 'shared'; `heterogeneous` every agent, a set named by its id. Shared by
 * the toy MARTI and martipy (marti/python/trainSets.ts).
 */
export function teamAgents<A extends { id: string }>(
  configuration: TeamConfiguration,
  agents: readonly A[],
): (A & { paramId: string })[] {
  if (configuration === 'single') return [{ ...agents[0]!, paramId: 'policy' }];
  return agents.map((a) => ({ ...a, paramId: configuration === 'homogeneous' ? 'shared' : a.id }));
}

/** The team (§3.1): agents with the parameter set each writes to. */
export function teamOf(cfg: MartiConfig): AgentSpec[] {
  const m = cfg.marti;
  return teamAgents(m.configuration, m.agents).map((a) => ({ id: a.id, paramId: a.paramId, rolePrompt: a.rolePrompt }));
}

export function paramIdsOf(cfg: MartiConfig): string[] {
  return [...new Set(teamOf(cfg).map((a) => a.paramId))];
}

/** The search over `agents` with `nodes` nodes per tree; `tplus` adds T+'s depth weighting when configured. */
export function searchConfig(
  cfg: MartiConfig,
  nodes: number,
  agents: readonly AgentSpec[],
  tplus = false,
): SearchConfig {
  const t = cfg.marti.tplus;
  return makeSearchConfig({
    agents: agents.map((a) => a.id),
    nodesPerTree: nodes,
    posterior: cfg.marti.posterior,
    agentSelect: cfg.marti.agentSelect,
    depthWeighting: tplus && t.depthWeighting ? { alpha: t.alpha, beta: t.beta } : null,
  });
}
