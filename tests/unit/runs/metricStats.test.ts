/**
 * scanMetricStats (engine/runs/summary/metricStats.ts), the run index's summary of metrics.jsonl without JSON.parse of every
 * line, against the full parse it replaces (readJsonl + metricLineProblem + toMetricPoint, every metric's last/min/max)
 * on awkward lines: torn lines, prototype names, keys that are prefixes of others, exponents, null and strings for
 * NaN/Infinity, repeated keys, escapes, spaces, numbers JSON refuses, chunk boundaries, and random lines.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { readJsonl } from '../../../engine/runs/folder/jsonl';
import { metricLineProblem, metricNames, ownEntry, toMetricPoint } from '../../../engine/runs/summary/metricPoint';
import { scanMetricStats, type MetricsSummary, type MetricStats } from '../../../engine/runs/summary/metricStats';

let dir: string;
beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-metricstats-'));
});
afterEach(() => {
  fs.rmSync(dir, { recursive: true, force: true });
});

/** The summary as the index built it before: every complete line JSON.parsed and made a MetricPoint. */
function fullParse(file: string): MetricsSummary & { end: number } {
  const read = readJsonl<Record<string, unknown>>(file, { tail: true, validate: metricLineProblem });
  const out: MetricsSummary & { end: number } = { steps: null, metrics: {}, lines: 0, end: read.end };
  for (const record of read.records) {
    const point = toMetricPoint(record);
    out.steps = point.step;
    out.lines++;
    for (const name of metricNames(point)) {
      const v = point[name]!;
      const s = ownEntry<MetricStats>(out.metrics, name, () => ({ last: null, min: null, max: null }));
      if (Number.isFinite(v)) {
        s.last = v;
        s.min = s.min === null ? v : Math.min(s.min, v);
        s.max = s.max === null ? v : Math.max(s.max, v);
      } else s.last = null;
    }
  }
  return out;
}

function scanned(file: string, chunk?: number): MetricsSummary & { end: number } {
  const summary: MetricsSummary = { steps: null, metrics: {}, lines: 0 };
  const { end } = scanMetricStats(file, 0, 1, summary, chunk);
  return { ...summary, end };
}

/** Same values, same own keys in the same order (Object.is: -0 is not 0). */
function expectSame(a: MetricsSummary & { end: number }, b: MetricsSummary & { end: number }): void {
  expect(Object.keys(a.metrics)).toEqual(Object.keys(b.metrics));
  for (const k of Object.keys(b.metrics)) {
    const x = Object.getOwnPropertyDescriptor(a.metrics, k)!.value as MetricStats;
    const y = Object.getOwnPropertyDescriptor(b.metrics, k)!.value as MetricStats;
    for (const f of ['last', 'min', 'max'] as const) {
      expect([k, f, Object.is(x[f], y[f]) ? 'same' : `${x[f]} vs ${y[f]}`]).toEqual([k, f, 'same']);
    }
  }
  expect({ steps: a.steps, lines: a.lines, end: a.end }).toEqual({ steps: b.steps, lines: b.lines, end: b.end });
}

const AWKWARD = [
  '{"step":1,"time":1800000000.8,"reward":0.5,"r":1,"reward2":2,"rew":3}',
  '{"step":2,"time":1800000001.6,"reward":0.8414709848078965,"loss":1e-7,"big":1E+21,"tiny":5e-324,"max":1.7976931348623157e308}',
  '{"step":3,"reward":1e400,"loss":-1e400,"neg0":-0,"z":0.30000000000000004,"huge":123456789012345678,"e":2.5e-30}',
  '{"step":4,"__proto__":1,"constructor":2,"toString":3,"hasOwnProperty":4}',
  '{"step":5,"__proto__":null,"constructor":"x","reward":null}',
  '{"step":6,"reward":"NaN","loss":"Infinity","gradNorm":"-Infinity"}',
  '{"step":7,"reward":0.12,"lo',
  '{"step":8,"reward":0.25',
  '{"step":9,"a":1,"a":5,"b":2}',
  '{"step":10,"a\\"b":1,"c\\\\d":2,"\\u0041":3,"A":4}',
  '{ "step": 11, "spaced" : 1 }',
  '{"step":12,"x":1}   ',
  '{"step":13,"x":2}\r',
  '',
  '   ',
  '{"step":14,"bad":01}',
  '{"step":15,"bad":+1}',
  '{"step":16,"bad":.5}',
  '{"step":17,"bad":5.}',
  '{"step":18,"bad":0x10}',
  '{"step":19,"bad":Infinity}',
  '{"step":20,"bad":NaN}',
  '{"time":21,"nostep":1}',
  '{"step":null,"x":9}',
  '{"step":"22","x":9}',
  '{"reward":0.75,"step":23,"x":-3}',
  '{"step":24,"flag":true,"nested":{"a":1},"arr":[1,2],"x":4}',
  '[1,2]',
  '5',
  '"text"',
  'null',
  '{"step":25,"time":null,"x":5}',
  '{"step":26,"time":"noon","x":6}',
  '{"step":27,"1":1,"0":2,"réward":3,"😀":4}',
  '{"step":1e2,"x":7}',
  '{"step":28.5,"x":-0.0}',
  '{"step":29,"x":1.0e0,"y":-12.5E-3}',
  '{"step":30,"x":1}{"step":31}',
  '{"step":32,"x":1},{"step":33}',
  '{"step":34}',
  '{}',
  '{"step":35,"":1}',
  '{"step":36,"x":1,}',
  '{"step":37,"x":1 ,"y":2}',
  '{"step":-0,"x":8}',
  '{"step":38,"\\u0041":3,"B":1}',
  '{"step":39,"c\\\\d":2}',
  '{"step":40,"tab\tkey":2}',
];

