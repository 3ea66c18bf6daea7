/**
 * getRunsMetricSeries (engine/api/views/runsSeries.ts), through the contract as a window calls it: several runs' series of
 * one metric at once, decimated to the width asked, each run with its progress (last step, budget.steps, recent seconds
 * per step for an ETA), and a run that is not there answers its own error without failing the others.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiSchemas } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { createRunFolder } from '../../engine/runs/folder/runFolder';

let home: string;
let host: Host;
const ids: string[] = [];

function craftRun(steps: number, secondsPerStep: number, seedShift: number): string {
  const { id, dir } = createRunFolder(home, {
    algorithm: 'seqgrpo',
    config: { budget: { steps: 500 } },
    engineVersion: '0',
    seed: seedShift,
    tags: ['arm-a'],
    notes: '',
  });
  const lines: string[] = [];
  for (let s = 1; s <= steps; s++) {
    lines.push(
      JSON.stringify({
        step: s,
        time: 1_800_000_000 + s * secondsPerStep,
        reward: s / steps + seedShift / 100,
        ...(s % 50 === 0 ? { 'eval.accuracy': s / 1000 } : {}),
      }),
    );
  }
  fs.writeFileSync(path.join(dir, 'metrics.jsonl'), lines.join('\n') + '\n');
  return id;
}

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-runs-series-'));
  ids.push(craftRun(300, 2, 1), craftRun(120, 0.5, 2));
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
});

afterAll(async () => {
  await host?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const call = async (params: unknown) =>
  apiSchemas.getRunsMetricSeries.response.parse(await callApi(host.handlers, 'getRunsMetricSeries', params));

describe('getRunsMetricSeries', () => {
  it("answers each run's series, decimated, with its progress", async () => {
    const { runs } = await call({ runIds: [...ids, 'no-such-run'], names: ['reward', 'eval.accuracy'], width: 100 });
    expect(runs.map((r) => r.runId)).toEqual([...ids, 'no-such-run']);
    const [a, b, missing] = runs;
    expect(a!.series.reward!.x.length).toBeLessThanOrEqual(100);
    expect(a!.series.reward!.x.at(-1)).toBe(300);
    expect(a!.series['eval.accuracy']!.x).toEqual([50, 100, 150, 200, 250, 300]);
    expect(b!.series.reward!.x.length).toBe(100);
    expect(a).toMatchObject({ lastStep: 300, totalSteps: 500, secondsPerStep: 2 });
    expect(b).toMatchObject({ lastStep: 120, totalSteps: 500, secondsPerStep: 0.5 });
    expect(missing!.error).toMatch(/no run 'no-such-run'/);
    expect(missing!.series).toEqual({});
  });

  it("lists each run's total steps (budget.steps) for the Runs table's step of total", async () => {
    const listed = apiSchemas.listRuns.response.parse(await callApi(host.handlers, 'listRuns', {}));
    expect(listed.runs.find((r) => r.id === ids[0])).toMatchObject({ steps: 300, totalSteps: 500 });
  });

  it('refuses more than 50 runs and a run id that climbs out of runs/', async () => {
    await expect(
      callApi(host.handlers, 'getRunsMetricSeries', {
        runIds: Array.from({ length: 51 }, (_, i) => `r${i}`),
        names: ['reward'],
      }),
    ).rejects.toThrow(/runIds/);
    await expect(
      callApi(host.handlers, 'getRunsMetricSeries', { runIds: ['../x'], names: ['reward'] }),
    ).rejects.toThrow(/runIds\.0/);
  });
});
