/**
 * `mars-lab import verl|marti` and `mars-lab export --to` as a user runs them: an imported verl run opens through the
 * host the app uses (engine/api: listRuns, getRun, getTrajectories, getMetricSeries) with its groups and recomputed
 * advantages; bad input is one line and exit code 2; `export --to verl` prints what does not map and writes a script.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { cli } from '../helpers/cli';
import {
  chatPrompt,
  PyFloat,
  writeMartiCall,
  martiCodePrompt,
  writeVerlFileLogger,
  writeVerlStep,
} from '../unit/interop/trainerFormats';

/** A call as a window makes it: through the contract's request validation (engine/api/host/dispatch.ts). */
const api = <T>(host: Host, method: string, req: object): Promise<T> =>
  callApi(host.handlers, method, req) as Promise<T>;

const noLaunches: RunLauncher = {
  launch() {
    throw new Error('this test launches nothing');
  },
};

let tmp: string;
let home: string;
beforeAll(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-interop-cli-'));
  home = path.join(tmp, 'home');
});
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

describe('mars-lab import', () => {
  it('import verl: the run opens through the host with its groups, recomputed advantages and metrics', async () => {
    const exp = path.join(tmp, 'verl-exp');
    const q = [chatPrompt('What is 12 + 30?'), chatPrompt('What is 5 × 5?')];
    for (const step of [1, 2, 3]) {
      writeVerlStep(
        path.join(exp, 'rollouts'),
        step,
        [0, 1, 2].flatMap((k) =>
          q.map((input, p) => ({
            input,
            output: `try ${k} #### ${p ? 25 : 42}`,
            gts: p ? '25' : '42',
            score: new PyFloat(k === step % 3 ? 1 : 0),
            extra: { acc: k === step % 3 },
          })),
        ),
      );
    }
    writeVerlFileLogger(
      path.join(exp, 'metrics.jsonl'),
      [1, 2, 3].map((step) => ({
        step,
        elapsed: step * 60,
        data: { 'actor/pg_loss': 0.01 * step, 'response_length/mean': new PyFloat(120) },
      })),
    );
    const r = await cli(['import', 'verl', exp, '--id', 'verl-import', '--home', home]);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^imported 18 samples over 3 steps as run verl-import/);

    const host: Host = await createHost({ home, launcher: noLaunches, transport: 'web' });
    try {
      const { runs } = await api<{ runs: { id: string; algorithm?: string; status: string }[] }>(host, 'listRuns', {});
      expect(runs.find((x) => x.id === 'verl-import')).toMatchObject({ algorithm: 'verl', status: 'finished' });
      const run = await api<{ trajectories: number; metricNames: string[]; meta: unknown }>(host, 'getRun', {
        runId: 'verl-import',
      });
      expect(run.trajectories).toBe(18);
      expect(run.metricNames).toEqual(expect.arrayContaining(['reward', 'actor/pg_loss', 'response_length/mean']));
      expect(
        (run.meta as { imported?: { advantages?: { recomputed?: boolean } } }).imported?.advantages?.recomputed,
      ).toBe(true);
      const series = await api<{ series: Record<string, { last: number[] }> }>(host, 'getMetricSeries', {
        runId: 'verl-import',
        names: ['reward'],
        x: 'step',
        width: 100,
      });
      expect(series.series['reward']!.last).toEqual([1 / 3, 1 / 3, 1 / 3]);
      const page = await api<{ records: unknown[] }>(host, 'getTrajectories', { runId: 'verl-import', step: 2 });
      const recs = page.records as {
        kind: string;
        questionId: string;
        reward: number;
        advantage: number;
        advantageRecomputed: boolean;
      }[];
      expect(recs).toHaveLength(6);
      expect(recs.every((x) => x.kind === 'mars.episode' && x.advantageRecomputed)).toBe(true);
      // each prompt is a group of three: one right answer (score 1) and two wrong ones
      const a = 2 / 3 / (Math.sqrt(1 / 3) + 1e-6);
      for (const id of new Set(recs.map((x) => x.questionId))) {
        const g = recs.filter((x) => x.questionId === id);
        expect(g.map((x) => x.reward).sort()).toEqual([0, 0, 1]);
        expect(g.find((x) => x.reward === 1)!.advantage).toBeCloseTo(a, 9);
      }
    } finally {
      await host.close();
    }
  });

  it('import marti: trees per step, listed as a marti run', async () => {
    const save = path.join(tmp, 'marti-save');
    const problem = 'Sort the list.';
    for (const [k, stamp] of ['20260401_120000_001', '20260401_120000_002'].entries()) {
      writeMartiCall(save, 0, {
        agentId: String(k),
        messages: martiCodePrompt(problem),
        actionText: '```python\nprint(sorted(x))\n```',
        actionTokens: [1, 2],
        actionLogProbs: [-0.5, -0.25],
        stamp,
      });
    }
    const r = await cli(['import', 'marti', save, '--nodes', '2', '--id', 'marti-import', '--home', home, '--json']);
    expect(r.code).toBe(0);
    const out = r.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { type: string; bytes?: number; totalBytes?: number });
    expect(out.at(-1)).toMatchObject({ type: 'imported', runId: 'marti-import', records: 2, steps: 1 });
    // progress over the bytes read, the last report at the end
    const progress = out.filter((l) => l.type === 'progress');
    expect(progress.length).toBeGreaterThan(0);
    expect(progress.at(-1)!.bytes).toBe(progress.at(-1)!.totalBytes);
    const host: Host = await createHost({ home, launcher: noLaunches, transport: 'web' });
    try {
      const page = await api<{ records: unknown[] }>(host, 'getTrajectories', { runId: 'marti-import', step: 1 });
      expect(page.records).toEqual([expect.objectContaining({ kind: 'marti.tree', agents: ['0', '1'] })]);
    } finally {
      await host.close();
    }
  });

  it('bad input: one line naming the folder and the fix, exit code 2, no run left behind', async () => {
    const empty = path.join(tmp, 'nothing-here');
    fs.mkdirSync(empty);
    const before = fs.readdirSync(path.join(home, 'runs'));
    for (const args of [
      ['import', 'verl', empty, '--home', home],
      ['import', 'marti', empty, '--home', home],
      ['import', 'verl', path.join(tmp, 'missing'), '--home', home],
    ]) {
      const r = await cli(args);
      expect(r.code).toBe(2);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^mars-lab: import (verl|marti): .*(rollout_data_dir|save_path)/);
    }
    expect(fs.readdirSync(path.join(home, 'runs'))).toEqual(before);
  });
});

