/**
 * getRun and getMetricSeries read a run's metrics through the run index (names, lines, last step) and the column reader
 * (only the metrics asked), not by parsing the whole log into points: their answers must equal what parsing every line
 * gives, on a log with awkward lines (a torn line in the middle, prototype names, keys that are prefixes of others,
 * exponents, NaN as null, strings for NaN/Infinity, a line not as the run loop writes it), for x by step and by time,
 * zoomed or not, and after the log grows.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { decimate, metricSeries } from '../../engine/runs/summary/decimate';
import { readJsonl } from '../../engine/runs/folder/jsonl';
import { metricLineProblem, metricNames, setOwn, toMetricPoint } from '../../engine/runs/summary/metricPoint';
import { createRunFolder } from '../../engine/runs/folder/runFolder';

const noLaunches: RunLauncher = {
  launch() {
    throw new Error('this test launches nothing');
  },
};

const LINES = [
  '{"step":1,"time":100,"reward":0.5,"r":1,"reward2":2,"__proto__":3,"constructor":4}',
  '{"step":2,"time":101,"reward":1e-7,"r":null,"reward2":1E+21,"__proto__":null,"constructor":-0}',
  '{"step":3,"time":102,"reward":0.12,"lo',
  '{"step":4,"time":103,"reward":"NaN","r":"Infinity","reward2":1e400,"toString":5}',
  '{"time":104,"step":5,"reward":0.30000000000000004,"r":-2.5e-3, "spaced": 1}',
  '{"step":6,"time":105,"reward":9,"r":8,"eval.accuracy":0.75}',
];

let home: string;
let host: Host;
let runId: string;
let file: string;
beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-host-metrics-'));
  const run = createRunFolder(home, {
    algorithm: 'seqgrpo',
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  runId = run.id;
  file = path.join(run.dir, 'metrics.jsonl');
  fs.writeFileSync(file, LINES.join('\n') + '\n{"step":7,"reward":4');
  host = await createHost({ home, launcher: noLaunches, transport: 'web' });
});
afterAll(async () => {
  await host.close();
  fs.rmSync(home, { recursive: true, force: true });
});

/** What the host answered when it parsed every line into points. */
function expected(x: 'step' | 'time', width: number, zoom: { xMin?: number; xMax?: number } = {}) {
  const points = readJsonl<Record<string, unknown>>(file, { tail: true, validate: metricLineProblem }).records.map(
    toMetricPoint,
  );
  const names = [...new Set(points.flatMap((p) => metricNames(p)))];
  const series: Record<string, unknown> = {};
  for (const name of names) {
    const b = decimate(metricSeries(points, name, { x }), width, zoom);
    // defined, not assigned: a metric named __proto__ is a series like the others (tests/web/prototypeSeries.test.ts)
    setOwn(series, name, {
      x: b.map((v) => v.x),
      min: b.map((v) => v.min),
      max: b.map((v) => v.max),
      last: b.map((v) => v.last),
    });
  }
  return { names: names.sort(), points: points.length, lastStep: points.at(-1)?.step ?? null, series };
}

async function check(): Promise<void> {
  const run = (await callApi(host.handlers, 'getRun', { runId })) as {
    metricNames: string[];
    metricPoints: number;
    lastStep: number | null;
  };
  for (const x of ['step', 'time'] as const) {
    for (const [width, zoom] of [
      [1000, {}],
      [2, {}],
      [1000, x === 'step' ? { xMin: 2, xMax: 5 } : { xMin: 101, xMax: 104 }],
    ] as const) {
      const want = expected(x, width, zoom);
      expect({ metricNames: run.metricNames, metricPoints: run.metricPoints, lastStep: run.lastStep }).toEqual({
        metricNames: want.names,
        metricPoints: want.points,
        lastStep: want.lastStep,
      });
      const got = (await callApi(host.handlers, 'getMetricSeries', { runId, x, width, ...zoom })) as {
        points: number;
        lastStep: number | null;
        series: Record<string, unknown>;
      };
      expect({ points: got.points, lastStep: got.lastStep }).toEqual({ points: want.points, lastStep: want.lastStep });
      expect(Object.keys(got.series).sort()).toEqual(Object.keys(want.series).sort());
      for (const name of Object.keys(want.series)) {
        expect([x, width, name, Object.getOwnPropertyDescriptor(got.series, name)?.value]).toEqual([
          x,
          width,
          name,
          want.series[name],
        ]);
      }
    }
  }
}

describe('getRun and getMetricSeries without parsing the whole log', () => {
  it('answer as parsing every line does', async () => {
    await check();
  });

  it('still do after the log grows (the torn last line completed, more lines)', async () => {
    fs.appendFileSync(file, ',"loss":1}\n{"step":8,"time":107,"reward":-1e-300,"constructor":7}\n');
    await check();
  });
});
