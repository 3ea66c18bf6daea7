/**
 * Web mode's door, over plain HTTP, raw sockets and WebSocket (no browser), with a stand-in renderer folder so these
 * tests need no build: the renderer's files are public (they hold no data) and never set a cookie; the socket is the
 * API and tells nothing, and answers nothing, until its first message is the token; Host and Origin must name this
 * server (DNS rebinding, other sites); requests that once crashed the process get 4xx. tests/web/tokenLeak.test.ts
 * checks the page in Chromium, tests/web/serveFuzz.test.ts fuzzes a `mars-lab serve` process.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import {
  frameText,
  parseHostHeader,
  startWebServer,
  targetPath,
  TOKEN_REFUSED,
  type WebServer,
} from '../../engine/api/web/webServer';
import { CONTENT_SECURITY_POLICY_HEADER } from '../../engine/api/web/contentSecurityPolicy';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { rawExchange, statusOf } from '../helpers/rawHttp';

let home: string;
let renderer: string;
let host: Host;
let server: WebServer;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-web-'));
  renderer = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-renderer-'));
  fs.writeFileSync(path.join(renderer, 'index.html'), '<!doctype html><title>stand-in</title>');
  fs.mkdirSync(path.join(renderer, 'assets'));
  fs.writeFileSync(path.join(renderer, 'assets', 'app.js'), 'console.log(1)');
  fs.writeFileSync(path.join(home, 'secret.txt'), 'not for the web');
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  server = await startWebServer({ host, port: 0, rendererDir: renderer });
});

afterAll(async () => {
  await server?.close();
  await host?.close();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(renderer, { recursive: true, force: true });
});

function get(
  pathAndQuery: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: server.port, path: pathAndQuery, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

const raw = (text: string): Promise<string> => rawExchange(server.port, text);

interface OpenSocket {
  socket: WebSocket;
  /** Everything the server sent, parsed. */
  messages: Record<string, unknown>[];
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens a socket (no token in it); resolves once open, or with the HTTP status the upgrade was refused with. */
function openSocket(query = '', headers: Record<string, string> = {}): Promise<OpenSocket | { refused: number }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`ws://127.0.0.1:${server.port}/api${query}`, { headers });
    const messages: Record<string, unknown>[] = [];
    socket.on('message', (data) => messages.push(JSON.parse(frameText(data)) as Record<string, unknown>));
    const closed = new Promise<{ code: number; reason: string }>((r) =>
      socket.once('close', (code, reason) => r({ code, reason: reason.toString() })),
    );
    socket.once('open', () => resolve({ socket, messages, closed }));
    socket.once('unexpected-response', (_req, res) => resolve({ refused: res.statusCode ?? 0 }));
    socket.once('error', () => resolve({ refused: -1 }));
  });
}

/**
 * The promise's value, or a failure naming the step that did not happen within 40 s: a CI run once timed out at the
 * test's 120 s with no word of which wait hung (it never did here, loaded or not).
 */
function within<T>(promise: Promise<T>, step: string, ms = 40_000): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not within ${ms / 1000} s: ${step}`)), ms);
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** A socket that sent the token and got host-ready. */
async function authedSocket(): Promise<OpenSocket> {
  const open = await openSocket('', { origin: `http://127.0.0.1:${server.port}` });
  if ('refused' in open) throw new Error(`socket refused: ${open.refused}`);
  open.socket.send(JSON.stringify({ token: server.token }));
  for (
    let i = 0;
    i < 100 && !open.messages.some((m) => (m['event'] as { type?: string } | undefined)?.type === 'host-ready');
    i++
  ) {
    await new Promise((r) => setTimeout(r, 50));
  }
  expect(open.messages[0]).toMatchObject({ event: { type: 'host-ready' } });
  return open;
}

function call(
  socket: WebSocket,
  id: number,
  method: string,
  params?: unknown,
): Promise<{ id: number; ok: boolean; result?: unknown; error?: { message: string; issues?: unknown[] } }> {
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData): void => {
      const message = JSON.parse(frameText(data)) as { id?: number };
      if (message.id === id) {
        socket.off('message', onMessage);
        resolve(message as never);
      }
    };
    socket.on('message', onMessage);
    socket.send(JSON.stringify({ id, method, params }));
  });
}

