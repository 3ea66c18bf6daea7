/** Ctrl-C on `train` finishes the step in flight, writes a checkpoint, marks the run stopped and exits cleanly. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listCheckpoints, readRunMeta } from '../../engine/runs/folder/runFolder';
import { spawnCli } from '../helpers/cli';
import { quickConfig } from '../helpers/runFixtures';

let home: string;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-sigint-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('Ctrl-C', () => {
  it('checkpoints the step it stopped on and exits with status 0', async () => {
    const cfg = path.join(home, 'c.json');
    fs.writeFileSync(cfg, JSON.stringify(quickConfig({ steps: 5000, checkpointEvery: 1000 })));
    const lines: { type: string; step?: number; status?: string; dir?: string }[] = [];
    const { child, exited } = spawnCli(['train', '--config', cfg, '--home', home, '--json'], {}, (l) => {
      lines.push(JSON.parse(l));
      if (lines.length === 3) child.kill('SIGINT');
    });
    expect(await exited).toBe(0);
    const done = lines.at(-1)!;
    expect(done).toMatchObject({ type: 'done', status: 'stopped' });
    const lastProgress = lines.filter((l) => l.type === 'progress').at(-1)!;
    expect(done.step).toBe(lastProgress.step);
    expect(listCheckpoints(done.dir!).map((c) => c.step)).toEqual([done.step]);
    expect(readRunMeta(done.dir!).status).toBe('stopped');
  }, 60_000);
});
