import { Rng } from '../../engine/random/prng';
import type { Sample } from '../../engine/rl/sample';

/** Deterministic samples of varied length: prompt tokens masked out, response tokens in, fixed advantages. */
export function fixedSamples(vocab: number, seed = 5, n = 4): Sample[] {
  const rng = new Rng(seed);
  return Array.from({ length: n }, (_, i) => {
    const promptLen = 2 + (i % 2);
    const len = promptLen + 3 + ((i * 2) % 5);
    const tokens = Array.from({ length: len }, () => rng.int(vocab));
    const lossMask = tokens.map((_, t) => (t >= promptLen ? 1 : 0));
    return {
      role: 'node',
      groupId: 'g',
      paramId: 'policy',
      tokens,
      lossMask,
      behaviourLogProbs: tokens.map(() => 0),
      reward: i % 2,
      advantage: [1, -0.5, 0.8, -1.3][i % 4]!,
    };
  });
}