describe('scanMetricStats', () => {
  it('summarises awkward lines exactly as parsing every line does', () => {
    const file = path.join(dir, 'metrics.jsonl');
    fs.writeFileSync(file, AWKWARD.join('\n') + '\n{"step":99,"torn":1');
    const want = fullParse(file);
    expect(want.lines).toBeGreaterThan(20);
    expectSame(scanned(file), want);
    // Small reads: lines cross the chunk boundaries, and a line longer than a chunk is read by itself.
    for (const chunk of [1, 7, 33, 100]) expectSame(scanned(file, chunk), want);
  });

  it('continues from an offset and a line number as one scan would', () => {
    const file = path.join(dir, 'metrics.jsonl');
    const half = AWKWARD.slice(0, 20).join('\n') + '\n';
    fs.writeFileSync(file, half);
    const summary: MetricsSummary = { steps: null, metrics: {}, lines: 0 };
    const first = scanMetricStats(file, 0, 1, summary);
    expect(first).toEqual({ end: Buffer.byteLength(half), nextLine: 21 });
    fs.appendFileSync(file, AWKWARD.slice(20).join('\n') + '\n{"step":77,"x"');
    const second = scanMetricStats(file, first.end, first.nextLine, summary);
    expectSame({ ...summary, end: second.end }, fullParse(file));
    expect(second.nextLine).toBe(AWKWARD.length + 1);
  });

  it('reads a missing file, or one shorter than the offset, as nothing', () => {
    const summary: MetricsSummary = { steps: null, metrics: {}, lines: 0 };
    expect(scanMetricStats(path.join(dir, 'none.jsonl'), 0, 1, summary)).toEqual({ end: 0, nextLine: 1 });
    const file = path.join(dir, 'metrics.jsonl');
    fs.writeFileSync(file, '{"step":1,"x":1}\n');
    expect(scanMetricStats(file, 100, 5, summary)).toEqual({ end: 100, nextLine: 5 });
    expect(summary).toEqual({ steps: null, metrics: {}, lines: 0 });
  });

  it('agrees with the full parse on random lines made of awkward pieces', () => {
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    const keys = ['step', 'time', 'reward', 'rew', 'reward2', '__proto__', 'constructor', 'a"b', 'x', '1'];
    const values = [
      '0',
      '-0',
      '1',
      '0.1',
      '-2.5e-3',
      '1e308',
      '1e309',
      '123456789012345678',
      '9007199254740993',
      '0.8414709848078965',
      'null',
      '"NaN"',
      'true',
      '01',
      '.5',
      '1e',
      '-',
      '[1]',
      '{"a":1}',
      '4.35e-5',
      '17E2',
    ];
    const lines: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const members = [`"step":${rand(10) === 0 ? values[rand(values.length)] : i}`];
      for (let m = rand(6); m > 0; m--) {
        members.push(`${JSON.stringify(keys[rand(keys.length)])}:${values[rand(values.length)]}`);
      }
      if (rand(3) === 0) members.push(`"x":${values[rand(4)]}`);
      let line = `{${members.join(',')}}`;
      if (rand(40) === 0) line = line.slice(0, rand(line.length));
      if (rand(60) === 0) line = ` ${line}`;
      lines.push(line);
    }
    const file = path.join(dir, 'metrics.jsonl');
    fs.writeFileSync(file, lines.join('\n') + '\n');
    const want = fullParse(file);
    expect(want.lines).toBeGreaterThan(1000);
    expectSame(scanned(file), want);
    expectSame(scanned(file, 4096), want);
  });
});
