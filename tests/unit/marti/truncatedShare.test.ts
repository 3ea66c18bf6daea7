/**
 * MARTI's truncatedShare (issue 33, item 4): the share of a step's programs cut before their end token, which the run
 * page warns about past 50 %. On real runs from the shipped base it equals the share of the step's non-root nodes
 * whose recorded finish is not 'stop' in trajectories.jsonl, and the base's programs (about 13 tokens) are
 * cut at a budget of 4 tokens and hardly at 48.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig, type RunConfigInput } from '../../../engine/runs/config/configSchema';
import { runFilePaths } from '../../../engine/runs/folder/runFolder';
import { startRun } from '../../../engine/runs/runLoop';
import { useBackend } from '../../helpers/backends';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-truncated-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

const config = (maxProgramTokens: number): RunConfigInput => ({
  algorithm: 'marti',
  seed: 3,
  backend: 'wasm',
  model: { size: 'tiny', from: { kind: 'checkpoint', path: 'resources/marti/base-tiny' } },
  task: { trainTasks: 10, maxProgramTokens },
  marti: { configuration: 'homogeneous', problemsPerStep: 4, nodesPerTree: 4, trainBatch: 2, evalNodes: 2 },
  budget: { steps: 2 },
  eval: { every: 0, items: 2 },
  checkpoint: { every: 2 },
});

/** Each step's truncatedShare, and the share its tree records give. */
async function shares(maxProgramTokens: number): Promise<{ logged: number[]; recorded: number[] }> {
  const outcome = await startRun(home, parseRunConfig(config(maxProgramTokens)));
  const files = runFilePaths(outcome.dir);
  const read = (f: string) =>
    fs
      .readFileSync(f, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, unknown>);
  const lines = read(files.metrics) as { step: number; truncatedShare: number }[];
  const trees = read(files.trajectories) as { step: number; mode: string; nodes: { finish: string | null }[] }[];
  const recorded = lines.map((l) => {
    const nodes = trees
      .filter((t) => t.step === l.step && t.mode === 'train')
      .flatMap((t) => t.nodes.filter((n) => n.finish !== null));
    return nodes.filter((n) => n.finish !== 'stop').length / nodes.length;
  });
  return { logged: lines.map((l) => l.truncatedShare), recorded };
}

describe('truncatedShare', () => {
  it('equals the recorded share of programs that did not stop, and grows as the budget shrinks', async () => {
    const short = await shares(4);
    const long = await shares(48);
    for (const s of [short, long]) {
      expect(s.logged).toHaveLength(2);
      s.logged.forEach((v, i) => expect(v).toBeCloseTo(s.recorded[i]!, 12));
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    console.log(`truncatedShare at 4 tokens ${short.logged.join(' ')}; at 48 ${long.logged.join(' ')}`);
    expect(mean(short.logged)).toBeGreaterThan(0.8);
    expect(mean(long.logged)).toBeLessThan(0.2);
  }, 180_000);
});