describe('mars-lab export --to', () => {
  it('prints the table of what does not map, writes a valid script; --csv still works', async () => {
    const config = resolvePresetConfig('seqgrpo-copy');
    createRunFolder(
      home,
      {
        algorithm: config.algorithm,
        preset: 'seqgrpo-copy',
        config,
        engineVersion: 'test',
        seed: 0,
        tags: [],
        notes: '',
      },
      { id: 'to-export' },
    );
    const out = path.join(tmp, 'exported');
    const r = await cli([
      'export',
      'to-export',
      '--to',
      'verl',
      '--out',
      out,
      '--model',
      'Qwen/Qwen2.5-0.5B-Instruct',
      '--home',
      home,
    ]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Not mapped \(\d+\):\nmars-lab setting +value +why it does not map to verl/);
    expect(r.stdout).toMatch(/\ntask\.length +3 +the toy task/);
    execFileSync('bash', ['-n', path.join(out, 'launch.sh')]);
    expect(fs.readFileSync(path.join(out, 'launch.sh'), 'utf8')).toContain('then MODEL=Qwen/Qwen2.5-0.5B-Instruct; fi');
    const both = await cli(['export', 'to-export', '--to', 'verl', '--csv', '--home', home]);
    expect(both.code).toBe(2);
    expect(both.stderr).toMatch(/^mars-lab: export: give exactly one of --csv or --to verl\|marti\n$/);
    const csv = await cli(['export', 'to-export', '--csv', '--home', home]);
    expect(csv.code).toBe(0);
  });
});
