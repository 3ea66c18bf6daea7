/**
 * A checkpoint folder whose weights are not a plain file (a FIFO, a device) is refused in one line before anything
 * reads it: evaluation hashed the weights for its cache key with a whole-file read, which waits for ever on a FIFO.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cli } from '../helpers/cli';

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-fifo-'));
  fs.copyFileSync('resources/mars/base-tiny/config.json', path.join(dir, 'config.json'));
  execFileSync('mkfifo', [path.join(dir, 'model.safetensors')]);
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

it('eval --checkpoint with a FIFO for model.safetensors fails in one line instead of hanging', async () => {
  const r = await cli(['eval', '--checkpoint', dir, '--preset', 'mars-tiny', '--home', dir]);
  expect(r.code).toBe(2);
  expect(r.stderr).toMatch(/model\.safetensors is not a regular file/);
  expect(r.stderr.trim().split('\n')).toHaveLength(1);
}, 30_000);
