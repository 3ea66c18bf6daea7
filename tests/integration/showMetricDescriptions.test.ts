/**
 * `mars-lab show` prints each metric's unit and one-line description (engine/pure/metricCatalog.ts) next to its
 * summary; a metric without a declaration is printed as before, with nothing after it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { cli } from '../helpers/cli';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-show-desc-'));
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('mars-lab show', () => {
  it("prints each declared metric's unit and description beside its summary", async () => {
    const { id, dir } = createRunFolder(home, {
      algorithm: 'marti',
      config: {},
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    fs.writeFileSync(
      path.join(dir, 'metrics.jsonl'),
      JSON.stringify({ step: 1, time: 1, reward: 0.25, 'agentReward.alpha': 0.5, mystery: 3, 'eval.pass1': 0.1 }) +
        '\n',
    );
    const shown = await cli(['show', id, '--home', home]);
    expect(shown.code).toBe(0);
    const line = (name: string) => shown.stdout.split('\n').find((l) => l.trimStart().startsWith(`${name} `))!;
    expect(line('reward')).toMatch(/max 0\.25000\s+\(score, 0–1\) mean public-test score of the step’s tree nodes$/);
    expect(line('agentReward.alpha')).toMatch(/\(score, 0–1\) mean public score of one agent’s nodes$/);
    expect(line('eval.pass1')).toMatch(/held-out pass@1/);
    expect(line('mystery')).toMatch(/max 3$/);
  }, 60_000);
});
