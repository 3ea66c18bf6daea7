/**
 * Web mode's door: the token and the Origin check, over plain HTTP and WebSocket (no browser), and the contract's
 * validation over the socket. The server serves a stand-in renderer folder, so these tests need no build.
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createHost, type Host } from '../../engine/api/host';
import { nodeRunLauncher } from '../../engine/api/runLauncher';
import { startWebServer, type WebServer } from '../../engine/api/webServer';
import { CONTENT_SECURITY_POLICY_HEADER } from '../../engine/api/contentSecurityPolicy';

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

function get(pathAndQuery: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: server.port, path: pathAndQuery, headers }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

/** Opens a socket; resolves with it once open, or with the HTTP status the server refused it with. */
function openSocket(query: string, headers: Record<string, string> = {}): Promise<{ socket?: WebSocket; refused?: number }> {
  return new Promise((resolve) => {
    const socket = new WebSocket(`ws://127.0.0.1:${server.port}/api${query}`, { headers });
    socket.once('open', () => resolve({ socket }));
    socket.once('unexpected-response', (_req, res) => resolve({ refused: res.statusCode }));
    socket.once('error', () => resolve({ refused: -1 }));
  });
}

function call(socket: WebSocket, id: number, method: string, params?: unknown): Promise<{ id: number; ok: boolean; result?: unknown; error?: { message: string; issues?: unknown[] } }> {
  return new Promise((resolve) => {
    const onMessage = (data: WebSocket.RawData): void => {
      const message = JSON.parse(data.toString()) as { id?: number };
      if (message.id === id) {
        socket.off('message', onMessage);
        resolve(message as never);
      }
    };
    socket.on('message', onMessage);
    socket.send(JSON.stringify({ id, method, params }));
  });
}

describe('web mode refuses what has no token', () => {
  it('prints a loopback URL with a long random token', () => {
    const url = new URL(server.url);
    expect(url.hostname).toBe('127.0.0.1');
    expect(url.searchParams.get('token')).toBe(server.token);
    expect(server.token.length).toBeGreaterThanOrEqual(32);
  });

  it('answers 401 to a request without the token, or with a wrong one', async () => {
    for (const p of ['/', '/index.html', '/assets/app.js', `/?token=${server.token.slice(0, -1)}x`, '/?token=']) {
      const r = await get(p);
      expect(r.status, p).toBe(401);
      expect(r.body).not.toContain('stand-in');
    }
  });

  it('serves the page with the token, sets a cookie for its assets, and sends the CSP', async () => {
    const page = await get(`/?token=${server.token}`);
    expect(page.status).toBe(200);
    expect(page.body).toContain('stand-in');
    expect(page.headers['content-security-policy']).toBe(CONTENT_SECURITY_POLICY_HEADER);
    const cookie = String(page.headers['set-cookie']).split(';')[0]!;
    expect(String(page.headers['set-cookie'])).toMatch(/HttpOnly; SameSite=Strict/);
    const asset = await get('/assets/app.js', { cookie });
    expect(asset.status).toBe(200);
    expect(asset.headers['content-type']).toMatch(/javascript/);
  });

  it('never serves files outside the renderer folder', async () => {
    for (const p of ['/../secret.txt', '/%2e%2e/secret.txt', '/assets/%2e%2e/%2e%2e/secret.txt', '/nope.js']) {
      const r = await get(`${p}${p.includes('?') ? '&' : '?'}token=${server.token}`);
      expect(r.status, p).toBe(404);
      expect(r.body).not.toContain('not for the web');
    }
  });

  it('refuses a socket without the token (401)', async () => {
    expect((await openSocket('')).refused).toBe(401);
    expect((await openSocket('?token=wrong')).refused).toBe(401);
  });
});

describe('web mode refuses other origins', () => {
  it('answers 403 to an HTTP request from a non-loopback Origin, even with the token', async () => {
    for (const origin of ['http://evil.example', `http://192.168.1.5:${server.port}`, 'null', `https://127.0.0.1:${server.port}`, 'http://127.0.0.1:1']) {
      const r = await get(`/?token=${server.token}`, { origin });
      expect(r.status, origin).toBe(403);
    }
  });

  it('refuses a socket from a non-loopback Origin, even with the token', async () => {
    const r = await openSocket(`?token=${server.token}`, { origin: 'http://evil.example' });
    expect(r.refused).toBe(403);
  });

  it('accepts the page\'s own loopback origins', async () => {
    for (const origin of [`http://127.0.0.1:${server.port}`, `http://localhost:${server.port}`]) {
      expect((await get(`/?token=${server.token}`, { origin })).status, origin).toBe(200);
    }
  });
});

describe('the contract over the socket', () => {
  it('sends host-ready, answers calls, and refuses invalid requests with the field named', async () => {
    const { socket } = await openSocket(`?token=${server.token}`, { origin: `http://127.0.0.1:${server.port}` });
    expect(socket).toBeDefined();
    const ws = socket!;
    try {
      const ping = await call(ws, 1, 'ping');
      expect(ping).toMatchObject({ ok: true, result: { transport: 'web', home } });
      const runs = await call(ws, 2, 'listRuns', {});
      expect(runs).toMatchObject({ ok: true, result: { runs: [] } });
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
