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
 *
 * This file starts the server and composes its parts: where it binds (bindAddress.ts), how each request is judged
 * (requestGuard.ts), the renderer's files (staticFiles.ts) and the API socket (apiSocket.ts).
 */
import fs from 'node:fs';
import http from 'node:http';
import net, { type AddressInfo } from 'node:net';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { PROJECT_ROOT } from '../../base/projectRoot';
import { UserError } from '../../base/userError';
import type { Host } from '../host/host';
import { serveApiSocket } from './apiSocket';
import { resolveBindHost, unbracket } from './bindAddress';
import { createRequestJudge } from './requestGuard';
import { refuse, serveFile } from './staticFiles';

export { frameText, SOCKET_PATH, TOKEN_REFUSED } from './apiSocket';
export {
  DEFAULT_PORT,
  isLoopbackAddress,
  isLoopbackHost,
  resolveBindHost,
  sshTunnelAdvice,
  type BindAddress,
} from './bindAddress';
export { parseHostHeader, targetPath } from './requestGuard';

/** out/renderer, built by `npm run build` (electron-vite). */
export const DEFAULT_RENDERER_DIR = path.join(PROJECT_ROOT, 'out', 'renderer');

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

/** Listens on `address` (serve and serve-model), or fails with one line naming the option to change. */
export async function listenOn(server: http.Server, port: number, address: string, bindHost: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') {
        reject(new UserError(`port ${port} is in use: choose another with --port, or --port 0 for any free one`));
      } else if (err.code === 'EADDRNOTAVAIL' || err.code === 'EACCES') {
        reject(
          new UserError(
            `cannot listen on ${bindHost} port ${port} (${err.code}): choose an address of this machine with --host, or a port above 1023 with --port`,
          ),
        );
      } else reject(err);
    });
    server.listen(port, address, () => resolve());
  });
}

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
  const judge = createRequestJudge(bindHost, bind, () => port);

  const server = http.createServer((req, res) => {
    try {
      serveFile(rendererDir, judge, req, res);
    } catch (err) {
      // Last resort: a bug here answers 500 and the server keeps serving.
      console.error(`mars-lab serve: ${req.method} request failed: ${(err as Error)?.message ?? String(err)}`);
      if (!res.headersSent) refuse(res, 500, 'internal error');
      else res.destroy();
    }
  });

  const sockets = serveApiSocket(server, judge, { host: opts.host, token });

  await listenOn(server, opts.port ?? 0, bind.address, bindHost);
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
