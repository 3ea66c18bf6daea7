/**
 * Advantages the imported logs do not have, recomputed here (issue 18 part 4). Neither verl's rollout dump nor MARTI's
 * logs hold a per-sample advantage (verl's `_dump_generations` writes input/output/gts/score/step and reward extras;
 * MARTI's llm_logs hold the call, not its credit), so the GRPO advantage of docs/algorithms.md §1.2 is computed again from
 * the rewards, per group: (r − mean) / (std + eps), with the trainer's own eps, std and singleton rule, and every
 * record says it was recomputed.
 */
import { groupZScore, type ZScoreOptions } from '../../rl/advantages';

export interface GroupRule {
  method: string;
  groupedBy: string;
  eps: number;
  stdMode: 'unbiased' | 'population';
  singleton: 'zero' | 'verl';
}

/**
 * verl's GRPO (verl/trainer/ppo/core_algos.py compute_grpo_outcome_advantage): groups by uid, torch.std (unbiased),
 * epsilon 1e-6, and a group of one gets mean 0 and std 1. The dump has no uid, so a group is the samples of one step
 * with an identical prompt (`input`): rollout.n samples of a prompt share it, and balance_batch reorders them.
 */
export const VERL_GRPO: GroupRule = {
  method: 'grpo',
  groupedBy: 'identical prompt (input) within a step',
  eps: 1e-6,
  stdMode: 'unbiased',
  singleton: 'verl',
};

/**
 * MARTI's group_norm (OpenRLHF's estimator, which MARTI-MARS² uses: all nodes of a tree are one group; docs/algorithms.md
 * §3.7), epsilon 1e-9, torch.std; a tree of one node has no baseline (0).
 */
export const MARTI_GROUP_NORM: GroupRule = {
  method: 'group_norm',
  groupedBy: 'the nodes of one search tree',
  eps: 1e-9,
  stdMode: 'unbiased',
  singleton: 'zero',
};

/**
 * Advantages of `rewards` (null where a reward is unknown: those get null and do not count in the group's statistics).
 */
export function recomputeAdvantages(rewards: readonly (number | null)[], rule: GroupRule): (number | null)[] {
  const known = rewards.flatMap((r, i) => (r !== null && Number.isFinite(r) ? [i] : []));
  const opts: ZScoreOptions = { eps: rule.eps, stdMode: rule.stdMode, singleton: rule.singleton };
  const z = groupZScore(
    known.map((i) => rewards[i]!),
    opts,
  );
  const out: (number | null)[] = rewards.map(() => null);
  known.forEach((i, k) => (out[i] = z[k]!));
  return out;
}
