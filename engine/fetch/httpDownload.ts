/**
 * A download that survives a cut: bytes go to a `.part` file that stays when the transfer breaks (a lost network, a
 * killed process), and the next attempt asks only for the rest with an HTTP Range request. pip cannot do this (pip
 * 23.2 here has no resume; pip 25.1's --resume-retries resumes only inside one invocation), so pip resolves the file's
 * URL and this fetches it; files.pythonhosted.org answers `Range: bytes=N-` with 206 and a Content-Range (checked
 * 2026-12-04). A server that ignores the range (200) restarts the file from byte 0; one that says 416 while the part
 * already has the whole length is done. Within one call a broken transfer is resumed a few times before giving up.
 *
 * Node's fetch takes the machine's CA through NODE_EXTRA_CA_CERTS but no proxy settings: a failure before the first
 * byte is a `NoConnection`, so the caller can hand the download to pip (which has both) instead.
 */
import fs from 'node:fs';
import { once } from 'node:events';

/** The server could not be reached at all (nothing received in this call): another client may do better. */
export class NoConnection extends Error {}

/** The server answered with an error status (404, 403, 500…): retrying here will not help. */
export class HttpStatus extends Error {}

/** The transfer broke after some bytes; the part file keeps them for the next attempt. */
export class CutDownload extends Error {
  constructor(
    message: string,
    readonly have: number,
    readonly total: number | undefined,
  ) {
    super(message);
  }
}

export interface DownloadOptions {
  /** Hears the bytes in the part file and the whole length when known. */
  onBytes?: (done: number, total: number | undefined) => void;
  /** Abort a transfer that receives nothing for this long (ms). */
  idleMs?: number;
  /** Attempts within this call after a cut that made progress. */
  attempts?: number;
  fetchImpl?: typeof fetch;
}

function partSize(file: string): number {
  try {
    return fs.statSync(file).size;
  } catch {
    return 0;
  }
}

function causeOf(err: unknown): string {
  const e = err as { cause?: { code?: string; message?: string }; message?: string };
  return e.cause?.code ?? e.cause?.message ?? e.message ?? String(err);
}

/** `bytes START-END/TOTAL` → { start, total } (total undefined when `*`). */
function contentRange(value: string | null): { start: number; total: number | undefined } | undefined {
  const m = /^bytes (\d+)-\d+\/(\d+|\*)$/.exec(value ?? '');
  return m ? { start: Number(m[1]), total: m[2] === '*' ? undefined : Number(m[2]) } : undefined;
}

/** One request: appends to `part` from its current size; resolves once the file is whole. */
async function attempt(url: string, part: string, opts: DownloadOptions, received: { any: boolean }): Promise<void> {
  const have = partSize(part);
  const controller = new AbortController();
  const idleMs = opts.idleMs ?? 60_000;
  let timer = setTimeout(() => controller.abort(new Error(`nothing received for ${idleMs / 1000} s`)), idleMs);
  const headers: Record<string, string> = have > 0 ? { Range: `bytes=${have}-` } : {};
  try {
    const res = await (opts.fetchImpl ?? fetch)(url, { headers, signal: controller.signal, redirect: 'follow' });
    received.any = true;
    let append = false;
    let total: number | undefined;
    if (res.status === 206) {
      const range = contentRange(res.headers.get('content-range'));
      append = range?.start === have;
      total = range?.total;
      if (!append) throw new CutDownload(`${url}: the server answered a range from another byte`, have, total);
    } else if (res.status === 416 && have > 0) {
      const m = /^bytes \*\/(\d+)$/.exec(res.headers.get('content-range') ?? '');
      if (m && Number(m[1]) === have) return; // already whole
      fs.truncateSync(part, 0); // the part is longer than the file: start over
      throw new CutDownload(`${url}: the partial download was longer than the file; starting over`, 0, undefined);
    } else if (res.status === 200) {
      const length = Number(res.headers.get('content-length'));
      total = Number.isFinite(length) && length > 0 ? length : undefined;
    } else {
      throw new HttpStatus(`${url}: HTTP ${res.status} ${res.statusText}`);
    }
    if (!res.body) throw new HttpStatus(`${url}: HTTP ${res.status} with no body`);
    const out = fs.createWriteStream(part, { flags: append ? 'a' : 'w' });
    let done = append ? have : 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        clearTimeout(timer);
        timer = setTimeout(() => controller.abort(new Error(`nothing received for ${idleMs / 1000} s`)), idleMs);
        if (!out.write(chunk)) await once(out, 'drain');
        done += chunk.length;
        opts.onBytes?.(done, total);
      }
    } finally {
      out.end();
      await once(out, 'close');
    }
    if (total !== undefined && done !== total) {
      throw new CutDownload(`${url}: the transfer ended at ${done} of ${total} bytes`, done, total);
    }
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Downloads `url` into `part`, resuming from what `part` already holds. Throws NoConnection when the server was never
 * reached, CutDownload when the transfer kept breaking (the part file keeps what arrived), HttpStatus for an error
 * status.
 */
export async function downloadResumable(url: string, part: string, opts: DownloadOptions = {}): Promise<void> {
  const attempts = opts.attempts ?? 3;
  const received = { any: false };
  let last: unknown;
  for (let i = 0; i < attempts; i++) {
    const before = partSize(part);
    try {
      await attempt(url, part, opts, received);
      return;
    } catch (err) {
      last = err;
      if (!received.any) throw new NoConnection(`${new URL(url).host}: ${causeOf(err)}`);
      if (err instanceof HttpStatus) throw err;
      if (partSize(part) <= before && i > 0) break; // no progress twice running: give up for now
    }
  }
  const have = partSize(part);
  if (last instanceof CutDownload) throw new CutDownload(last.message, have, last.total);
  throw new CutDownload(`${url}: the transfer broke (${causeOf(last)})`, have, undefined);
}
