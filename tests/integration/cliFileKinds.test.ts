/**
 * Files the command line is named that are not regular files end it at once with one line (issue 34, finding 4, CLI
 * side): `train --config FIFO` and `model logits` on a checkpoint whose config.json is a FIFO used to wait forever in
 * open(), and `train --config /dev/zero` read until memory ran out (5 GB in 8 s). Each CLI runs under a generous
 * timeout: the old code is killed by it (and fails the test), the new one exits 2 in about its start-up time.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli';

let home: string;

/** `mars-lab …` killed after `timeoutMs`: its exit code (null when it had to be killed) and stderr. */
function cliWithin(args: string[], timeoutMs = 60_000): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, [BIN, ...args], { timeout: timeoutMs, killSignal: 'SIGKILL' }, () => {});
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

function fifo(file: string): string {
  expect(spawnSync('mkfifo', [file]).status).toBe(0);
  return file;
}

function expectOneLine(r: { code: number | null; stderr: string }, message: RegExp): void {
  expect(r.code, r.stderr).toBe(2);
  expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr).toMatch(message);
}

beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-cli-file-kinds-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe.skipIf(process.platform === 'win32')('files that are not regular files', () => {
  it('train --config FIFO exits with one line instead of waiting for a writer', async () => {
    const file = fifo(path.join(home, 'config.fifo'));
    expectOneLine(
      await cliWithin(['train', '--config', file, '--home', home]),
      /config\.fifo: the config is a FIFO, not a regular file/,
    );
  }, 90_000);

  it('train --config /dev/zero exits with one line instead of filling memory', async () => {
    expectOneLine(
      await cliWithin(['train', '--config', '/dev/zero', '--home', home]),
      /\/dev\/zero: the config is a device, not a regular file/,
    );
  }, 90_000);

  it("a --config that is not JSON is named without quoting the file's bytes (the parser's own message did)", async () => {
    const file = path.join(home, 'secret.txt');
    fs.writeFileSync(file, 'sekrit-token-4f2a: do not print me');
    const r = await cliWithin(['train', '--config', file, '--home', home]);
    expectOneLine(r, /secret\.txt: the config is not valid JSON/);
    expect(r.stderr).not.toMatch(/sekrit|do not print/);
  }, 90_000);

  it('model logits on a checkpoint whose config.json is a FIFO exits with one line', async () => {
    const ckpt = path.join(home, 'ckpt');
    const made = await cliWithin(['model', 'init', '--config', 'micro', '--out', ckpt]);
    expect(made.code, made.stderr).toBe(0);
    fs.rmSync(path.join(ckpt, 'config.json'));
    fifo(path.join(ckpt, 'config.json'));
    expectOneLine(
      await cliWithin(['model', 'logits', '--checkpoint', ckpt, '--ids', '1,2', '--backend', 'cpu']),
      /config\.json is a FIFO, not a regular file/,
    );
  }, 120_000);
});
