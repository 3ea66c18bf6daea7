/**
 * What every request to web mode is judged on, parsed once and never throwing: its target's path, and whether its Host
 * and Origin name this server (loopback names always; beyond loopback, only the name and address it was told to
 * bind), so another site open in the same browser cannot drive the host, nor reach it through DNS rebinding.
 */
import type http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import { isLoopbackHost, unbracket, type BindAddress } from './bindAddress';

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

export type Verdict = { ok: true; pathname: string } | { ok: false; status: number; reason: string; message: string };

/**
 * The judge of this server's requests. `port` is read at each request (the server knows its port once listening).
 */
export function createRequestJudge(
  bindHost: string,
  bind: BindAddress,
  port: () => number,
): (req: http.IncomingMessage) => Verdict {
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
    return parsed !== null && parsed.port === port() && nameAllowed(parsed.name);
  };

  const originAllowed = (origin: string | undefined): boolean => {
    if (origin === undefined) return true; // not a browser's cross-site request: no Origin on top-level navigations and non-browser clients
    let url: URL;
    try {
      url = new URL(origin);
    } catch {
      return false;
    }
    return url.protocol === 'http:' && Number(url.port || 80) === port() && nameAllowed(url.hostname);
  };

  /** Everything a request is judged on, parsed once; never throws. */
  return (req: http.IncomingMessage): Verdict => {
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
}
