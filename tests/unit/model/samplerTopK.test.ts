/**
 * Top-k truncation of the sampler (issue 30, item 7), in transformers' order: top-k first, then top-p within what
 * top-k kept. Frequencies over many seeded draws from a fixed distribution, with margins ≫ their sampling error
 * (20,000 draws: σ ≤ 0.0035), so the test holds on any float path; the log-prob stays that of the whole distribution.
 */
import { describe, expect, it } from 'vitest';
import { drawToken } from '../../../engine/model/sampler';
import { Rng } from '../../../engine/random/prng';

const P = [0.1, 0.4, 0.05, 0.3, 0.15]; // token 1 > 3 > 4 > 0 > 2
const LOGITS = Float32Array.from(P, Math.log);
const N = 20_000;

function frequencies(topP: number, topK: number, seed = 1): number[] {
  const rng = new Rng(seed);
  const counts = P.map(() => 0);
  for (let i = 0; i < N; i++) counts[drawToken(LOGITS, 0, P.length, 1, topP, rng, topK).id]!++;
  return counts.map((c) => c / N);
}

describe('drawToken with top-k', () => {
  it('top-k 1 is the most likely token, always', () => {
    expect(frequencies(1, 1)).toEqual([0, 1, 0, 0, 0]);
  });

  it('top-k 3 draws the three most likely, renormalised among themselves', () => {
    const f = frequencies(1, 3);
    const z = 0.4 + 0.3 + 0.15;
    expect(f[0]).toBe(0);
    expect(f[2]).toBe(0);
    expect(Math.abs(f[1]! - 0.4 / z)).toBeLessThan(0.02);
    expect(Math.abs(f[3]! - 0.3 / z)).toBeLessThan(0.02);
    expect(Math.abs(f[4]! - 0.15 / z)).toBeLessThan(0.02);
  });

  it('top-p acts within what top-k kept (so top-k 2 with top-p 0.5 keeps one token, top-p 0.5 alone two)', () => {
    expect(frequencies(0.5, 2)).toEqual([0, 1, 0, 0, 0]); // renormalised over {1, 3}: 0.57 ≥ 0.5 already
    const alone = frequencies(0.5, 0);
    expect(alone[1]! + alone[3]!).toBe(1);
    expect(Math.abs(alone[1]! - 0.4 / 0.7)).toBeLessThan(0.02);
  });

  it('off (0, or k ≥ the vocabulary) leaves the distribution whole; the log-prob is the untruncated one', () => {
    for (const k of [0, 5, 99]) {
      const f = frequencies(1, k);
      P.forEach((p, i) => expect(Math.abs(f[i]! - p), `k ${k}, token ${i}`).toBeLessThan(0.02));
    }
    const rng = new Rng(3);
    for (let i = 0; i < 50; i++) {
      const { id, logProb } = drawToken(LOGITS, 0, P.length, 1, 1, rng, 2);
      expect(logProb).toBeCloseTo(Math.log(P[id]!), 5);
    }
  });
});
