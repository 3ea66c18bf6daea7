/**
 * A metric named like a built-in (`__proto__`, `constructor`) is a series like any other in the window's answers:
 * assigning `series[name] = …` to a plain object dropped `__proto__` (it set the object's prototype instead).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { createRunFolder } from '../../engine/runs/folder/runFolder';

let home: string;
let host: Host;
let runId: string;
beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-proto-series-'));
  const run = createRunFolder(home, {
    algorithm: 'seqgrpo',
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  runId = run.id;
  const lines = [1, 2, 3].map(
    (step) => `{"step":${step},"time":${100 + step},"reward":${step / 10},"__proto__":${step},"constructor":${-step}}`,
  );
  fs.writeFileSync(path.join(run.dir, 'metrics.jsonl'), lines.join('\n') + '\n');
  host = await createHost({
    home,
    launcher: {
      launch: () => {
        throw new Error('no launches');
      },
    },
    transport: 'web',
  });
});
afterAll(async () => {
  await host.close();
  fs.rmSync(home, { recursive: true, force: true });
});

it('getMetricSeries and getRunsMetricSeries answer __proto__ and constructor as series', async () => {
  const one = (await callApi(host.handlers, 'getMetricSeries', { runId, width: 100 })) as {
    series: Record<string, { last: number[] }>;
  };
  expect(Object.hasOwn(one.series, '__proto__')).toBe(true);
  expect(one.series['__proto__']!.last).toEqual([1, 2, 3]);
  expect(Object.getPrototypeOf(one.series)).toBe(Object.prototype);
  expect(one.series['constructor']!.last).toEqual([-1, -2, -3]);
  const many = (await callApi(host.handlers, 'getRunsMetricSeries', {
    runIds: [runId],
    names: ['__proto__', 'reward'],
    width: 100,
  })) as {
    runs: { series: Record<string, { last: number[] }> }[];
  };
  expect(Object.hasOwn(many.runs[0]!.series, '__proto__')).toBe(true);
  expect(many.runs[0]!.series['__proto__']!.last).toEqual([1, 2, 3]);
});