describe('the renderer files are public, the token goes nowhere but the socket', () => {
  it('prints a loopback URL with a long random token', () => {
    const url = new URL(server.url);
    expect(url.hostname).toBe('127.0.0.1');
    expect(url.searchParams.get('token')).toBe(server.token);
    expect(server.token.length).toBeGreaterThanOrEqual(32);
  });

  it('serves the page and its assets with or without the token, with the CSP, and never sets a cookie', async () => {
    for (const p of ['/', '/index.html', '/assets/app.js', `/?token=${server.token}`, '/?token=wrong', '//']) {
      const r = await get(p);
      expect(r.status, p).toBe(200);
      expect(r.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY_HEADER);
      expect(r.headers['referrer-policy']).toBe('no-referrer');
      expect(r.headers['set-cookie'], p).toBeUndefined();
      expect(JSON.stringify(r.headers) + r.body).not.toContain(server.token);
    }
    expect((await get('/assets/app.js')).headers['content-type']).toMatch(/javascript/);
  });

  it('never serves files outside the renderer folder', async () => {
    for (const p of [
      '/../secret.txt',
      '/%2e%2e/secret.txt',
      '/assets/%2e%2e/%2e%2e/secret.txt',
      '/nope.js',
      '/..%2f..%2fsecret.txt',
    ]) {
      const r = await get(p);
      expect(r.status, p).toBe(404);
      expect(r.body).not.toContain('not for the web');
    }
  });
});

