/**
 * The policy-gradient smoke test (issue: foundation): a tiny Llama learns, by GRPO alone, to emit a target token
 * sequence from a toy reward. The same loop checks that training leaks no tensors.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { generate } from '../../engine/model/sampler';
import { Rng } from '../../engine/random/prng';
import { Adam } from '../../engine/rl/adam';
import { groupZScore } from '../../engine/rl/advantages';
import { adamVariables, policyUpdate } from '../../engine/rl/policyUpdate';
import type { Sample } from '../../engine/rl/sample';
import { tf } from '../../engine/tensor/backend';
import { tinyModel } from '../helpers/tinyModel';
import { useBackend } from '../helpers/backends';

const TARGET = [7, 3, 9, 5];
const BOS = 1;
const G = 16;
const STEPS = 250;

const reward = (tokens: number[]) => TARGET.filter((t, i) => tokens[i] === t).length / TARGET.length;

interface Run {
  rewards: number[];
  greedy: number[];
  tensorsAt: Map<number, number>;
}

async function train(): Promise<Run> {
  const model = tinyModel(7, { vocab_size: 12 }, 0.02);
  const opt = new Adam(adamVariables(model), { lr: 3e-3 });
  const rng = new Rng(123);
  const rewards: number[] = [];
  const tensorsAt = new Map<number, number>();
  for (let step = 1; step <= STEPS; step++) {
    const gens = await generate(
      model,
      Array.from({ length: G }, () => [BOS]),
      { maxNewTokens: TARGET.length, rng },
    );
    const r = gens.map((g) => reward(g.tokens));
    const adv = groupZScore(r);
    const samples: Sample[] = gens.map((g, i) => ({
      role: 'node',
      groupId: 'q',
      paramId: 'policy',
      tokens: [BOS, ...g.tokens],
      lossMask: [0, ...g.tokens.map(() => 1)],
      behaviourLogProbs: [0, ...g.logProbs],
      reward: r[i]!,
      advantage: adv[i]!,
    }));
    await policyUpdate(model, opt, samples, { loss: { kind: 'ppoToken' } });
    rewards.push(r.reduce((a, b) => a + b, 0) / G);
    if (step === 10 || step === 200) tensorsAt.set(step, tf.memory().numTensors);
  }
  const [greedy] = await generate(model, [[BOS]], { maxNewTokens: TARGET.length, rng, temperature: 0 });
  model.dispose();
  opt.dispose();
  return { rewards, greedy: greedy!.tokens, tensorsAt };
}

describe('GRPO on a toy reward (wasm)', () => {
  let run: Run;
  beforeAll(async () => {
    await useBackend('wasm');
    run = await train();
  }, 300_000);

  it('the reward curve rises: the policy learns to emit the target sequence', () => {
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const first = mean(run.rewards.slice(0, 10));
    const best = Math.max(...run.rewards.slice(9).map((_, i) => mean(run.rewards.slice(i, i + 10))));
    expect(first).toBeLessThan(0.35); // a random policy matches 1/12 of positions
    expect(best).toBeGreaterThan(0.95);
    // Held, not only touched, over the last 100 steps. Not the last 10 alone: once the policy is right, most groups
    // are all-equal (zero advantage, zero gradient) while Adam's second moments decay, and the next group with one
    // slip gives that slip a z-score of about −3.9 — a large normalised step that can flip one position for a dozen
    // steps before the reward pulls it back (seen at step ~234 of this seed after a change of float summation order).
    expect(mean(run.rewards.slice(-100))).toBeGreaterThan(0.85);
    expect(run.greedy).toEqual(TARGET);
  });

  it('leaks no tensors: the count after step 200 equals the count after step 10', () => {
    expect(run.tensorsAt.get(200)).toBe(run.tensorsAt.get(10));
  });
});
