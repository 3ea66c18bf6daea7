/**
 * metricColumns (engine/api/views/metricColumns.ts) on awkward logs, against parsing every line (metricSeries of
 * toMetricPoint, as the host's getMetricSeries did): a torn line in the middle that still holds a complete member, a
 * string value holding `}`, prototype names, keys that are prefixes of others, exponents, NaN/Infinity as null or
 * strings; and several metrics read at once (one read of the file) equal each read alone, a key asked twice included.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import { clearMetricColumns, metricColumn, metricColumns } from '../../../engine/api/views/metricColumns';
import { parsedColumn } from '../../helpers/metricReference';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-columns-awkward-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
beforeEach(() => clearMetricColumns());

/** Lines as the run loop writes them, with the awkward ones among them (every line starts `{"step":`). */
const LINES = [
  '{"step":1,"time":100,"reward":0.5,"r":1,"reward2":2,"__proto__":3,"constructor":4}',
  '{"step":2,"time":101,"reward":1e-7,"r":null,"reward2":1E+21,"__proto__":null,"constructor":-0}',
  '{"step":3,"time":102,"reward":0.12,"lo',
  '{"step":4,"time":103,"reward":7,"note":"a}',
  '{"step":5,"time":104,"reward":"NaN","r":"Infinity","reward2":1e400}',
  '{"step":6,"time":105,"reward":0.30000000000000004,"r":-2.5e-3}',
  '{"step":7,"time":106,"reward":9,"r":8',
  '{"step":8,"time":107,"reward":3,"r":1}',
  '{"step":9,"time":108,"reward":3,"r":1,"reward":4,"time":109}',
  '{"step":10,"time":110,"r":2,"step":11}',
];
const KEYS = ['reward', 'r', 'reward2', '__proto__', 'constructor', 'toString', 'time', 'note'];

describe('metricColumns on awkward lines', () => {
  it('equal parsing every line, for each metric and x (repeated keys among lines read by JSON.parse)', () => {
    const file = path.join(dir, 'a.jsonl');
    const text = LINES.join('\n') + '\n{"step":12,"reward":5';
    fs.writeFileSync(file, text);
    for (const x of ['step', 'time'] as const) {
      for (const key of KEYS) {
        clearMetricColumns();
        const c = metricColumn('a', file, key, x);
        expect([key, x, { x: [...c.x], y: [...c.y] }]).toEqual([key, x, parsedColumn(text, key, x)]);
      }
    }
  });

  it('reads several metrics at once as each alone, a key asked twice included, and extends them as the file grows', () => {
    const file = path.join(dir, 'b.jsonl');
    let text = LINES.slice(0, 4).join('\n') + '\n';
    fs.writeFileSync(file, text);
    const asked = [...KEYS, 'reward'];
    let got = metricColumns('b', file, asked, 'step');
    expect(got.map((c) => ({ x: [...c.x], y: [...c.y] }))).toEqual(asked.map((k) => parsedColumn(text, k, 'step')));
    text += LINES.slice(4).join('\n') + '\n';
    fs.writeFileSync(file, text);
    // One metric read further alone first: the others are behind it, each group extended from its own offset.
    metricColumn('b', file, 'r', 'step');
    got = metricColumns('b', file, asked, 'step');
    expect(got.map((c) => ({ x: [...c.x], y: [...c.y] }))).toEqual(asked.map((k) => parsedColumn(text, k, 'step')));
  });
});