describe('the socket tells nothing without the token', () => {
  it('closes a socket whose first message is not the token with TOKEN_REFUSED, having sent it nothing, events included', async () => {
    const control = await within(authedSocket(), 'the authenticated socket opened');
    const wrong = await within(openSocket(), 'a socket opened');
    const inUrl = await within(openSocket(`?token=${server.token}`), 'a socket with the token in its URL opened');
    const silent = await within(openSocket(), 'a silent socket opened');
    if ('refused' in wrong || 'refused' in inUrl || 'refused' in silent) throw new Error('upgrade refused');
    wrong.socket.send(JSON.stringify({ token: `${server.token.slice(0, -1)}x` }));
    // The token in the socket's URL counts for nothing: the first message must be the token, not a call.
    inUrl.socket.send(JSON.stringify({ id: 1, method: 'ping' }));
    const [w, u] = await within(
      Promise.all([wrong.closed, inUrl.closed]),
      'the wrong-token and URL-token sockets closed',
    );
    for (const closed of [w, u]) {
      expect(closed.code).toBe(TOKEN_REFUSED);
      expect(closed.reason).toMatch(/open the URL that mars-lab serve printed/);
    }
    // An event while the unauthenticated `silent` socket is open: the authenticated one gets it, `silent` nothing.
    const { id } = createRunFolder(home, {
      algorithm: 'seqgrpo',
      config: {},
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    for (let i = 0; i < 200 && !control.messages.some((m) => JSON.stringify(m).includes(id)); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(
      control.messages.some((m) => (m['event'] as { type?: string; runId?: string } | undefined)?.runId === id),
    ).toBe(true);
    silent.socket.send('not json');
    expect((await within(silent.closed, 'the silent socket closed')).code).toBe(TOKEN_REFUSED);
    for (const s of [wrong, inUrl, silent]) expect(s.messages).toEqual([]);
    control.socket.close();
  });
});

describe('web mode answers only to its own names and origins', () => {
  it('refuses a Host header that is not this server (DNS rebinding), on HTTP and on the socket, token or not', async () => {
    for (const hostHeader of [
      `evil.example:${server.port}`,
      `127.0.0.1.evil.example:${server.port}`,
      'evil.example',
      `127.0.0.1:${server.port + 1}`,
      `192.168.1.5:${server.port}`,
    ]) {
      const r = await get(`/?token=${server.token}`, { host: hostHeader });
      expect(r.status, hostHeader).toBe(403);
      expect(r.body).not.toContain('stand-in');
      expect(await openSocket('', { host: hostHeader }), hostHeader).toEqual({ refused: 403 });
    }
    // no Host at all (HTTP/1.0)
    expect(statusOf(await raw('GET / HTTP/1.0\r\n\r\n'))).toBe(403);
    for (const hostHeader of [
      `127.0.0.1:${server.port}`,
      `localhost:${server.port}`,
      `LOCALHOST:${server.port}`,
      `127.0.0.2:${server.port}`,
    ]) {
      expect((await get('/', { host: hostHeader })).status, hostHeader).toBe(200);
    }
  });

  it('answers 403 to a request from a non-loopback Origin, even with the token', async () => {
    for (const origin of [
      'http://evil.example',
      `http://evil.example:${server.port}`,
      `http://192.168.1.5:${server.port}`,
      'null',
      `https://127.0.0.1:${server.port}`,
      'http://127.0.0.1:1',
    ]) {
      const r = await get(`/?token=${server.token}`, { origin });
      expect(r.status, origin).toBe(403);
    }
  });

  it('refuses a socket from a non-loopback Origin', async () => {
    expect(await openSocket('', { origin: 'http://evil.example' })).toEqual({ refused: 403 });
    expect(await openSocket('', { origin: `http://evil.example:${server.port}` })).toEqual({ refused: 403 });
  });

  it("accepts the page's own loopback origins", async () => {
    for (const origin of [`http://127.0.0.1:${server.port}`, `http://localhost:${server.port}`]) {
      expect((await get('/', { origin })).status, origin).toBe(200);
    }
  });
});

describe('no request ends the server', () => {
  const port = (): number => server.port;
  const crashers = (): [string, string, number][] => [
    // [what, request, expected status]
    [
      'a cookie that is not percent-encoding',
      `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nCookie: mars_lab_token_${port()}=%\r\nConnection: close\r\n\r\n`,
      200,
    ],
    [
      'an absolute-form target that is no URL',
      `GET http://[/ HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nConnection: close\r\n\r\n`,
      400,
    ],
    [
      'absolute-form with a bad escape',
      `GET http://%zz/ HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nConnection: close\r\n\r\n`,
      400,
    ],
    [
      'absolute-form with a bad port',
      `GET http://a:99999/ HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nConnection: close\r\n\r\n`,
      400,
    ],
    [
      'absolute-form with a bad IDN',
      `GET http://xn--/ HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nConnection: close\r\n\r\n`,
      400,
    ],
    ['a path of two slashes', `GET // HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nConnection: close\r\n\r\n`, 200],
    [
      'a path that is not percent-encoding',
      `GET /% HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nConnection: close\r\n\r\n`,
      400,
    ],
    ['an asterisk target', `OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nConnection: close\r\n\r\n`, 400],
  ];
  const upgrade = (target: string, extra = ''): string =>
    `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port()}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`;

  it('answers the requests that once crashed it with a status, plain and as socket upgrades, and keeps serving', async () => {
    for (const [what, request, status] of crashers()) expect(statusOf(await raw(request)), what).toBe(status);
    for (const target of ['http://[/', 'http://%zz/api', 'http://a:99999/api', 'http://xn--/api', '//', '/%']) {
      expect(statusOf(await raw(upgrade(target))), target).toBe(target === '//' ? 404 : 400);
    }
    // a bad cookie on an upgrade: cookies are not read at all; the upgrade goes through and waits for the token
    expect(statusOf(await raw(upgrade('/api', `Cookie: mars_lab_token_${port()}=%\r\n`)))).toBe(101);
    expect((await get('/')).status).toBe(200);
  });

  it('parses targets and Host headers without throwing', () => {
    expect(targetPath('/a%20b?x=1#y')).toBe('/a b');
    expect(targetPath('//')).toBe('/');
    for (const bad of ['http://[/', '*', '', undefined, '/%', '/a%00b', 'example.com:80']) {
      expect(targetPath(bad), String(bad)).toBeNull();
    }
    expect(parseHostHeader('[::1]:4780')).toEqual({ name: '[::1]', port: 4780 });
    expect(parseHostHeader('LocalHost')).toEqual({ name: 'localhost', port: 80 });
    for (const bad of ['a b', 'a:99999', 'a@b:1', '', undefined, 'a:1:2']) {
      expect(parseHostHeader(bad), String(bad)).toBeNull();
    }
  });
});

describe('the contract over the socket', () => {
  it('sends host-ready after the token, answers calls, and refuses invalid requests with the field named', async () => {
    const { socket: ws } = await authedSocket();
    try {
      const ping = await call(ws, 1, 'ping');
      expect(ping).toMatchObject({ ok: true, result: { transport: 'web', home } });
      const runs = await call(ws, 2, 'listRuns', {});
      expect(runs).toMatchObject({ ok: true });
      const unknown = await call(ws, 3, 'readFile', { path: '/etc/passwd' });
      expect(unknown.ok).toBe(false);
      expect(unknown.error?.message).toMatch(/not a method/);
      const traversal = await call(ws, 4, 'getRun', { runId: '../../etc' });
      expect(traversal.ok).toBe(false);
      expect(traversal.error?.message).toMatch(/getRun: invalid request \(runId/);
      const badConfig = await call(ws, 5, 'startRun', { preset: 'seqgrpo-copy', sets: ['rl.lr=-1'] });
      expect(badConfig.ok).toBe(false);
      expect(badConfig.error?.issues).toEqual([expect.objectContaining({ path: 'rl.lr' })]);
    } finally {
      ws.close();
    }
  });
});
