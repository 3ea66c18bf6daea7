/**
 * Web mode (docs/architecture.md "Processes"): the built renderer over HTTP and the contract over a WebSocket, for a browser where
 * Electron cannot run and for a lab looking at a GPU box from a laptop.
 *
 * The security model (README, "Web mode's security model"):
 * - The built renderer holds no data, so its files are served to anyone who can reach the port. Everything the app
 *   knows goes through the socket, and the socket needs the random token printed at start: the page takes it from
 *   the first URL's `?token=`, keeps it in sessionStorage and drops it from the address bar, and sends it as the
 *   socket's first message (never in a URL, never in a cookie: cookies ignore ports, so one would reach every other
 *   server on 127.0.0.1). A socket without the right token is closed with TOKEN_REFUSED and is told nothing.
 * - Host and Origin must name this server (loopback names, or the address it was told to bind): another site open in
 *   the same browser cannot drive the host even if it guessed the port, nor reach it through DNS rebinding.
 * - Binding beyond loopback is refused unless asked for explicitly (`--allow-remote`): the HTTP is cleartext.
 * - No request ends the server: each request's target and Host are parsed once inside a guard, and both listeners
 *   (request and upgrade) sit inside a last-resort guard that answers 500 and keeps serving.
 */
import dns from 'node:dns/promises';
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import os from 'node:os';
import path from 'node:path';
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { PROJECT_ROOT } from '../../base/projectRoot';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { z } from 'zod';
import { UserError } from '../../base/userError';
import { ENGINE_VERSION } from '../../base/version';
import { CONTENT_SECURITY_POLICY_HEADER } from './contentSecurityPolicy';
import type { ApiEvent } from '../contract/contract';
import { callApi, errorPayload } from '../host/dispatch';
import type { Host } from '../host/host';

/** out/renderer, built by `npm run build` (electron-vite). */
export const DEFAULT_RENDERER_DIR = path.join(PROJECT_ROOT, 'out', 'renderer');

/** The path of the socket; the renderer's web client connects to it (renderer/src/api/socketApi.ts). */
export const SOCKET_PATH = '/api';

/**
 * The close code of a socket whose first message was not the token: the page recognises it (the server restarted
 * with a new token, or the URL was mistyped) and says so instead of reconnecting forever.
 */
export const TOKEN_REFUSED = 4401;

/** How long a new socket may take to send its token before it is closed. */
const AUTH_TIMEOUT_MS = 10_000;

/** The port `mars-lab serve` uses by default; named in the SSH tunnel advice. */
export const DEFAULT_PORT = 4780;

export interface WebServerOptions {
  host: Host;
  /** 0 picks a free port. */
  port?: number;
  /** Interface to bind; loopback unless the user asks otherwise. */
  bindHost?: string;
  /** Binding beyond loopback must be asked for (cleartext HTTP); refused otherwise. */
  allowRemote?: boolean;
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

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);
const LOOPBACK_ADDRESSES = new net.BlockList();
LOOPBACK_ADDRESSES.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK_ADDRESSES.addAddress('::1', 'ipv6');

const unbracket = (name: string): string => (name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name);

