/**
 * How a worker's result travels to its host (engine/api/workers/runWorker.ts writeWorkerResult, runLauncher.ts workerResult):
 * as a file under <home>/evals/worker-results/, written whole under its final name, read once, validated against the
 * api contract and removed. A result line cannot make the host read or delete any other file, and a damaged or
 * mis-shaped result is an error naming the file and the field rather than a half answer.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { workerEvalSchema, workerResult, workerResultsDir } from '../../engine/api/workers/runLauncher';
import { writeWorkerResult } from '../../engine/api/workers/runWorker';

let home: string;
beforeEach(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-worker-result-'));
});
afterEach(() => {
  fs.rmSync(home, { recursive: true, force: true });
});

const evalResult = (items: number) => ({
  checkpoint: '/x/checkpoints/1',
  identity: { algorithm: 'mars', items },
  metrics: { exactMatch: 0.5, f1: null },
  items: Array.from({ length: items }, (_, i) => ({
    id: `q${i}`,
    correct: i % 2 === 0,
    score: 0.5,
    record: { turns: ['x'.repeat(1000)] },
  })),
  cached: false,
  file: '/home/evals/k/eval.json',
});

describe('worker results as files', () => {
  it('a result of megabytes arrives whole, once, and its file is removed', () => {
    const file = writeWorkerResult(home, evalResult(2000));
    expect(path.dirname(file)).toBe(workerResultsDir(home));
    expect(fs.statSync(file).size).toBeGreaterThan(2_000_000);
    expect(fs.readdirSync(workerResultsDir(home))).toEqual([path.basename(file)]); // no temp file left beside it
    const read = workerResult(home, workerEvalSchema)({ type: 'result', file });
    expect(read).toBeTypeOf('function');
    const value = read!();
    expect(value.items).toHaveLength(2000);
    expect(value.items[1999]).toMatchObject({ id: 'q1999', record: { turns: ['x'.repeat(1000)] } });
    expect(value.metrics).toEqual({ exactMatch: 0.5, f1: null });
    expect(fs.existsSync(file)).toBe(false);
  });

  it('other lines are not the result', () => {
    expect(workerResult(home, workerEvalSchema)({ type: 'created', runId: 'r', dir: '/d' })).toBeUndefined();
  });

  it('a line naming a file outside the results folder is refused, and that file is left alone', () => {
    const other = path.join(home, 'run.json');
    fs.writeFileSync(other, JSON.stringify(evalResult(1)));
    for (const file of [
      other,
      path.join(workerResultsDir(home), '..', 'run.json'),
      path.join(workerResultsDir(home), '1-2-ab.json', '..', '..', 'run.json'),
      42,
    ]) {
      expect(() => workerResult(home, workerEvalSchema)({ type: 'result', file })!()).toThrow(/names no result file/);
    }
    expect(fs.existsSync(other)).toBe(true);
  });

  it('a result of the wrong shape is an error naming the field, and its file is removed', () => {
    const bad = evalResult(3);
    (bad.items[2] as { correct: unknown }).correct = 'yes';
    const file = writeWorkerResult(home, bad);
    expect(() => workerResult(home, workerEvalSchema)({ type: 'result', file })!()).toThrow(
      /not the expected shape \(items\.2\.correct: /,
    );
    expect(fs.existsSync(file)).toBe(false);
  });

  it('result files left by a host that ended long ago are swept when a worker writes the next', () => {
    const dir = workerResultsDir(home);
    fs.mkdirSync(dir, { recursive: true });
    const old = path.join(dir, '1-1-aa.json');
    const recent = path.join(dir, `${Date.now()}-1-bb.json`);
    fs.writeFileSync(old, '{}');
    fs.writeFileSync(recent, '{}');
    const longAgo = new Date(Date.now() - 2 * 24 * 3600 * 1000);
    fs.utimesSync(old, longAgo, longAgo);
    const file = writeWorkerResult(home, evalResult(1));
    expect(fs.readdirSync(dir).sort()).toEqual([path.basename(recent), path.basename(file)].sort());
  });
});
