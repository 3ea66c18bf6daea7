/**
 * `show` tells the same status as `ls` and the app: a run whose run.json says `running` but whose writer is gone
 * (killed, crashed, its pid since reused) is shown `interrupted`, and run.json is left as written.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createRunFolder, readRunMeta, writeRunMeta } from '../../engine/runs/folder/runFolder';
import { cli } from '../helpers/cli';

let home: string;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-show-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

it('show says interrupted, not running, for a run whose writer is dead', async () => {
  const { dir, id } = createRunFolder(home, {
    algorithm: 'seqgrpo',
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  const dead = spawnSync(process.execPath, ['-e', '']).pid;
  writeRunMeta(dir, { ...readRunMeta(dir), status: 'running', pid: dead, statusAt: '2026-01-01T00:00:00.000Z' });
  fs.writeFileSync(
    path.join(dir, 'lock'),
    JSON.stringify({ pid: dead, host: os.hostname(), since: '2026-01-01T00:00:00.000Z' }),
  );
  const before = fs.readFileSync(path.join(dir, 'run.json'), 'utf8');

  const text = await cli(['show', id, '--home', home]);
  expect(text.code).toBe(0);
  expect(text.stdout).toContain('[interrupted]');
  const json = await cli(['show', id, '--home', home, '--json']);
  expect(JSON.parse(json.stdout).status).toBe('interrupted');
  expect(fs.readFileSync(path.join(dir, 'run.json'), 'utf8')).toBe(before);
});
