/**
 * Metric names are data: a metrics line may name a metric `constructor`, `toString` or `__proto__`. Plain objects used
 * as maps by name made such metrics vanish from summaries and wrote their statistics onto built-ins (Object.last,
 * Object.prototype.toString.min); every reader here keeps them as metrics and leaves the built-ins alone.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { summarizeMetrics } from '../../../engine/commands/runInspectCommands';
import { metricSeries } from '../../../engine/runs/summary/decimate';
import { metricsToCsv } from '../../../engine/runs/summary/exportCsv';
import { readJsonl } from '../../../engine/runs/folder/jsonl';
import {
  metricLineProblem,
  metricNames,
  toMetricPoint,
  type MetricPoint,
} from '../../../engine/runs/summary/metricPoint';
import { openRunIndex } from '../../../engine/runs/summary/runIndex';

const NAMES = ['constructor', 'toString', '__proto__', 'hasOwnProperty', 'valueOf'];

/** Lines as a writer would put them in metrics.jsonl (raw text: a JS object literal cannot hold an own "__proto__"). */
const LINES = [
  '{"step":1,"time":100,"reward":0.5,"constructor":1,"toString":2,"__proto__":3,"hasOwnProperty":4,"valueOf":null}',
  '{"step":2,"time":101,"reward":0.7,"constructor":5}',
  '{"step":3,"time":102,"toString":6,"__proto__":7}',
];

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-metric-names-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Built-ins the old code wrote onto: nothing may have been added to them. */
function builtInsUntouched(): void {
  for (const target of [
    Object,
    Object.prototype,
    Object.prototype.toString,
    Object.prototype.hasOwnProperty,
    Object.prototype.valueOf,
  ]) {
    for (const key of ['last', 'min', 'max']) {
      expect(Object.hasOwn(target, key), `${String((target as { name?: string }).name)}.${key}`).toBe(false);
    }
  }
  expect(Object.getPrototypeOf({})).toBe(Object.prototype);
}
afterEach(builtInsUntouched);

function points(): MetricPoint[] {
  const file = path.join(dir, 'metrics.jsonl');
  fs.writeFileSync(file, LINES.join('\n') + '\n');
  return readJsonl<Record<string, unknown>>(file, { validate: metricLineProblem }).records.map(toMetricPoint);
}

describe('metric names that are also names of built-ins', () => {
  it('are kept as own fields of a metric point', () => {
    const [first] = points();
    expect(metricNames(first!)).toEqual(['reward', ...NAMES]);
    expect(Object.getPrototypeOf(first)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(first, '__proto__')!.value).toBe(3);
    expect(first!.valueOf).toBeNaN(); // null in the file: the writer's NaN
  });

  it('are summarized like any other metric (show)', () => {
    const summary = summarizeMetrics(points());
    expect([...summary.keys()]).toEqual(['reward', 'constructor', 'toString', '__proto__', 'hasOwnProperty']);
    expect(summary.get('constructor')).toEqual({ last: 5, min: 1, max: 5 });
    expect(summary.get('toString')).toEqual({ last: 6, min: 2, max: 6 });
    expect(summary.get('__proto__')).toEqual({ last: 7, min: 3, max: 7 });
  });

  it('become CSV columns, empty where a line did not log them (not the text of a built-in)', () => {
    const csv = metricsToCsv(points());
    expect(csv.split('\n')).toEqual([
      'step,time,reward,constructor,toString,__proto__,hasOwnProperty,valueOf',
      '1,100,0.5,1,2,3,4,NaN',
      '2,101,0.7,5,,,,',
      '3,102,,,6,7,,',
      '',
    ]);
  });

  it('give series of the logged values only (charts)', () => {
    const pts = points();
    expect(metricSeries(pts, 'constructor')).toEqual([
      { x: 1, y: 1 },
      { x: 2, y: 5 },
    ]);
    expect(metricSeries(pts, 'toString')).toEqual([
      { x: 1, y: 2 },
      { x: 3, y: 6 },
    ]);
    expect(metricSeries(pts, '__proto__')).toEqual([
      { x: 1, y: 3 },
      { x: 3, y: 7 },
    ]);
  });

  it('are listed in the run index (ls) with their statistics', () => {
    const home = path.join(dir, 'home');
    const run = path.join(home, 'runs', '20261201-000000-names-0001');
    fs.mkdirSync(run, { recursive: true });
    fs.writeFileSync(
      path.join(run, 'run.json'),
      JSON.stringify({
        id: path.basename(run),
        createdAt: '2026-12-01T00:00:00Z',
        algorithm: 'seqgrpo',
        config: {},
        engineVersion: 'test',
        seed: 1,
        status: 'finished',
        statusAt: '2026-12-01T00:00:00Z',
        tags: [],
        notes: '',
      }),
    );
    fs.writeFileSync(path.join(run, 'metrics.jsonl'), LINES.join('\n') + '\n');
    // Built from the folder, then read back from index.json (the cache a second listing uses).
    for (const [summary] of [openRunIndex(home).list(), openRunIndex(home).list()]) {
      expect(Object.hasOwn(summary!.metrics, 'constructor')).toBe(true);
      expect(summary!.metrics.constructor).toEqual({ last: 5, min: 1, max: 5 });
      expect(Object.hasOwn(summary!.metrics, 'toString')).toBe(true);
      expect(summary!.metrics.toString).toEqual({ last: 6, min: 2, max: 6 });
      expect(Object.getOwnPropertyDescriptor(summary!.metrics, '__proto__')?.value).toEqual({
        last: 7,
        min: 3,
        max: 7,
      });
    }
  });
});
