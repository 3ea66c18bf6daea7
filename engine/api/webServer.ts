/**
 * Web mode (DESIGN.md "Processes"): the built renderer over HTTP and the contract over a WebSocket, for a browser where
 * Electron cannot run and for a lab looking at a GPU box from a laptop.
 *
 * Every HTTP request and socket needs the random token printed at start: as `?token=` in the first URL (which then sets
 * a cookie scoped to this port, for the page's own assets) or that cookie. A request whose Origin is not this server on
 * a loopback name (or on the host it was told to bind) is refused, so another site open in the same browser cannot
 * drive the host even if it guessed the port.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';
import { z } from 'zod';
import { UserError } from '../userError';
import { ENGINE_VERSION } from '../version';
import { CONTENT_SECURITY_POLICY_HEADER } from './contentSecurityPolicy';
import type { ApiEvent } from './contract';
import { callApi, errorPayload } from './dispatch';
import type { Host } from './host';

/** out/renderer, built by `npm run build` (electron-vite). */
export const DEFAULT_RENDERER_DIR = fileURLToPath(new URL('../../out/renderer/', import.meta.url));

/** The path of the socket; the renderer's web client connects to it (renderer/src/api/socketApi.ts). */
export const SOCKET_PATH = '/api';

export interface WebServerOptions {
  host: Host;
  /** 0 picks a free port. */
  port?: number;
  /** Interface to bind; loopback unless the user asks otherwise. */
  bindHost?: string;
  rendererDir?: string;
  /** For tests; normally random. */
  token?: string;
}

export interface WebServer {
  /** The URL to open, with the token. */
  readonly url: string;
  readonly port: number;
  readonly token: string;
  close(): Promise<void>;
}

const LOOPBACK_NAMES = new Set(['127.0.0.1', 'localhost', '[::1]', '::1']);
const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);

export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host) || /^127\.\d+\.\d+\.\d+$/.test(host);
}

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

const SECURITY_HEADERS = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY_HEADER,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
} as const;

const requestSchema = z.object({
  id: z.union([z.number(), z.string().max(100)]),
  method: z.string().max(100),
  params: z.unknown().optional(),
});

