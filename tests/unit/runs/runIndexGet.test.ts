/**
 * RunIndex.get (engine/runs/summary/runIndex.ts): one run's summary brought up to date with its folder alone, as the run page
 * needs it, with the number of metrics lines read (getRun's metricPoints): the same summary as list() gives, followed
 * as the log grows (a torn last line counted once complete), undefined for a run that is not there; and a cold index
 * built from a log with awkward lines summarises it as parsing every line would.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { RUN_FILES } from '../../../engine/runs/folder/home';
import { createRunFolder } from '../../../engine/runs/folder/runFolder';
import { openRunIndex } from '../../../engine/runs/summary/runIndex';

let home: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-index-get-'));
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

describe('RunIndex.get', () => {
  it('gives one run as list() does, with its metrics line count, and follows the log', () => {
    const a = createRunFolder(home, {
      algorithm: 'seqgrpo',
      config: { budget: { steps: 10 } },
      engineVersion: '0',
      seed: 1,
      tags: ['t'],
      notes: '',
    });
    const file = path.join(a.dir, RUN_FILES.metrics);
    fs.writeFileSync(
      file,
      '{"step":1,"reward":0.5,"__proto__":2}\n{"step":2,"reward":"x"}\nnot json\n{"step":3,"reward":-1e-3,"constructor":null}\n{"step":4,"rew',
    );
    const index = openRunIndex(home);
    const got = index.get(a.id)!;
    expect(got.metricLines).toBe(3);
    expect(got.summary.steps).toBe(3);
    expect(got.summary.totalSteps).toBe(10);
    expect(Object.getOwnPropertyDescriptor(got.summary.metrics, '__proto__')?.value).toEqual({
      last: 2,
      min: 2,
      max: 2,
    });
    expect(Object.getOwnPropertyDescriptor(got.summary.metrics, 'constructor')?.value).toEqual({
      last: null,
      min: null,
      max: null,
    });
    expect(got.summary.metrics.reward).toEqual({ last: -1e-3, min: -1e-3, max: 0.5 });
    expect(openRunIndex(home).list()).toEqual([got.summary]);

    fs.appendFileSync(file, 'ard":2}\n{"step":5,"reward":1}\n');
    const later = index.get(a.id)!;
    expect(later.metricLines).toBe(5);
    expect(later.summary.steps).toBe(5);
    expect(later.summary.metrics.reward).toEqual({ last: 1, min: -1e-3, max: 2 });
    // A fresh index (read back from index.json) says the same.
    expect(openRunIndex(home).get(a.id)).toEqual(later);
  });

  it('is undefined for a run that is not there (or a name that is not a run id)', () => {
    const index = openRunIndex(home);
    expect(index.get('20260101-000000-abcd')).toBeUndefined();
    expect(index.get('../x')).toBeUndefined();
  });
});
