/**
 * From one question's G trajectories to training samples (docs/algorithms.md §2.5–2.7): one System 2 sample per
 * trajectory, one System 1 sample per bin; advantages on the full pools first, then balancing to G System 1 samples.
 */
import { groupZScore } from '../rl/advantages';
import type { Sample } from '../rl/sample';
import type { Rng } from '../random/prng';
import { poolAdvantages } from './advantagePools';
import { balanceSys1 } from './balancing';
import type { MarsSettings } from './configSchema';
import type { Sys1Call, Trajectory } from './rollout';

export interface QuestionBatch {
  sys2: Sample[];
  /** After balancing (duplicates possible when M < G). */
  sys1: Sample[];
  /** M: System 1 samples before balancing. */
  sys1Before: number;
  /** For each System 1 call of each trajectory (in rollout order), how many times balancing kept it. */
  kept: number[][];
  a2: number[];
  a1: number[][];
}

function sys1Calls(t: Trajectory): Sys1Call[] {
  return t.turns.flatMap((turn) => turn.sys1);
}

function sys1Sample(call: Sys1Call, groupId: string, reward: number, advantage: number): Sample {
  return {
    role: 'sys1',
    groupId,
    paramId: 'sys1',
    tokens: [...call.prompt, ...call.output],
    lossMask: [...call.prompt.map(() => 0), ...call.output.map(() => 1)],
    behaviourLogProbs: [...call.prompt.map(() => 0), ...call.logProbs],
    reward,
    advantage,
  };
}

/** §2.7 with the settings' pools, balancing mode and the `precompute` ablation. */
export function questionBatch(group: readonly Trajectory[], s: MarsSettings, eps: number, rng: Rng): QuestionBatch {
  const G = group.length;
  const groupId = group[0]!.question.id;
  const calls = group.map(sys1Calls);
  const flat = calls.flatMap((cs, k) => cs.map((call, j) => ({ call, k, j })));
  const kept = calls.map((cs) => cs.map(() => 0));
  const { sys2: a2, sys1: a1 } = poolAdvantages(
    group.map((t, k) => ({ reward: t.reward, sys1Count: calls[k]!.length })),
    { pool: s.sys1Pool, eps },
  );
  const sys2 = group.map<Sample>((t, k) => ({
    role: 'sys2',
    groupId,
    paramId: 'sys2',
    tokens: t.tokens,
    lossMask: t.lossMask,
    behaviourLogProbs: t.behaviourLogProbs,
    reward: t.reward,
    advantage: a2[k]!,
  }));
  let sys1: Sample[];
  if (s.precompute) {
    const idx = balanceSys1(
      flat.map((f) => a1[f.k]![f.j]!),
      G,
      { mode: s.balance, delta: s.balanceDelta, rng },
    );
    sys1 = idx.map((i) => {
      const f = flat[i]!;
      kept[f.k]![f.j]!++;
      return sys1Sample(f.call, groupId, group[f.k]!.reward, a1[f.k]![f.j]!);
    });
  } else {
    // §6.4 ablation: resample first, then normalise the kept samples' rewards (duplicates counted as they appear).
    const idx = balanceSys1(
      flat.map(() => 0),
      G,
      { mode: s.balance, delta: s.balanceDelta, rng },
    );
    const adv = groupZScore(
      idx.map((i) => group[flat[i]!.k]!.reward),
      { eps },
    );
    sys1 = idx.map((i, n) => {
      const f = flat[i]!;
      kept[f.k]![f.j]!++;
      return sys1Sample(f.call, groupId, group[f.k]!.reward, adv[n]!);
    });
  }
  return { sys2, sys1, sys1Before: flat.length, kept, a2, a1 };
}
