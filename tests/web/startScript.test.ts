/**
 * `npm start` without Electron's binary (as on the project's machines): one sentence saying so, then web mode with its
 * URL. Skipped where the binary is installed, since there it would open the desktop window.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isBuildFresh } from '../../scripts/buildStamp.mjs';

const electronInstalled =
  Boolean(process.env['ELECTRON_OVERRIDE_DIST_PATH']) ||
  (fs.existsSync('node_modules/electron/path.txt') &&
    fs.existsSync(
      path.join('node_modules/electron/dist', fs.readFileSync('node_modules/electron/path.txt', 'utf8').trim()),
    ));
// start.mjs rebuilds a stale build before it starts, which would outlast the test: npm test builds first.
const build = isBuildFresh();
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-start-'));
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe.skipIf(electronInstalled)('npm start without the Electron binary', () => {
  it('says so in one sentence and starts web mode, printing the URL with its token', async () => {
    expect(build.fresh ? '' : build.reason, 'run `npm run build` before this test (npm test does)').toBe('');
    const child = spawn(process.execPath, ['scripts/start.mjs', '--port', '0', '--home', home], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.resume();
    try {
      for (let i = 0; i < 600 && !/open http:\/\/\S+token=\S+/.test(out) && child.exitCode === null; i++) {
        await new Promise((r) => setTimeout(r, 100));
      }
      const lines = out.trim().split('\n');
      expect(lines[0]).toMatch(/^Electron's binary is not installed here .*web mode.*\.$/);
      expect(out).toMatch(/open http:\/\/127\.0\.0\.1:\d+\/\?token=[\w-]{20,}/);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  }, 90_000);
});
