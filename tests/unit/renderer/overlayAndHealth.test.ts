/**
 * The renderer's pure helpers for issue 19's charts and health (renderer/src/lib/overlay.ts, runHealth.ts): arms group
 * runs by preset and tags; an arm's seeds become their mean with a min–max or ±SE band, aligned by interpolation on
 * the union of their x and only inside each seed's range; step of total and ETA; the recorded failure reason; and the
 * collapse warnings with their thresholds (silent below them).
 */
import { describe, expect, it } from 'vitest';
import { armsOf, meanBand } from '../../../renderer/src/lib/overlay';
import {
  describeEvent,
  etaSeconds,
  failureReason,
  healthWarnings,
  stepOfTotal,
} from '../../../renderer/src/lib/runHealth';

const s = (x: number[], y: number[]) => ({ x, min: y, max: y, last: y });

describe('overlay', () => {
  it('groups runs into arms by preset and tags, in order', () => {
    const arms = armsOf([
      { id: 'a', preset: 'p', algorithm: 'seqgrpo', tags: ['lr', 'x'] },
      { id: 'b', preset: 'p', algorithm: 'seqgrpo', tags: ['x', 'lr'] },
      { id: 'c', preset: 'q', algorithm: 'seqgrpo', tags: ['lr', 'x'] },
      { id: 'd', algorithm: 'mars', tags: [] },
    ]);
    expect(arms).toEqual([
      { key: 'p · lr · x', runIds: ['a', 'b'] },
      { key: 'q · lr · x', runIds: ['c'] },
      { key: 'mars', runIds: ['d'] },
    ]);
  });

  it('draws seeds as their mean with a min–max band, interpolated on the union of x, each only within its range', () => {
    const m = meanBand([s([0, 10, 20], [0, 1, 2]), s([0, 5, 10], [2, 2, 2])], 'minmax');
    expect(m.x).toEqual([0, 5, 10, 20]);
    expect(m.n).toEqual([2, 2, 2, 1]);
    expect(m.mean).toEqual([1, 1.25, 1.5, 2]);
    expect(m.lo).toEqual([0, 0.5, 1, 2]);
    expect(m.hi).toEqual([2, 2, 2, 2]);
  });

  it('or with mean ± standard error', () => {
    const m = meanBand([s([1], [1]), s([1], [3]), s([1], [5])], 'se');
    // sd 2, n 3: SE 2/√3
    expect(m.mean[0]).toBe(3);
    expect(m.hi[0]! - m.mean[0]!).toBeCloseTo(2 / Math.sqrt(3), 12);
    expect(m.mean[0]! - m.lo[0]!).toBeCloseTo(2 / Math.sqrt(3), 12);
  });
});

describe('run health', () => {
  it('says step of total and the time left at the recent pace', () => {
    expect(stepOfTotal(40, 200)).toBe('40 of 200 steps (20 %)');
    expect(stepOfTotal(3, undefined)).toBe('3 steps');
    expect(etaSeconds(40, 200, 1.5)).toBe(240);
    expect(etaSeconds(200, 200, 1.5)).toBeNull();
    expect(etaSeconds(40, 200, null)).toBeNull();
  });

  it('reads the reason of the last failure from the events, and says each event in words', () => {
    const events = [
      { time: 1, type: 'status', status: 'running', pid: 7, step: 0 },
      { time: 2, type: 'status', status: 'failed', step: 3, error: 'out of memory' },
    ];
    expect(failureReason(events)).toEqual({ status: 'failed', reason: 'out of memory', step: 3 });
    expect(failureReason([...events, { time: 3, type: 'status', status: 'running' }])).toBeNull();
    expect(describeEvent(events[1]!)).toBe('failed at step 3: out of memory');
    expect(describeEvent({ time: 4, type: 'resumed', fromStep: 20, pid: 9 })).toBe('resumed from step 20 (process 9)');
  });

  it('warns of collapse only past the stated thresholds', () => {
    const st = (last: number | null, max: number | null = last) => ({ last, min: last, max });
    expect(healthWarnings({ zeroAdvantageShare: st(0.89) })).toEqual([]);
    expect(healthWarnings({ zeroAdvantageShare: st(0.95) }).map((w) => [w.metric, w.threshold])).toEqual([
      ['zeroAdvantageShare', 'last value ≥ 90 %'],
    ]);
    expect(healthWarnings({ 'eval.div.distinctPrograms': st(0.6, 0.9) })).toEqual([]);
    expect(healthWarnings({ 'eval.div.distinctPrograms': st(0.4, 0.9) })[0]!.message).toMatch(
      /falling: distinct programs 40 %, down from 90 %/,
    );
    expect(healthWarnings({ loss: st(null, 2) })[0]!.metric).toBe('loss');
    expect(healthWarnings({ loss: st(0.5) })).toEqual([]);
    expect(healthWarnings({ truncatedShare: st(0.49) })).toEqual([]);
    expect(healthWarnings({ truncatedShare: st(0.6) })[0]!.message).toMatch(
      /60 % of programs were cut before their end token.*raise task\.maxProgramTokens/,
    );
  });
});
