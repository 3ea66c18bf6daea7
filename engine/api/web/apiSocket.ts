/**
 * The contract over web mode's WebSocket: the upgrade (judged like every request, on SOCKET_PATH only), then a socket
 * that is told nothing until its first message is the token, and after it gets every host event and an answer to each
 * request, through the same dispatch as Electron's IPC (engine/api/host/dispatch.ts).
 */
import type http from 'node:http';
import type { Duplex } from 'node:stream';
import { timingSafeEqual } from 'node:crypto';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import { z } from 'zod';
import { clip } from '../../base/boundedText';
import { ENGINE_VERSION } from '../../base/version';
import type { ApiEvent } from '../contract/contract';
import { callApi, errorPayload } from '../host/dispatch';
import type { Host } from '../host/host';
import type { Verdict } from './requestGuard';

/** The path of the socket; the renderer's web client connects to it (renderer/src/api/socketApi.ts). */
export const SOCKET_PATH = '/api';

/**
 * The close code of a socket whose first message was not the token: the page recognises it (the server restarted
 * with a new token, or the URL was mistyped) and says so instead of reconnecting forever.
 */
export const TOKEN_REFUSED = 4401;

/**
 * The most JSON one answer carries (characters): far above any answer the windows ask for (getTrajectories and getRun
 * bound theirs in bytes and say where to continue), far below V8's string limit (~512 MiB).
 */
export const MAX_ANSWER_CHARS = 64 << 20;

/** How long a new socket may take to send its token before it is closed. */
const AUTH_TIMEOUT_MS = 10_000;

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

/** What a socket needs of its server: the host it speaks for and the token it asks for. */
interface SocketServing {
  host: Host;
  token: string;
}

/** A socket is told nothing until its first message is the token; then it gets events and answers. */
function serveSocket(ws: WebSocket, opts: SocketServing): void {
  const { token } = opts;
  const send = (message: unknown): void => {
    if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
  };
  // An answer that cannot be sent (nested too deep for JSON.stringify, past V8's string limit, past the byte bound) is
  // answered as an error: a throw here would reject a promise nobody handles, and the CLI ends on those.
  const answer = (id: number | string, result: unknown): void => {
    let text: string;
    try {
      text = JSON.stringify({ id, ok: true, result });
    } catch (err) {
      const why = err instanceof RangeError ? 'too large or too deeply nested to send' : 'not sendable as JSON';
      return sendError(id, `the answer is ${why}; ask for less (a smaller limit or a narrower range)`);
    }
    if (text.length > MAX_ANSWER_CHARS) {
      return sendError(
        id,
        `the answer is ${Math.round(text.length / (1 << 20))} MB of JSON, more than the ${MAX_ANSWER_CHARS >> 20} MB ` +
          'one answer may be; ask for less (a smaller limit or a narrower range)',
      );
    }
    if (ws.readyState === ws.OPEN) ws.send(text);
  };
  const sendError = (id: number | string, message: string): void => {
    try {
      send({ id, ok: false, error: { message } });
    } catch {
      // nothing more can be said on this socket
    }
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
      unsubscribe = opts.host.subscribe(
        (event: ApiEvent) => send({ event }),
        () => ws.bufferedAmount,
      );
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
    const id = message.id;
    callApi(opts.host.handlers, message.method, message.params)
      .then(
        (result) => answer(id, result),
        (err: unknown) => send({ id, ok: false, error: errorPayload(err) }),
      )
      // Last resort: whatever went wrong sending, this socket and every other keep being served.
      .catch((err: unknown) => sendError(id, `the answer could not be sent (${clip(String(err), 200)})`));
  });
}

/**
 * Takes the server's upgrades to the API socket: a request the judge refuses, or for another path, is denied before
 * the handshake. Returns the socket server, which close() terminates.
 */
export function serveApiSocket(
  server: http.Server,
  judge: (req: http.IncomingMessage) => Verdict,
  opts: SocketServing,
): WebSocketServer {
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
    sockets.handleUpgrade(req, socket, head, (ws) => serveSocket(ws, opts));
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
  return sockets;
}

/** A WebSocket message's text, whatever shape ws hands it in (a Buffer, fragments, or an ArrayBuffer). */
export function frameText(data: RawData): string {
  return (Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)).toString(
    'utf8',
  );
}
