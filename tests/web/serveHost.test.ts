/**
 * `mars-lab serve --host` beyond loopback says what it costs (issue 15): refused with one line naming --allow-remote and
 * the SSH tunnel unless that flag is given; with it, the warning (cleartext HTTP, the token readable on the network,
 * the tunnel instead) goes to stderr, also with --json. The address used, 192.0.2.1 (TEST-NET-1), is on no interface
 * here, so nothing is ever exposed: the allowed bind fails with one line too. A loopback name binds without a warning.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { BIN, cli } from '../helpers/cli';

const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-serve-host-'));
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));
const built = fs.existsSync('out/renderer/index.html');

/** Runs `mars-lab serve …` until it exits or prints its first stdout line (then stops it); returns what it printed. */
async function serveUntilUrl(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, [BIN, 'serve', ...args, '--home', home], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => {
    stdout += c;
    if (stdout.includes('\n')) child.kill('SIGTERM');
  });
  child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
  return { code, stdout, stderr };
}

describe('serve --host beyond loopback', () => {
  it('is refused without --allow-remote, in one line naming the flag and the SSH tunnel, before anything starts', async () => {
    for (const json of [[], ['--json']]) {
      const r = await cli(['serve', '--host', '192.0.2.1', '--port', '4790', '--home', home, ...json]);
      expect(r.code).toBe(2);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(
        /^mars-lab: --host 192\.0\.2\.1 .*cleartext HTTP.*ssh -L 4790:127\.0\.0\.1:4790 .*--allow-remote/,
      );
    }
  });

  it('with --allow-remote, warns on stderr (also with --json, whose stdout stays JSON), then binds or says in one line why not', async () => {
    for (const json of [[], ['--json']]) {
      const r = await serveUntilUrl(['--host', '192.0.2.1', '--allow-remote', '--port', '0', ...json]);
      expect(r.stderr).toMatch(/warning: binding 192\.0\.2\.1.*cleartext HTTP.*token.*ssh -L 4780:127\.0\.0\.1:4780/);
      // This machine has no such address: one line saying so (or, where non-local binds are allowed, the URL).
      if (r.stdout === '') {
        expect(r.code).toBe(2);
        expect(r.stderr.trim().split('\n').at(-1)).toMatch(/^mars-lab: cannot listen on 192\.0\.2\.1 .*EADDRNOTAVAIL/);
      } else if (json.length > 0) {
        expect(() => JSON.parse(r.stdout.split('\n')[0]!)).not.toThrow();
      }
      expect(r.stdout).not.toMatch(/warning/);
    }
  });

  it.skipIf(!built)('binds a loopback name without a warning', async () => {
    const r = await serveUntilUrl(['--host', 'localhost', '--port', '0', '--json']);
    const printed = JSON.parse(r.stdout.split('\n')[0]!) as { url: string };
    expect(printed.url).toMatch(/^http:\/\/localhost:\d+\/\?token=[\w-]{32,}$/);
    expect(r.stderr).not.toMatch(/warning/);
  });
});
