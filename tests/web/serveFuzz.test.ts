/**
 * No request ends `mars-lab serve` (issue 15): a real `serve --port 0 --json` process (an uncaught exception would end
 * it, as it would a user's) takes the request lines, targets, Host/Origin/Cookie headers and socket upgrades that
 * once crashed it, then a bounded, seeded fuzz of malformed requests over raw loopback connections, some cut off or
 * reset mid-request. After that the process is still up, answers the page, and answers an authenticated socket call.
 * Needs the built renderer (`npm run build`), as `serve` does.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { frameText } from '../../engine/api/web/webServer';
import { BIN } from '../helpers/cli';
import { rawExchange, statusOf, type Ending } from '../helpers/rawHttp';

const CONNECTIONS = 400;
const AT_ONCE = 16;

let home: string;
let child: ChildProcess;
let stderr = '';
let port = 0;
let token = '';

beforeAll(async () => {
  expect(
    fs.existsSync('out/renderer/index.html'),
    'the build is missing: run `npm run build` before the tests (npm test does)',
  ).toBe(true);
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-fuzz-'));
  child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--json', '--home', home], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stderr!.setEncoding('utf8').on('data', (c: string) => (stderr += c));
  const first = await new Promise<string>((resolve, reject) => {
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      if (out.includes('\n')) resolve(out.split('\n')[0]!);
    });
    child.once('exit', (code) => reject(new Error(`serve exited (${code}) before printing its URL: ${stderr}`)));
  });
  const printed = JSON.parse(first) as { url: string; port: number };
  port = printed.port;
  token = new URL(printed.url).searchParams.get('token')!;
});

afterAll(async () => {
  if (child && child.exitCode === null) {
    child.kill('SIGTERM');
    await new Promise((r) => child.once('exit', r));
  }
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

/** mulberry32: the same fuzz on every run. */
function random(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** One request on a new connection (1 s before a cut-off request is given up). */
const exchange = (text: string, ending: Ending = 'whole'): Promise<string> =>
  rawExchange(port, text, { ending, timeoutMs: 1000 });

function fuzzRequest(rand: () => number): { text: string; ending: Ending } {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)]!;
  const junk = (n: number): string =>
    Array.from({ length: n }, () => String.fromCharCode(Math.floor(rand() * 256))).join('');
  const methods = ['GET', 'GET', 'HEAD', 'POST', 'OPTIONS', 'PUT', 'DELETE', 'CONNECT', 'G ET', '', junk(4)];
  const targets = [
    '/',
    '//',
    '///',
    '/api',
    '/api?token=%',
    '/%',
    '/%zz',
    '/%00',
    '/..%2f..%2fetc/passwd',
    '/assets/../../x',
    '/index.html?token=' + '%'.repeat(3),
    'http://[/',
    'http://%zz/',
    'http://a:99999/',
    'http://xn--/',
    'http://127.0.0.1/api',
    'https://[::1',
    '*',
    'example.com:80',
    '?',
    '#',
    '/' + 'a'.repeat(9000),
    '/' + junk(12),
  ];
  const versions = ['HTTP/1.1', 'HTTP/1.1', 'HTTP/1.0', 'HTTP/2.0', 'HTTP/9', 'HTTP/1.1x', ''];
  const hosts = [
    `127.0.0.1:${port}`,
    `127.0.0.1:${port}`,
    `localhost:${port}`,
    `[::1]:${port}`,
    `evil.example:${port}`,
    '[',
    ':::',
    '',
    `127.0.0.1:${port}0`,
    junk(6),
    null,
  ];
  const cookies = [
    `mars_lab_token_${port}=%`,
    `mars_lab_token_${port}=%E0%A4%A`,
    '=%',
    '%',
    ';;;',
    `mars_lab_token_${port}=${token.slice(1)}`,
    junk(20),
    null,
  ];
  const origins = ['null', 'http://[', '%', `http://127.0.0.1:${port}`, 'http://evil.example', junk(8), null];
  const lines = [`${pick(methods)} ${pick(targets)} ${pick(versions)}`];
  const host = pick(hosts);
  if (host !== null) lines.push(`Host: ${host}`);
  const cookie = pick(cookies);
  if (cookie !== null) lines.push(`Cookie: ${cookie}`);
  const origin = pick(origins);
  if (origin !== null) lines.push(`Origin: ${origin}`);
  if (rand() < 0.4) {
    lines.push(
      'Connection: Upgrade',
      `Upgrade: ${pick(['websocket', 'WebSocket', 'h2c', junk(5)])}`,
      `Sec-WebSocket-Version: ${pick(['13', '8', junk(2)])}`,
    );
    lines.push(`Sec-WebSocket-Key: ${pick(['dGhlIHNhbXBsZSBub25jZQ==', '', junk(10)])}`);
    if (rand() < 0.3) lines.push(`Sec-WebSocket-Protocol: ${pick(['mars-lab', token, junk(6)])}`);
  } else if (rand() < 0.5) lines.push('Connection: close');
  if (rand() < 0.2) lines.push(`Content-Length: ${pick(['-1', '99999999999999999999', '5', 'abc'])}`);
  if (rand() < 0.1) lines.push('Transfer-Encoding: chunked');
  if (rand() < 0.2) lines.push(`${junk(5)}: ${junk(10)}`);
  let text = lines.join(pick(['\r\n', '\r\n', '\r\n', '\n'])) + '\r\n\r\n';
  if (rand() < 0.3) text += junk(Math.floor(rand() * 64)); // a body, or WebSocket frames after a 101
  const ending: Ending = rand() < 0.15 ? 'cut' : rand() < 0.1 ? 'reset' : 'whole';
  if (ending === 'cut') text = text.slice(0, Math.floor(rand() * text.length));
  return { text, ending };
}

