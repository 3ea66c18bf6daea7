/**
 * Where a step's time goes (issue 33, item 4), on a real run: `mars-lab train` logs each line's interval since the
 * previous one (timing.stepMs), the evaluation's time on the steps that evaluate and the checkpoint written after the
 * previous step; engine/pure/timeSplit.ts splits it into parts that add up to the interval (no part measured outside
 * it: `other` is never clamped), and `show` prints the mean split (text and --json). The algorithm-specific parts of
 * MARS and MARTI lines are checked on lines of their own metric names.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { meanTimeSplit, TIME_PARTS, timeSplitOf } from '../../engine/pure/timeSplit';
import { cli } from '../helpers/cli';

let home: string;
let runId: string;
let lines: Record<string, number>[];

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-time-split-'));
  const r = await cli([
    'train',
    '--preset',
    'seqgrpo-copy',
    '--set',
    'budget.steps=8',
    '--set',
    'checkpoint.every=2',
    '--set',
    'eval.every=4',
    '--home',
    home,
  ]);
  expect(r.code, r.stderr).toBe(0);
  runId = fs.readdirSync(path.join(home, 'runs'))[0]!;
  lines = fs
    .readFileSync(path.join(home, 'runs', runId, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as Record<string, number>);
}, 120_000);
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('the time split of a real run', () => {
  it('every line has its interval, and the measured parts fit inside it', () => {
    expect(lines).toHaveLength(8);
    for (const line of lines) {
      const split = timeSplitOf('seqgrpo', line)!;
      expect(split).not.toBeNull();
      const measured = TIME_PARTS.filter((p) => p !== 'other').reduce((s, p) => s + split[p], 0);
      expect(measured).toBeLessThanOrEqual(line['timing.stepMs']! + 1e-6);
      expect(measured + split.other).toBeCloseTo(line['timing.stepMs']!, 6);
      expect(split.sampling).toBe(line['timing.rolloutMs']);
      expect(line['timing.rolloutTokens']).toBeGreaterThan(0);
    }
  });

  it('the checkpoint after step k is in line k+1; evaluation only on the steps that evaluate', () => {
    const withCheckpoint = lines.filter((l) => l['timing.checkpointMs']! > 0).map((l) => l.step);
    expect(withCheckpoint).toEqual([3, 5, 7]);
    const evaluated = lines.filter((l) => 'timing.evalMs' in l).map((l) => l.step);
    expect(evaluated).toEqual([4, 8]);
    for (const l of lines.filter((x) => x.step === 4 || x.step === 8)) expect(l['timing.evalMs']).toBeGreaterThan(0);
  });

  it('show prints the mean split, and --json carries it', async () => {
    const text = await cli(['show', runId, '--home', home]);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^time per step, mean of 8: sampling \d+\.\d% \([\d.]+ m?s\), update /m);
    expect(text.stdout).toMatch(/rollout tokens per second of sampling \d+/);
    const json = JSON.parse((await cli(['show', runId, '--json', '--home', home])).stdout) as {
      timeSplit: ReturnType<typeof meanTimeSplit>;
    };
    expect(json.timeSplit).toEqual(meanTimeSplit('seqgrpo', lines));
    const shares = TIME_PARTS.reduce((s, p) => s + json.timeSplit!.share[p], 0);
    expect(shares).toBeCloseTo(1, 9);
    expect(json.timeSplit!.share.checkpoint).toBeGreaterThan(0);
    expect(json.timeSplit!.share.evaluation).toBeGreaterThan(0);
  });
});

describe('the parts of each algorithm', () => {
  it('MARS: both systems generating are sampling, corpus search and packing are search', () => {
    const s = timeSplitOf('mars', {
      'timing.stepMs': 1000,
      'timing.rolloutMs': 700,
      'timing.sys2GenerationMs': 300,
      'timing.sys1GenerationMs': 200,
      'timing.searchMs': 50,
      'timing.packingMs': 10,
      'timing.updateMs': 250,
    })!;
    expect(s).toEqual({ sampling: 500, search: 60, scoring: 0, update: 250, evaluation: 0, checkpoint: 0, other: 190 });
  });

  it('MARTI: generation is sampling, selection is search, tests are scoring; nothing is negative', () => {
    const s = timeSplitOf('marti', {
      'timing.stepMs': 100,
      'timing.generationMs': 60,
      'timing.selectionMs': 5,
      'timing.testMs': 30,
      'timing.updateMs': 20,
      'timing.liveMs': 3,
    })!;
    expect(s).toMatchObject({ sampling: 60, search: 5, scoring: 30, update: 20, other: 0 });
    expect(timeSplitOf('marti', { 'timing.generationMs': 60 })).toBeNull();
  });
});