function sameSecret(given: string | null | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function cookieValue(header: string | undefined, name: string): string | null {
  for (const part of (header ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return decodeURIComponent(part.slice(eq + 1).trim());
  }
  return null;
}

export async function startWebServer(opts: WebServerOptions): Promise<WebServer> {
  const rendererDir = path.resolve(opts.rendererDir ?? DEFAULT_RENDERER_DIR);
  if (!fs.existsSync(path.join(rendererDir, 'index.html'))) {
    throw new UserError(`the built renderer is missing (${path.join(rendererDir, 'index.html')}): run \`npm run build\` first`);
  }
  const bindHost = opts.bindHost ?? '127.0.0.1';
  const token = opts.token ?? randomBytes(24).toString('base64url');
  let port = 0;
  const cookieName = (): string => `mars_lab_token_${port}`;

  /** Origins allowed to call: this server under a loopback name, or under the host it was told to bind. */
  const originAllowed = (origin: string | undefined, hostHeader: string | undefined): boolean => {
    if (origin === undefined) return true; // not a browser's cross-site request: no Origin on top-level navigations and non-browser clients
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    if (url.protocol !== 'http:' || Number(url.port || 80) !== port) return false;
    if (isLoopbackHost(url.hostname)) return true;
    if (!isLoopbackHost(bindHost) && !WILDCARD.has(bindHost)) return url.hostname === bindHost;
    // Bound to every interface on purpose: the page's own origin is the Host it was loaded from.
    return WILDCARD.has(bindHost) && hostHeader !== undefined && url.host === hostHeader;
  };

  const authorised = (req: http.IncomingMessage): { ok: boolean; viaQuery: boolean } => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (sameSecret(url.searchParams.get('token'), token)) return { ok: true, viaQuery: true };
    return { ok: sameSecret(cookieValue(req.headers.cookie, cookieName()), token), viaQuery: false };
  };

  const refuse = (res: http.ServerResponse, status: number, message: string): void => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' });
    res.end(`mars-lab: ${message}\n`);
  };

  const server = http.createServer((req, res) => {
    if (!originAllowed(req.headers.origin, req.headers.host)) return refuse(res, 403, 'requests from other sites are refused');
    const auth = authorised(req);
    if (!auth.ok) return refuse(res, 401, 'this server needs its token: open the URL that `mars-lab serve` printed');
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, 'only GET');
    let pathname: string;
    try {
      pathname = decodeURIComponent(new URL(req.url ?? '/', 'http://localhost').pathname);
    } catch {
      return refuse(res, 400, 'bad path');
    }
    const file = path.resolve(rendererDir, `.${pathname === '/' ? '/index.html' : pathname}`);
    if (file !== rendererDir && !file.startsWith(rendererDir + path.sep)) return refuse(res, 404, 'not found');
    let body: Buffer;
    try {
      if (!fs.statSync(file).isFile()) return refuse(res, 404, 'not found');
      body = fs.readFileSync(file);
    } catch {
      return refuse(res, 404, 'not found');
    }
    const headers: Record<string, string> = {
      ...SECURITY_HEADERS,
      'Content-Type': CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
      'Content-Length': String(body.length),
    };
    if (auth.viaQuery) headers['Set-Cookie'] = `${cookieName()}=${encodeURIComponent(token)}; HttpOnly; SameSite=Strict; Path=/`;
    res.writeHead(200, headers);
    res.end(req.method === 'HEAD' ? undefined : body);
  });

  const sockets = new WebSocketServer({ noServer: true, maxPayload: 4 << 20 });
  server.on('upgrade', (req, socket, head) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const deny = (status: string): void => {
      socket.write(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      socket.destroy();
    };
    if (url.pathname !== SOCKET_PATH) return deny('404 Not Found');
    if (!originAllowed(req.headers.origin, req.headers.host)) return deny('403 Forbidden');
    if (!authorised(req).ok) return deny('401 Unauthorized');
    sockets.handleUpgrade(req, socket, head, (ws) => serveSocket(ws));
  });

  const serveSocket = (ws: WebSocket): void => {
    const send = (message: unknown): void => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
    };
    const unsubscribe = opts.host.subscribe((event: ApiEvent) => send({ event }));
    ws.on('close', unsubscribe);
    ws.on('error', unsubscribe);
    ws.on('message', (data) => {
      let message: z.infer<typeof requestSchema>;
      try {
        const parsed = requestSchema.safeParse(JSON.parse(data.toString()));
        if (!parsed.success) throw new Error('expected {id, method, params}');
        message = parsed.data;
      } catch (err) {
        send({ id: null, ok: false, error: { message: `not a request: ${(err as Error).message}` } });
        return;
      }
      callApi(opts.host.handlers, message.method, message.params).then(
        (result) => send({ id: message.id, ok: true, result }),
        (err: unknown) => send({ id: message.id, ok: false, error: errorPayload(err) }),
      );
    });
    const ready: ApiEvent = { type: 'host-ready', engineVersion: ENGINE_VERSION };
    send({ event: ready });
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) =>
      reject(err.code === 'EADDRINUSE' ? new UserError(`port ${opts.port} is in use: choose another with --port, or --port 0 for any free one`) : err),
    );
    server.listen(opts.port ?? 0, bindHost, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  const shownHost = WILDCARD.has(bindHost) ? '127.0.0.1' : bindHost.includes(':') && !bindHost.startsWith('[') ? `[${bindHost}]` : bindHost;

  return {
    url: `http://${shownHost}:${port}/?token=${token}`,
    port,
    token,
    async close() {
      for (const client of sockets.clients) client.terminate();
      sockets.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
