/**
 * Every algorithm's runs show their held-out score, by the metric the algorithm declares (engine/runs/summary/headlineMetric.ts):
 * a MARS-like run (eval.exactMatch), a MARTI-like run (eval.pass1) and a seqgrpo run (eval.accuracy), crafted as run
 * folders with metrics lines, through `mars-lab ls --json`, `ls`, `show` and the host's listRuns (validated by the
 * api contract, which must not strip the field). Before the declaration, only eval.accuracy was read and MARS and MARTI
 * runs showed none.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiSchemas } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { cli } from '../helpers/cli';

let home: string;
const ids: Record<string, string> = {};

/** A run folder of `algorithm` whose metrics log two training lines and an evaluation of `evalMetrics`. */
function craftRun(
  algorithm: 'mars' | 'marti' | 'seqgrpo',
  preset: string,
  evalMetrics: Record<string, number>,
): string {
  const { id, dir } = createRunFolder(home, {
    algorithm,
    preset,
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  const time = 1_800_000_000;
  const lines = [
    { step: 1, time, reward: 0.1 },
    {
      step: 2,
      time: time + 1,
      reward: 0.2,
      ...Object.fromEntries(Object.entries(evalMetrics).map(([k, v]) => [`eval.${k}`, v])),
    },
  ];
  fs.writeFileSync(path.join(dir, 'metrics.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
  return id;
}

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-headline-'));
  // Each logs other eval.* metrics too, and none logs eval.accuracy except seqgrpo.
  ids.mars = craftRun('mars', 'mars-tiny', { exactMatch: 0.2561, f1: 0.4, answered: 0.9 });
  ids.marti = craftRun('marti', 'marti-homo', { pass1: 0.1406, pass1Greedy: 0.211, bestOfTree: 0.449 });
  ids.seqgrpo = craftRun('seqgrpo', 'seqgrpo-copy', { accuracy: 0.875 });
});

afterAll(() => {
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

const EXPECTED = {
  mars: { key: 'eval.exactMatch', label: 'exact match', value: 0.2561 },
  marti: { key: 'eval.pass1', label: 'pass@1', value: 0.1406 },
  seqgrpo: { key: 'eval.accuracy', label: 'accuracy', value: 0.875 },
} as const;

describe("a run's held-out score is its algorithm's headline metric", () => {
  it('in ls --json, and in the ls table with its label', async () => {
    const json = await cli(['ls', '--json', '--home', home]);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(0);
    const runs = JSON.parse(json.stdout) as { id: string; headline?: unknown }[];
    for (const [algorithm, expected] of Object.entries(EXPECTED)) {
      expect(runs.find((r) => r.id === ids[algorithm])?.headline).toEqual(expected);
    }

    const table = await cli(['ls', '--home', home]);
    expect(table.code).toBe(0);
    const rowOf = (algorithm: string): string => table.stdout.split('\n').find((l) => l.startsWith(ids[algorithm]!))!;
    expect(rowOf('mars')).toMatch(/0\.256 exact match/);
    expect(rowOf('marti')).toMatch(/0\.141 pass@1/);
    expect(rowOf('seqgrpo')).toMatch(/0\.875 accuracy/);
  }, 60_000);

  it('in show, on a line of its own', async () => {
    const shown = await cli(['show', ids.marti!, '--home', home]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toMatch(/held-out score: 0\.14060* pass@1 \(eval\.pass1\)/);
    const json = await cli(['show', ids.mars!, '--json', '--home', home]);
    expect(JSON.parse(json.stdout).headline).toEqual(EXPECTED.mars);
  }, 60_000);

  it("in the host's listRuns, through the api contract", async () => {
    const host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
    try {
      const listed = apiSchemas.listRuns.response.parse(await callApi(host.handlers, 'listRuns', {}));
      for (const [algorithm, expected] of Object.entries(EXPECTED)) {
        expect(listed.runs.find((r) => r.id === ids[algorithm])?.headline).toEqual(expected);
      }
    } finally {
      await host.close();
    }
  });

  it('a run not yet evaluated has its headline metric with no value', async () => {
    const { id } = createRunFolder(home, {
      algorithm: 'mars',
      config: {},
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    const host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
    try {
      const listed = apiSchemas.listRuns.response.parse(await callApi(host.handlers, 'listRuns', {}));
      expect(listed.runs.find((r) => r.id === id)?.headline).toEqual({
        key: 'eval.exactMatch',
        label: 'exact match',
        value: null,
      });
    } finally {
      await host.close();
    }
  });
});
