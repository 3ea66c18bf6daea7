/**
 * MARS advantages for one question (docs/algorithms.md §2.5, eq. 5): one pool for the G System 2 samples and one for the
 * M System 1 samples, computed on the full pools before any balancing (§2.7).
 */
import { groupZScore, type ZScoreOptions } from '../rl/advantages';

export interface TrajectoryOutcome {
  /** The trajectory's shared reward r^k (§2.4). */
  reward: number;
  /** n_k: how many System 1 samples (bins) the trajectory produced. */
  sys1Count: number;
}

export interface PoolAdvantages {
  /** A2^k, one per trajectory. */
  sys2: number[];
  /** A1^{k,j}; sys1[k].length === sys1Count of trajectory k. */
  sys1: number[][];
}

/** Config key `sys1Pool`: 'separate' (default, eq. 5) or 'joint' (one z-score over both systems, §6.6 ablation). */
export type Sys1Pool = 'separate' | 'joint';

export interface PoolOptions extends ZScoreOptions {
  pool?: Sys1Pool;
}

/**
 * §2.5. In the System 1 pool each trajectory's reward counts once per System 1 sample, so the baseline is weighted
 * by tool calls. 'joint' z-scores the G System 2 rewards and the M System 1 rewards together and splits them back.
 * Degenerate pools (all equal, singleton) give exactly 0 through groupZScore (§2.9).
 */
export function poolAdvantages(trajectories: readonly TrajectoryOutcome[], opts: PoolOptions = {}): PoolAdvantages {
  const { pool = 'separate', ...rest } = opts;
  const z: ZScoreOptions = { ...rest, eps: rest.eps ?? 1e-6 };
  trajectories.forEach((t, k) => {
    if (!Number.isInteger(t.sys1Count) || t.sys1Count < 0) {
      throw new Error(`poolAdvantages: trajectory ${k} has sys1Count ${t.sys1Count}; it must be a whole number ≥ 0.`);
    }
  });
  const rewards = trajectories.map((t) => t.reward);
  const expanded = trajectories.flatMap((t) => new Array<number>(t.sys1Count).fill(t.reward));
  let sys2: number[];
  let flat1: number[];
  if (pool === 'separate') {
    sys2 = groupZScore(rewards, z);
    flat1 = groupZScore(expanded, z);
  } else if (pool === 'joint') {
    const all = groupZScore([...rewards, ...expanded], z);
    sys2 = all.slice(0, rewards.length);
    flat1 = all.slice(rewards.length);
  } else {
    throw new Error(`poolAdvantages: unknown pool ${String(pool)}; expected 'separate' or 'joint'.`);
  }
  const sys1: number[][] = [];
  let at = 0;
  for (const t of trajectories) {
    sys1.push(flat1.slice(at, at + t.sys1Count));
    at += t.sys1Count;
  }
  return { sys2, sys1 };
}
