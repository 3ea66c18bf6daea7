/**
 * `mars-lab compare` names its checkpoints the ways `show` names runs (issue 19): a run id or a unique id prefix (its
 * last checkpoint), RUN@STEP and RUN/checkpoints/STEP, and still a checkpoint folder; a step the run does not have is one
 * line naming the steps it has, exit code 2.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../helpers/cli';

let home: string;
let runA: string;
let runB: string;

async function train(label: string): Promise<string> {
  const r = await cli([
    'train',
    '--preset',
    'seqgrpo-copy',
    '--steps',
    '4',
    '--set',
    'checkpoint.every=2',
    '--set',
    'eval.items=8',
    '--set',
    'eval.every=0',
    '--set',
    `tags=["${label}"]`,
    '--home',
    home,
    '--json',
  ]);
  expect(r.code, r.stderr).toBe(0);
  const id = r.stdout
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { runId?: string })
    .find((m) => m.runId)?.runId;
  expect(id).toBeDefined();
  return id!;
}

interface CompareJson {
  a: { checkpoint: string };
  b: { checkpoint: string };
}

async function compare(a: string, b: string): Promise<CompareJson> {
  const r = await cli(['compare', a, b, '--json', '--home', home]);
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as CompareJson;
}

const stepOf = (checkpoint: string): string =>
  `${path.basename(path.dirname(path.dirname(checkpoint)))}/${path.basename(checkpoint)}`;

describe('compare takes run ids', () => {
  beforeAll(async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-compare-ids-'));
    runA = await train('a');
    runB = await train('b');
  });
  afterAll(() => {
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it("a run id is that run's last checkpoint; RUN@STEP and RUN/checkpoints/STEP that step", async () => {
    const c = await compare(runA, runB);
    expect(stepOf(c.a.checkpoint)).toBe(`${runA}/4`);
    expect(stepOf(c.b.checkpoint)).toBe(`${runB}/4`);
    const d = await compare(`${runA}@2`, `${runA}/checkpoints/4`);
    expect(stepOf(d.a.checkpoint)).toBe(`${runA}/2`);
    expect(stepOf(d.b.checkpoint)).toBe(`${runA}/4`);
  });

  it('a unique id prefix works as in show, and a checkpoint folder as before', async () => {
    const prefix = runB.slice(0, runB.length - 2);
    expect(fs.readdirSync(path.join(home, 'runs')).filter((n) => n.startsWith(prefix))).toEqual([runB]);
    const c = await compare(path.join(home, 'runs', runA, 'checkpoints', '2'), prefix);
    expect(stepOf(c.a.checkpoint)).toBe(`${runA}/2`);
    expect(stepOf(c.b.checkpoint)).toBe(`${runB}/4`);
  });

  it('a step the run has no checkpoint at is one line naming the steps it has, exit code 2', async () => {
    const r = await cli(['compare', `${runA}@3`, runB, '--home', home]);
    expect(r.code).toBe(2);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/has no checkpoint at step 3; it has steps 2, 4/);
  });
});