/** An IP address (v4, v6 or v4-mapped v6) on this machine's loopback interface. */
export function isLoopbackAddress(address: string): boolean {
  const ip = unbracket(address);
  const family = net.isIP(ip);
  return family !== 0 && LOOPBACK_ADDRESSES.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** A host name or address that means this machine's loopback interface, read as written (no DNS). */
export function isLoopbackHost(host: string): boolean {
  return LOOPBACK_NAMES.has(host.toLowerCase()) || isLoopbackAddress(host);
}

export interface BindAddress {
  /** The address to listen on: an IP literal (a name is resolved once, here, so what is checked is what is bound). */
  address: string;
  loopback: boolean;
  wildcard: boolean;
}

/** The SSH tunnel that reaches a loopback-bound server from another machine. */
export function sshTunnelAdvice(port: number = DEFAULT_PORT): string {
  const p = port === 0 ? DEFAULT_PORT : port;
  return `ssh -L ${p}:127.0.0.1:${p} <this host>`;
}

/**
 * Resolve `--host` to the address to bind, and refuse one beyond loopback unless `allowRemote`: web mode speaks
 * cleartext HTTP, so anyone who can read the network can read the token.
 */
export async function resolveBindHost(bindHost: string, allowRemote: boolean, port?: number): Promise<BindAddress> {
  const given = unbracket(bindHost.trim());
  let address: string;
  if (WILDCARD.has(given) || net.isIP(given) !== 0) address = given;
  else {
    try {
      address = (await dns.lookup(given)).address;
    } catch (err) {
      throw new UserError(
        `--host ${bindHost}: no such address on this machine (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); leave --host out to bind 127.0.0.1`,
      );
    }
  }
  const wildcard = WILDCARD.has(address);
  const loopback = !wildcard && isLoopbackAddress(address);
  if (!loopback && !allowRemote) {
    throw new UserError(
      `--host ${bindHost} would serve the app beyond this machine over cleartext HTTP, where the token can be read on the network: keep the default (127.0.0.1) and tunnel to it with \`${sshTunnelAdvice(port)}\`, or pass --allow-remote to bind it anyway`,
    );
  }
  return { address, loopback, wildcard };
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

/** A socket's first message. */
const authSchema = z.object({ token: z.string().max(200) });

function sameSecret(given: string | null | undefined, token: string): boolean {
  if (!given) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * The decoded path of a request target, or null for anything this server does not serve: absolute-form
 * (`http://…`, which only proxies receive), authority-form, `*`, bad percent-encoding, NUL. Never throws.
 */
export function targetPath(target: string | undefined): string | null {
  if (!target || !target.startsWith('/')) return null;
  const cut = target.search(/[?#]/);
  let decoded: string;
  try {
    decoded = decodeURIComponent(cut < 0 ? target : target.slice(0, cut));
  } catch {
    return null;
  }
  if (decoded.includes('\0')) return null;
  // `//` (an extra slash typed into the address bar) is `/`.
  return decoded.replace(/\/{2,}/g, '/');
}

/** `name[:port]` of a Host header (a name, an IPv4 or a bracketed IPv6), lower-cased; null when it is not one. */
export function parseHostHeader(value: string | undefined): { name: string; port: number } | null {
  const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::(\d{1,5}))?$/.exec(value ?? '');
  if (!m) return null;
  const port = m[2] === undefined ? 80 : Number(m[2]);
  return port <= 65535 ? { name: m[1]!.toLowerCase(), port } : null;
}

type Verdict = { ok: true; pathname: string } | { ok: false; status: number; reason: string; message: string };

export async function startWebServer(opts: WebServerOptions): Promise<WebServer> {
  const rendererDir = path.resolve(opts.rendererDir ?? DEFAULT_RENDERER_DIR);
  if (!fs.existsSync(path.join(rendererDir, 'index.html'))) {
    throw new UserError(
      `the built renderer is missing (${path.join(rendererDir, 'index.html')}): run \`npm run build\` first`,
    );
  }
  const bindHost = opts.bindHost ?? '127.0.0.1';
  const bind = await resolveBindHost(bindHost, opts.allowRemote ?? false, opts.port);
  const token = opts.token ?? randomBytes(24).toString('base64url');
  let port = 0;

  /**
   * The names this server answers to (Host and Origin): loopback names always; beyond loopback, the name and address
   * it was told to bind, and when bound to every interface any IP address and this machine's host name. A name an
   * attacker controls (DNS rebinding: evil.example resolving to 127.0.0.1) is none of these.
   */
  const remoteNames = new Set<string>();
  if (!bind.loopback) {
    remoteNames.add(unbracket(bindHost.trim()).toLowerCase());
    remoteNames.add(bind.address.toLowerCase());
    if (bind.wildcard) remoteNames.add(os.hostname().toLowerCase());
  }
  const nameAllowed = (name: string): boolean => {
    const bare = unbracket(name).toLowerCase();
    if (isLoopbackHost(bare)) return true;
    if (remoteNames.has(bare)) return true;
    return bind.wildcard && net.isIP(bare) !== 0;
  };

  const hostAllowed = (value: string | undefined): boolean => {
    const parsed = parseHostHeader(value);
    return parsed !== null && parsed.port === port && nameAllowed(parsed.name);
  };

  const originAllowed = (origin: string | undefined): boolean => {
    if (origin === undefined) return true; // not a browser's cross-site request: no Origin on top-level navigations and non-browser clients
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    return url.protocol === 'http:' && Number(url.port || 80) === port && nameAllowed(url.hostname);
  };

  /** Everything a request is judged on, parsed once; never throws. */
  const judge = (req: http.IncomingMessage): Verdict => {
    if (!hostAllowed(req.headers.host)) {
      return {
        ok: false,
        status: 403,
        reason: 'Forbidden',
        message: 'this server answers only to its own address (Host header refused)',
      };
    }
    if (!originAllowed(req.headers.origin)) {
      return { ok: false, status: 403, reason: 'Forbidden', message: 'requests from other sites are refused' };
    }
    const pathname = targetPath(req.url);
    if (pathname === null) return { ok: false, status: 400, reason: 'Bad Request', message: 'bad request target' };
    return { ok: true, pathname };
  };

  const refuse = (res: http.ServerResponse, status: number, message: string): void => {
    res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' });
    res.end(`mars-lab: ${message}\n`);
  };

  const serveFile = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const verdict = judge(req);
    if (!verdict.ok) return refuse(res, verdict.status, verdict.message);
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, 'only GET');
    const pathname = verdict.pathname;
    const file = path.resolve(rendererDir, `.${pathname === '/' ? '/index.html' : pathname}`);
    if (file !== rendererDir && !file.startsWith(rendererDir + path.sep)) return refuse(res, 404, 'not found');
    let body: Buffer;
    try {
      if (!fs.statSync(file).isFile()) return refuse(res, 404, 'not found');
      body = fs.readFileSync(file);
    } catch {
      return refuse(res, 404, 'not found');
    }
    res.writeHead(200, {
      ...SECURITY_HEADERS,
      'Content-Type': CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
      'Content-Length': String(body.length),
    });
    res.end(req.method === 'HEAD' ? undefined : body);
  };

  const server = http.createServer((req, res) => {
    try {
      serveFile(req, res);
    } catch (err) {
      // Last resort: a bug here answers 500 and the server keeps serving.
      console.error(`mars-lab serve: ${req.method} request failed: ${(err as Error)?.message ?? String(err)}`);
      if (!res.headersSent) refuse(res, 500, 'internal error');
      else res.destroy();
    }
  });

  const sockets = new WebSocketServer({ noServer: true, maxPayload: 4 << 20 });

  const upgrade = (req: http.IncomingMessage, socket: Duplex, head: Buffer): void => {
    const deny = (status: number, reason: string): void => {
      if (socket.writable) {
        socket.write(`HTTP/1.1 ${status} ${reason}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
      }
      socket.destroy();
    };
    const verdict = judge(req);
    if (!verdict.ok) return deny(verdict.status, verdict.reason);
    if (verdict.pathname !== SOCKET_PATH) return deny(404, 'Not Found');
    sockets.handleUpgrade(req, socket, head, (ws) => serveSocket(ws));
  };

  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    // Node removes its own error handler from an upgraded socket: a reset before the handshake must not be uncaught.
    socket.on('error', () => socket.destroy());
    try {
      upgrade(req, socket, head);
    } catch (err) {
      console.error(`mars-lab serve: socket upgrade failed: ${(err as Error)?.message ?? String(err)}`);
      socket.destroy();
    }
  });

  /** A socket is told nothing until its first message is the token; then it gets events and answers. */
  const serveSocket = (ws: WebSocket): void => {
    const send = (message: unknown): void => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
    };
    let unsubscribe: (() => void) | null = null;
    const refuseToken = (why: string): void =>
      ws.close(TOKEN_REFUSED, `${why}: open the URL that mars-lab serve printed`);
    const timer = setTimeout(() => refuseToken('no token'), AUTH_TIMEOUT_MS);
    const end = (): void => {
      clearTimeout(timer);
      unsubscribe?.();
      unsubscribe = null;
    };
    ws.on('close', end);
    ws.on('error', end);
    ws.on('message', (data) => {
      if (ws.readyState !== ws.OPEN) return;
      if (unsubscribe === null) {
        clearTimeout(timer);
        let given: string | null = null;
        try {
          const parsed = authSchema.safeParse(JSON.parse(frameText(data)));
          if (parsed.success) given = parsed.data.token;
        } catch {
          // not JSON: refused below
        }
        if (!sameSecret(given, token)) return refuseToken('token refused');
        unsubscribe = opts.host.subscribe((event: ApiEvent) => send({ event }));
        const ready: ApiEvent = { type: 'host-ready', engineVersion: ENGINE_VERSION };
        send({ event: ready });
        return;
      }
      let message: z.infer<typeof requestSchema>;
      try {
        const parsed = requestSchema.safeParse(JSON.parse(frameText(data)));
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
  };

  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') {
        reject(new UserError(`port ${opts.port} is in use: choose another with --port, or --port 0 for any free one`));
      } else if (err.code === 'EADDRNOTAVAIL' || err.code === 'EACCES') {
        reject(
          new UserError(
            `cannot listen on ${bindHost} port ${opts.port ?? 0} (${err.code}): choose an address of this machine with --host, or a port above 1023 with --port`,
          ),
        );
      } else reject(err);
    });
    server.listen(opts.port ?? 0, bind.address, () => resolve());
  });
  port = (server.address() as AddressInfo).port;
  // After listening, an error on the server (not on one connection) is reported, never thrown.
  server.on('error', (err) => console.error(`mars-lab serve: ${err.message}`));
  // The URL names what the user typed (a name stays a name); a wildcard bind is shown as loopback, which it includes.
  const given = unbracket(bindHost.trim());
  const shownHost = bind.wildcard ? '127.0.0.1' : net.isIP(given) === 6 ? `[${given}]` : given;

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

/** A WebSocket message's text, whatever shape ws hands it in (a Buffer, fragments, or an ArrayBuffer). */
export function frameText(data: RawData): string {
  return (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString(
    'utf8',
  );
}
