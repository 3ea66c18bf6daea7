/**
 * Which of the host's environment variables a window may have sent as a bearer key, and to which hosts (issue 34,
 * finding 2). A window names a variable (an endpoint policy's `apiKeyEnv`, a study's `ray.tokenEnv`) and a URL; the
 * host or its worker then sends the variable's value as `Authorization: Bearer …` to that URL. The web token lies in
 * browser history by design, so whoever holds it must not be able to send `HOME`, or the host's cloud keys, to a URL of
 * their choosing. A window's request may therefore use a variable only when
 * - its name is a key's name: upper case, ending in `_API_KEY`, `_KEY` or `_TOKEN` (KEY_NAME), and
 * - the user who started the host declared it for the URL's host in `MARS_LAB_ALLOW_KEYS`
 *   (`NAME=host[:port],NAME=host[:port]`, e.g. `OPENAI_API_KEY=api.openai.com,RAY_TOKEN=10.0.0.5:8265`).
 *
 * Why an environment variable and not a file in the home: the keys themselves live in the host's environment, so the
 * one who sets them declares where they may go in the same place; and a home is untrusted input (runs are copied in,
 * homes are shared over NFS and come back from Ray clusters by tar), so a grant written there could be forged by
 * whoever can write a run folder. `MARS_LAB_ALLOW_PATHS` (hostGuards.ts) is declared the same way.
 *
 * A declared host without a port matches that host on its scheme's default port only (443 for https, 80 for http); with
 * a port, that port only. The command line is not restricted: its user already holds the environment. Messages name
 * the field and the variable the request gave (already checked to be a name), never a value of the environment.
 */
import { UserError } from '../../base/userError';

/** Environment variable of the host: the variables a window may have sent as keys, each with its host. */
export const ALLOW_KEYS_ENV = 'MARS_LAB_ALLOW_KEYS';

/** A key's name, as a window may give it (README "Web mode's security model"). */
export const KEY_NAME = /^[A-Z][A-Z0-9_]*_(API_KEY|KEY|TOKEN)$/;

const HOST_PORT = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9](?:[A-Za-z0-9.-]{0,252}))(?::(\d{1,5}))?$/;

interface Grant {
  host: string;
  /** null: the scheme's default port. */
  port: string | null;
}

/**
 * The grants of `MARS_LAB_ALLOW_KEYS`: variable name → the hosts it may go to. Entries that do not read as
 * `NAME=host[:port]` with a key's name grant nothing (and are counted, so a message can say so).
 */
export function readKeyGrants(env: NodeJS.ProcessEnv): { grants: Map<string, Grant[]>; bad: number } {
  const grants = new Map<string, Grant[]>();
  let bad = 0;
  for (const entry of (env[ALLOW_KEYS_ENV] ?? '').split(',')) {
    const e = entry.trim();
    if (e === '') continue;
    const eq = e.indexOf('=');
    const name = eq > 0 ? e.slice(0, eq).trim() : '';
    const m = HOST_PORT.exec(eq > 0 ? e.slice(eq + 1).trim() : '');
    if (!KEY_NAME.test(name) || !m) {
      bad++;
      continue;
    }
    const list = grants.get(name) ?? [];
    list.push({ host: m[1]!.toLowerCase(), port: m[2] ?? null });
    grants.set(name, list);
  }
  return { grants, bad };
}

/** `host[:port]` as a URL names it, for messages and for matching; null when the URL does not parse. */
function urlHost(url: string): { host: string; port: string; defaultPort: boolean; text: string } | null {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return null;
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') return null;
  const host = u.hostname.toLowerCase();
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return { host, port, defaultPort: u.port === '', text: u.port ? `${host}:${u.port}` : host };
}

/** Why a window's request may not have the host send the value of `name` as a key to `url`, or null when it may. */
export function keyGrantProblem(name: string, url: string, env: NodeJS.ProcessEnv): string | null {
  const declare = (host: string): string =>
    `start the app (or mars-lab serve) with ${ALLOW_KEYS_ENV}="${name}=${host}" (NAME=host[:port], comma-separated), or run it from the command line`;
  if (!KEY_NAME.test(name)) {
    return `${name} is not a key's name: a window may name only variables in upper case ending in _API_KEY, _KEY or _TOKEN, declared in ${ALLOW_KEYS_ENV}; put the key in such a variable`;
  }
  const target = urlHost(url);
  if (!target) return `the URL is not an http:// or https:// address; give one`;
  const { grants, bad } = readKeyGrants(env);
  const ok = (grants.get(name) ?? []).some(
    (g) => g.host === target.host && (g.port === null ? target.defaultPort : g.port === target.port),
  );
  if (ok) return null;
  const unread = bad > 0 ? ` (${bad} of its entries do not read as NAME=host[:port] and grant nothing)` : '';
  return `${name} is not declared for ${target.text} in ${ALLOW_KEYS_ENV}${unread}, so a window may not have it sent there: ${declare(target.text)}`;
}

/** keyGrantProblem as a thrown UserError, its message led by `field`, the request's field that named the variable. */
export function checkKeyGrant(field: string, name: string, url: string, env: NodeJS.ProcessEnv): void {
  const problem = keyGrantProblem(name, url, env);
  if (problem) throw new UserError(`${field}: ${problem}`);
}
