/**
 * Follows a Ray job's driver log live over the Jobs API's WebSocket (`/api/jobs/{id}/logs/tail`, with `ws`, which can
 * send the Authorization header a browser socket cannot). Frames are chunks, not lines.
 *
 * The server streams the log file from its first byte on every connection (ray/dashboard/modules/job/utils.py
 * file_tail_iterator), so the follower counts what it has handed on. When the socket drops (anything but a normal
 * close, or a normal close while the job still runs), it fills the gap from the full log (GET /api/jobs/{id}/logs),
 * reconnects and skips what it already has: every byte once, in order, nothing lost. A normal close ends the follow
 * once the job is terminal, after a last full-log read for anything the socket did not carry.
 *
 * permessage-deflate is off: with it (ws's default) Ray 2.52's aiohttp server sends compressed frames that never
 * arrive as messages, and the socket closes normally with nothing, so the log would come only from the full-log reads.
 */
import WebSocket from 'ws';
import { RayError, type RayJobsClient } from './jobsClient';
import { TERMINAL_STATUSES, type RayJobDetails } from './jobsSchemas';

export interface FollowOptions {
  /** Each new piece of the log, in order, exactly once. */
  onText: (text: string) => void;
  /** Called when the socket dropped and the follower is filling the gap and reconnecting. */
  onReconnect?: (attempt: number, reason: string) => void;
  /** Stops following (the job keeps running). */
  signal?: AbortSignal;
  /** Reconnects in a row that may fail before giving up; default 5. */
  maxReconnects?: number;
  /** Wait before a reconnect; default 1 s (doubled each failure in a row, at most 10 s). */
  retryDelayMs?: number;
}

export interface FollowResult {
  /** The job as it stood when following ended (terminal unless aborted). */
  job: RayJobDetails | null;
  /** Characters handed on in all. */
  chars: number;
  /** Of those, how many came over the WebSocket (the rest were gaps filled from the full log). */
  fromSocket: number;
  reconnects: number;
  aborted: boolean;
}

type Session = { kind: 'closed-normally' } | { kind: 'dropped'; reason: string } | { kind: 'aborted' };

/** One WebSocket session: hands on the text past `skip` characters; resolves when the socket ends. */
function session(
  client: RayJobsClient,
  id: string,
  skip: number,
  hand: (text: string) => void,
  signal?: AbortSignal,
): Promise<Session> {
  return new Promise((resolve) => {
    let received = 0;
    let got = false;
    const ws = new WebSocket(client.wsUrl(`/api/jobs/${encodeURIComponent(id)}/logs/tail`), {
      headers: client.headers,
      perMessageDeflate: false,
      ...(client.ca ? { ca: client.ca } : {}),
      handshakeTimeout: 30_000,
    });
    let settled = false;
    const done = (s: Session) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      resolve(s);
    };
    const onAbort = () => {
      ws.terminate();
      done({ kind: 'aborted' });
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    if (signal?.aborted) return onAbort();
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      got = true;
      const text = (
        Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data)
      ).toString('utf8');
      const start = received;
      received += text.length;
      if (received <= skip) return;
      hand(start >= skip ? text : text.slice(skip - start));
    });
    let failure = '';
    ws.on('unexpected-response', (_req, res) => {
      failure = `the log socket was refused with HTTP ${res.statusCode}`;
      ws.terminate();
    });
    ws.on('error', (err) => {
      failure ||= (err as NodeJS.ErrnoException).code ?? err.message;
    });
    ws.on('close', (code) => {
      if (failure) done({ kind: 'dropped', reason: failure });
      else if (code === 1000) done({ kind: 'closed-normally' });
      else done({ kind: 'dropped', reason: `the log socket closed with code ${code}${got ? '' : ' before any text'}` });
    });
  });
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

/** Follows job `id`'s log until the job is terminal (or `signal` aborts). An unknown job is a RayError ('not-found'). */
export async function followJobLogs(client: RayJobsClient, id: string, opts: FollowOptions): Promise<FollowResult> {
  let chars = 0;
  let fromSocket = 0;
  const hand = (text: string) => {
    if (text.length === 0) return;
    chars += text.length;
    opts.onText(text);
  };
  const handFromSocket = (text: string) => {
    fromSocket += text.length;
    hand(text);
  };
  /** Hands on whatever the full log has past what was handed on already. */
  const fillGap = async () => {
    const full = await client.logs(id);
    if (full.length > chars) hand(full.slice(chars));
  };
  let job: RayJobDetails | null = await client.job(id); // an unknown id fails here, in one line
  const maxReconnects = opts.maxReconnects ?? 5;
  const baseDelay = opts.retryDelayMs ?? 1000;
  let reconnects = 0;
  let failuresInRow = 0;
  for (;;) {
    const s = await session(client, id, chars, handFromSocket, opts.signal);
    if (s.kind === 'aborted') return { job, chars, fromSocket, reconnects, aborted: true };
    let reason = s.kind === 'dropped' ? s.reason : 'the log socket closed while the job runs';
    try {
      job = await client.job(id);
      if (TERMINAL_STATUSES.has(job.status)) {
        await fillGap();
        return { job, chars, fromSocket, reconnects, aborted: false };
      }
      if (s.kind === 'dropped' || s.kind === 'closed-normally') await fillGap();
      failuresInRow = s.kind === 'dropped' ? failuresInRow + 1 : 0;
    } catch (err) {
      if (!(err instanceof RayError) || err.kind !== 'unreachable') throw err;
      failuresInRow++;
      reason = err.message;
    }
    if (failuresInRow > maxReconnects) {
      throw new RayError(
        `lost the log of Ray job '${id}' at ${client.where} after ${maxReconnects} reconnects (${reason}); what arrived is kept, and the job may still run: mars-lab jobs logs ${id} --ray ${client.where}`,
        'unreachable',
      );
    }
    reconnects++;
    opts.onReconnect?.(reconnects, reason);
    await sleep(Math.min(10_000, baseDelay * 2 ** Math.max(0, failuresInRow - 1)), opts.signal);
    if (opts.signal?.aborted) return { job, chars, fromSocket, reconnects, aborted: true };
  }
}
