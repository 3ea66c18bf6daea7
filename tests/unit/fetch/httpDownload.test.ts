/**
 * The resumable download against a server on loopback: a transfer cut mid-way keeps its bytes in the part file and
 * the next call asks for the rest with a Range request; a server that ignores ranges restarts the file; a part that is
 * already whole is done on a 416; an error status and a server that is not there are told apart (the caller hands
 * the second to pip).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CutDownload, downloadResumable, HttpStatus, NoConnection } from '../../../engine/fetch/httpDownload';
import { memberBytes, sha256 } from './tinyWheel';

const FILE = Buffer.from(memberBytes(400_000));

interface ServerOpts {
  /** Requests (0-based) whose body is cut after this many bytes. */
  cutAt?: Map<number, number>;
  ignoreRange?: boolean;
  status?: number;
}

let dir: string;
let server: http.Server;
let ranges: (string | undefined)[];

function serve(opts: ServerOpts = {}): Promise<string> {
  ranges = [];
  server = http.createServer((req, res) => {
    const n = ranges.length;
    ranges.push(req.headers.range);
    if (opts.status) {
      res.writeHead(opts.status).end('no');
      return;
    }
    const m = /^bytes=(\d+)-$/.exec(req.headers.range ?? '');
    let start = 0;
    if (m && !opts.ignoreRange) {
      start = Number(m[1]);
      if (start >= FILE.length) {
        res.writeHead(416, { 'content-range': `bytes */${FILE.length}` }).end();
        return;
      }
      res.writeHead(206, {
        'content-length': FILE.length - start,
        'content-range': `bytes ${start}-${FILE.length - 1}/${FILE.length}`,
      });
    } else {
      res.writeHead(200, { 'content-length': FILE.length });
    }
    const cut = opts.cutAt?.get(n);
    if (cut === undefined) {
      res.end(FILE.subarray(start));
      return;
    }
    res.write(FILE.subarray(start, start + cut), () => setTimeout(() => res.destroy(), 50));
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/w.whl`)),
  );
}

beforeEach(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-http-'));
});
afterEach(async () => {
  await new Promise<void>((resolve) => (server?.listening ? server.close(() => resolve()) : resolve()));
  server?.closeAllConnections();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('downloadResumable', () => {
  it('keeps the bytes of a cut transfer and fetches only the rest the next time', async () => {
    const url = await serve({ cutAt: new Map([[0, 150_000]]) });
    const part = path.join(dir, 'w.whl.part');
    let cut: unknown;
    try {
      await downloadResumable(url, part, { attempts: 1 });
    } catch (err) {
      cut = err;
    }
    expect(cut).toBeInstanceOf(CutDownload);
    const have = fs.statSync(part).size;
    expect(have).toBeGreaterThan(0);
    expect(have).toBeLessThanOrEqual(150_000);
    expect((cut as CutDownload).have).toBe(have);
    await downloadResumable(url, part, { attempts: 1 });
    expect(ranges).toEqual([undefined, `bytes=${have}-`]);
    expect(sha256(fs.readFileSync(part))).toBe(sha256(FILE));
  });

  it('resumes by itself within one call after a cut that made progress', async () => {
    const url = await serve({ cutAt: new Map([[0, 100_000]]) });
    const part = path.join(dir, 'w.whl.part');
    const seen: number[] = [];
    await downloadResumable(url, part, { onBytes: (d) => seen.push(d) });
    expect(ranges).toHaveLength(2);
    expect(ranges[1]).toMatch(/^bytes=\d+-$/);
    expect(sha256(fs.readFileSync(part))).toBe(sha256(FILE));
    expect(seen.at(-1)).toBe(FILE.length);
  });

  it('starts over when the server ignores the range, and is done on a 416 for a whole part', async () => {
    const url = await serve({ ignoreRange: true });
    const part = path.join(dir, 'w.whl.part');
    fs.writeFileSync(part, 'garbage that a 200 must replace');
    await downloadResumable(url, part);
    expect(sha256(fs.readFileSync(part))).toBe(sha256(FILE));
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const url2 = await serve();
    await downloadResumable(url2, part);
    expect(ranges).toEqual([`bytes=${FILE.length}-`]);
    expect(sha256(fs.readFileSync(part))).toBe(sha256(FILE));
  });

  it('tells an error status from a server that is not there', async () => {
    const url = await serve({ status: 404 });
    await expect(downloadResumable(url, path.join(dir, 'a.part'))).rejects.toBeInstanceOf(HttpStatus);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    await expect(downloadResumable(url, path.join(dir, 'b.part'))).rejects.toBeInstanceOf(NoConnection);
  });
});