async function pingOverSocket(): Promise<unknown> {
  const socket = new WebSocket(`ws://127.0.0.1:${port}/api`);
  try {
    return await new Promise((resolve, reject) => {
      socket.once('error', reject);
      socket.once('close', (code) => reject(new Error(`closed ${code}`)));
      socket.on('message', (data) => {
        const message = JSON.parse(frameText(data)) as { id?: number; event?: { type: string } };
        if (message.event?.type === 'host-ready') socket.send(JSON.stringify({ id: 1, method: 'ping' }));
        if (message.id === 1) resolve(message);
      });
      socket.once('open', () => socket.send(JSON.stringify({ token })));
    });
  } finally {
    socket.terminate();
  }
}

describe('mars-lab serve under malformed requests', () => {
  it('answers the requests that once ended it, plain and as upgrades, and stays up', async () => {
    const upgrade = (target: string, extra = ''): string =>
      `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`;
    const plain = (target: string, extra = ''): string =>
      `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n${extra}\r\n`;
    const cookie = `Cookie: mars_lab_token_${port}=%\r\n`;
    const cases: [string, number[]][] = [
      [plain('/', cookie), [200, 400, 401]],
      [upgrade('/api', cookie), [101, 400, 401]],
      [plain('//'), [200, 400, 404]],
      [upgrade('//'), [400, 404]],
    ];
    for (const target of ['http://[/', 'http://%zz/', 'http://a:99999/', 'http://xn--/']) {
      cases.push([plain(target), [400]], [upgrade(target), [400]]);
    }
    for (const [request, statuses] of cases) {
      expect(statuses, request.split('\r\n')[0]).toContain(statusOf(await exchange(request)));
      expect(child.exitCode, `the server exited after: ${request.split('\r\n')[0]}`).toBeNull();
    }
  });

  it(`survives ${CONNECTIONS} fuzzed connections, then still answers the page and the socket`, async () => {
    const rand = random(15);
    const requests = Array.from({ length: CONNECTIONS }, () => fuzzRequest(rand));
    const statuses: number[] = [];
    for (let i = 0; i < requests.length; i += AT_ONCE) {
      const answers = await Promise.all(requests.slice(i, i + AT_ONCE).map((r) => exchange(r.text, r.ending)));
      statuses.push(...answers.map(statusOf));
      expect(child.exitCode, `the server exited during connections ${i}..${i + AT_ONCE}`).toBeNull();
    }
    // Never an internal error: every request was judged, none fell through to the last-resort guard.
    expect(statuses.filter((s) => s >= 500 && s !== 505)).toEqual([]);
    expect(stderr).not.toMatch(/request failed|upgrade failed|Error/);
    expect(statusOf(await exchange(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`))).toBe(
      200,
    );
    expect(await pingOverSocket()).toMatchObject({ id: 1, ok: true, result: { transport: 'web' } });
    expect(child.exitCode).toBeNull();
  }, 120_000);
});
