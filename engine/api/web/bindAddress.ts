/**
 * Where web mode listens and which names mean this machine: loopback names and addresses, `--host` resolved once to
 * the address bound (refused beyond loopback unless asked for: the HTTP is cleartext), and the SSH tunnel advice.
 * The guards of every request (requestGuard.ts) and `mars-lab serve-model` (engine/serveModel/) use them too.
 */
import dns from 'node:dns/promises';
import net from 'node:net';
import { UserError } from '../../base/userError';

/** The port `mars-lab serve` uses by default; named in the SSH tunnel advice. */
export const DEFAULT_PORT = 4780;

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1']);
const WILDCARD = new Set(['0.0.0.0', '::', '[::]']);
const LOOPBACK_ADDRESSES = new net.BlockList();
LOOPBACK_ADDRESSES.addSubnet('127.0.0.0', 8, 'ipv4');
LOOPBACK_ADDRESSES.addAddress('::1', 'ipv6');

export const unbracket = (name: string): string =>
  name.startsWith('[') && name.endsWith(']') ? name.slice(1, -1) : name;

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
