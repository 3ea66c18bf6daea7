/**
 * What the inspector shows of MARS episodes beyond their records: capacities the host fills in for records written
 * before the trainer recorded them (engine/runs/trajectories/trajectoryPages.ts withCapacities), the gold answer marked in a text
 * as whole words (renderer/src/lib/trajectories.ts markGold), the part of a page a window cut off, and the finder's
 * family list kept equal to the engine's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { withCapacities } from '../../../engine/runs/trajectories/trajectoryPages';
import { hasGold, markGold, splitTaken } from '../../../renderer/src/lib/trajectories';

const episodes = fs
  .readFileSync(path.resolve('tests/fixtures/mars-episodes.jsonl'), 'utf8')
  .split('\n')
  .filter(Boolean)
  .map(
    (l) =>
      JSON.parse(l) as {
        turns: { query: string | null; purpose: string | null; capacity?: number; bins: { used: number }[] }[];
      },
  );
const config = JSON.parse(fs.readFileSync(path.resolve('tests/fixtures/mars-episodes.config.json'), 'utf8')) as {
  mars: { sys1PromptMax: number; purposeMax: number };
};

describe('capacities filled in by the host', () => {
  it('gives every search of an older record the capacity C = window − 3 − purpose tokens (capped), which its windows fit', () => {
    expect(episodes.every((e) => e.turns.every((t) => t.capacity === undefined))).toBe(true);
    const filled = withCapacities(episodes, config) as typeof episodes;
    let searches = 0;
    for (const e of filled) {
      for (const t of e.turns) {
        if (t.query === null) {
          expect(t.capacity).toBeUndefined();
          continue;
        }
        searches++;
        const purpose = (t.purpose ?? t.query).split(' ').filter(Boolean).length;
        expect(t.capacity).toBe(config.mars.sys1PromptMax - 3 - Math.min(purpose, config.mars.purposeMax));
        for (const b of t.bins) expect(b.used).toBeLessThanOrEqual(t.capacity!);
      }
    }
    expect(searches).toBeGreaterThan(0);
    // a recorded capacity is kept, and the record itself is not changed
    const recorded = { kind: 'mars.episode', turns: [{ query: 'x', purpose: null, capacity: 7, bins: [] }] };
    expect(withCapacities([recorded], config)[0]).toBe(recorded);
    // so is a recorded null: the search found no pages (or System 1 was off), so there was no window to size
    const none = { kind: 'mars.episode', turns: [{ query: 'x', purpose: null, capacity: null, bins: [] }] };
    expect(withCapacities([none], config)[0]).toBe(none);
    expect(episodes[0]!.turns[0]!.capacity).toBeUndefined();
  });
});

describe('gold answer marks', () => {
  it('marks whole-word occurrences, case-insensitively, the longest answer first', () => {
    const pieces = markGold('Taistas is the capital . the city of taistas lies near taistasburg', [
      'taistas',
      'the city of taistas',
    ]);
    expect(pieces.filter((p) => p.gold).map((p) => p.text)).toEqual(['Taistas', 'the city of taistas']);
    expect(pieces.map((p) => p.text).join('')).toBe(
      'Taistas is the capital . the city of taistas lies near taistasburg',
    );
    expect(hasGold('near taistasburg', ['taistas'])).toBe(false);
    expect(hasGold(null, ['taistas'])).toBe(false);
    expect(hasGold('born in 1 7 4 0 .', ['1 7 4 0'])).toBe(true);
  });

  it('splits a page into what a window read and what it cut off', () => {
    expect(splitTaken('a b c d e', 3)).toEqual({ read: 'a b c', cut: 'd e' });
    expect(splitTaken('a b', 5)).toEqual({ read: 'a b', cut: '' });
  });
});
