import { describe, expect, it } from 'vitest';
import { maskedTokenCount, packBatch, validateSample, type Sample } from '../../../engine/rl/sample';

const sample = (over: Partial<Sample> = {}): Sample => ({
  role: 'sys2',
  groupId: 'q1',
  paramId: 'theta',
  tokens: [1, 5, 6, 7],
  lossMask: [0, 0, 1, 1],
  behaviourLogProbs: [0, 0, -0.5, -1.25],
  reward: 1,
  advantage: 0.7,
  ...over,
});

describe('Sample (docs/algorithms.md §1.1)', () => {
  it('accepts a well-formed record and counts its masked-in tokens', () => {
    expect(() => validateSample(sample())).not.toThrow();
    expect(maskedTokenCount(sample())).toBe(2);
  });

  it('names the field that breaks an invariant', () => {
    expect(() => validateSample(sample({ lossMask: [0, 1, 1] }), 'sample 3')).toThrow(
      /sample 3: lossMask has length 3/,
    );
    expect(() => validateSample(sample({ lossMask: [0, 0, 2, 1] }))).toThrow(/lossMask\[2\] is 2/);
    expect(() => validateSample(sample({ lossMask: [1, 0, 1, 1], behaviourLogProbs: [-1, 0, -0.5, -1] }))).toThrow(
      /lossMask\[0\]/,
    );
    expect(() => validateSample(sample({ behaviourLogProbs: [0, -0.1, -0.5, -1] }))).toThrow(
      /behaviourLogProbs\[1\].*mask is 0/,
    );
    expect(() => validateSample(sample({ behaviourLogProbs: [0, 0, Number.NaN, -1] }))).toThrow(
      /behaviourLogProbs\[2\]/,
    );
    expect(() => validateSample(sample({ tokens: [1, 2.5, 3, 4] }))).toThrow(/tokens\[1\]/);
    expect(() => validateSample(sample({ advantage: Number.POSITIVE_INFINITY }))).toThrow(/advantage/);
  });

  it('packs a minibatch into right-padded [B, T] arrays', () => {
    const a = sample();
    const b = sample({ tokens: [1, 9], lossMask: [0, 1], behaviourLogProbs: [0, -2], advantage: -1 });
    const p = packBatch([a, b], { padId: 3 });
    expect([p.B, p.T]).toEqual([2, 4]);
    expect([...p.tokens]).toEqual([1, 5, 6, 7, 1, 9, 3, 3]);
    expect([...p.mask]).toEqual([0, 0, 1, 1, 0, 1, 0, 0]);
    expect([...p.behaviourLogProbs]).toEqual([0, 0, -0.5, -1.25, 0, -2, 0, 0]);
    expect([...p.advantages]).toEqual([Math.fround(0.7), -1]);
    expect(p.lengths).toEqual([4, 2]);
    expect(packBatch([b], { padTo: 5 }).T).toBe(5);
    expect(() => packBatch([a], { padTo: 2 })).toThrow(/padTo is 2/);
    expect(() => packBatch([])).toThrow(/empty/);
  });
});
