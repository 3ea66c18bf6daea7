/**
 * serve-model's two gates, web mode's rules (engine/api/web/webServer.ts): a request must name this server in its
 * Host header (loopback names always; beyond loopback the bound name and address, and with a wildcard bind any IP
 * and this machine's name — a DNS-rebinding name is none of these), and carry the token printed at start as its
 * OpenAI API key (`Authorization: Bearer TOKEN`), compared in constant time.
 */
import net from 'node:net';
import os from 'node:os';
import { timingSafeEqual } from 'node:crypto';
import { isLoopbackHost, parseHostHeader, type BindAddress } from '../api/web/webServer';
import { HttpError } from './protocol';

function sameSecret(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Whether a Host header names this server, bound at `bind` (told `bindHost`) and listening on `port()`. */
export function hostChecker(
  bindHost: string,
  bind: BindAddress,
  port: () => number,
): (value: string | undefined) => boolean {
  const remoteNames = new Set<string>();
  if (!bind.loopback) {
    remoteNames.add(
      bindHost
        .trim()
        .replace(/^\[|\]$/g, '')
        .toLowerCase(),
    );
    remoteNames.add(bind.address.toLowerCase());
    if (bind.wildcard) remoteNames.add(os.hostname().toLowerCase());
  }
  return (value: string | undefined): boolean => {
    const h = parseHostHeader(value);
    if (!h || h.port !== port()) return false;
    const bare = h.name.replace(/^\[|\]$/g, '');
    return isLoopbackHost(bare) || remoteNames.has(bare) || (bind.wildcard && net.isIP(bare) !== 0);
  };
}

/** Throws the 403 or 401 HttpError a request gets when its Host header or its API key is not this server's. */
export function checkAccess(
  headers: { host?: string; authorization?: string },
  hostAllowed: (value: string | undefined) => boolean,
  token: string,
): void {
  if (!hostAllowed(headers.host)) {
    throw new HttpError(403, 'this server answers only to its own address (Host header refused)', 'permission_error');
  }
  const auth = /^Bearer (.+)$/.exec(headers.authorization ?? '');
  if (!auth || !sameSecret(auth[1]!.trim(), token)) {
    throw new HttpError(
      401,
      'missing or wrong API key: send the token serve-model printed at start as the API key (Authorization: Bearer TOKEN)',
      'invalid_request_error',
      'invalid_api_key',
    );
  }
}
