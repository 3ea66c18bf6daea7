/**
 * engine/api/views/metricColumns.ts reads a metric's column from metrics.jsonl by looking up the key's text in lines as the
 * run loop writes them, and JSON.parses any other line: its columns must equal what parsing every line gives (the
 * host's getMetricSeries), for NaN written as null, lines without the metric, a key whose text contains the metric's
 * (`"x\"reward"`), lines in another key order, a torn line in the middle, and a last line still being written; and it
 * must follow the file as it grows, and read it again when a resume cuts it back.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { metricColumn } from '../../../engine/api/views/metricColumns';
import { secondsPerStep, tailClock } from '../../../engine/api/views/runsSeries';
import { decimate, metricSeries } from '../../../engine/runs/summary/decimate';
import { toMetricPoint } from '../../../engine/runs/summary/metricPoint';
import { parsedColumn } from '../../helpers/metricReference';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-columns-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const LINES = [
  '{"step":1,"time":100,"reward":0.1,"loss":2}',
  '{"step":2,"time":101,"reward":null,"loss":1.5}',
  '{"step":3,"time":102,"loss":1.2}',
  '{"step":4,"time":103,"x\\"reward":9,"loss":1}',
  '{"time":104,"step":5,"reward":0.5}',
  '{"step":6,"time":105,"reward":0.6,"note":"a \\"reward\\":7"}',
  '{"step":7,"time":10', // torn by a kill, then the next line appended after it
  '{"step":8,"time":107,"reward":1e-7,"eval.reward":3}',
  '{"step":9,"time":108,"reward":-2.5E+3}',
];

describe('metric columns', () => {
  it('equal parsing every line, for every case the fast path skips or falls back on', () => {
    const file = path.join(dir, 'a.jsonl');
    const text =
      LINES.slice(0, 6).join('\n') + '\n' + LINES[6] + LINES[7] + '\n' + LINES[8] + '\n' + '{"step":10,"time":109,"rew';
    fs.writeFileSync(file, text);
    for (const key of ['reward', 'loss', 'eval.reward', 'x"reward', 'time']) {
      for (const x of ['step', 'time'] as const) {
        const got = metricColumn(`a-${key}`, file, key, x);
        expect({ x: got.x, y: got.y }, `${key} by ${x}`).toEqual(parsedColumn(text, key, x));
      }
    }
    expect(metricColumn('a', file, 'reward', 'step').x).toEqual([1, 2, 5, 6, 9]);
  });

  it('equal parsing every line in a log of only run-loop lines (read by searching the chunk for the key)', () => {
    const file = path.join(dir, 'fast.jsonl');
    // (LINES[5] has a string whose text holds `\"reward\":7`: escaped, so never the key)
    const text = [LINES[0], LINES[1], LINES[2], LINES[3], LINES[5], LINES[7], LINES[8]].join('\n') + '\n';
    fs.writeFileSync(file, text);
    for (const key of ['reward', 'loss', 'eval.reward', 'x"reward']) {
      for (const x of ['step', 'time'] as const) {
        const got = metricColumn(`fast-${key}`, file, key, x);
        expect({ x: got.x, y: got.y }, `${key} by ${x}`).toEqual(parsedColumn(text, key, x));
      }
    }
    expect(metricColumn('fast', file, 'reward', 'step').y).toEqual([0.1, NaN, 0.6, 1e-7, -2500]);
  });

  it('follows the file as it grows (the torn last line counts once written) and reads it again when cut back', () => {
    const file = path.join(dir, 'b.jsonl');
    fs.writeFileSync(file, LINES[0] + '\n' + '{"step":2,"time":101,"rew');
    expect(metricColumn('b', file, 'reward', 'step').x).toEqual([1]);
    fs.appendFileSync(file, 'ard":0.2}\n{"step":3,"time":102,"reward":0.3}\n');
    const grown = metricColumn('b', file, 'reward', 'step');
    expect(grown.x).toEqual([1, 2, 3]);
    expect(grown.y).toEqual([0.1, 0.2, 0.3]);
    // a resume cuts the log back to its checkpoint and writes on: the column follows the new file
    fs.writeFileSync(file, '{"step":1,"time":100,"reward":0.9}\n{"step":2,"time":200,"reward":0.8}\n');
    expect(metricColumn('b', file, 'reward', 'step').y).toEqual([0.9, 0.8]);
    // rewritten to the same length with other content
    fs.writeFileSync(file, '{"step":1,"time":100,"reward":0.7}\n{"step":2,"time":200,"reward":0.6}\n');
    expect(metricColumn('b', file, 'reward', 'step').y).toEqual([0.7, 0.6]);
  });

  it('decimates to the same buckets as the host for a long log', () => {
    const file = path.join(dir, 'c.jsonl');
    const lines = Array.from({ length: 5000 }, (_, i) =>
      JSON.stringify({
        step: i + 1,
        time: 1000 + i,
        reward: Math.sin(i / 7) + (i % 97 === 0 ? 5 : 0),
        loss: i % 13 === 0 ? null : 1 / (i + 1),
      }),
    );
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const points = lines.map((l) => toMetricPoint(JSON.parse(l) as Record<string, unknown>));
    for (const key of ['reward', 'loss']) {
      const c = metricColumn('c', file, key, 'step');
      expect(
        decimate(
          c.x.map((x, i) => ({ x, y: c.y[i]! })),
          300,
        ),
      ).toEqual(decimate(metricSeries(points, key), 300));
    }
    // the progress reads the end of the log only (a window that cuts a line): the last steps and their pace
    expect(fs.statSync(file).size).toBeGreaterThan(256 << 10);
    const clock = tailClock(file);
    expect(clock.at(-1)).toEqual({ step: 5000, time: 5999 });
    expect(clock.length).toBeLessThanOrEqual(22);
    expect(secondsPerStep(clock)).toBe(1);
  });
});
