/**
 * Where the app's page comes from, and whether a URL belongs to it. Navigation guards and IPC sender checks both ask
 * `isAppUrl`, so "is this our page?" has one answer.
 *
 * The built app is served from the privileged `app://mars-lab/` scheme (appProtocol.ts), never from file://, so the
 * page has a real origin and no file on disk is reachable by URL. `ELECTRON_RENDERER_URL` (electron-vite dev) is
 * followed only by an unpackaged app, and only to an http(s) server on this machine's loopback.
 */
import { UserError } from '../engine/base/userError';
import { APP_HOST, APP_INDEX_URL, APP_SCHEME } from './appProtocol';

export type AppLocation =
  /** electron-vite dev: the renderer is served by Vite on loopback; everything on that origin is the app. */
  | { readonly kind: 'dev-server'; readonly url: string; readonly origin: string }
  /** Built app: exactly one page, app://mars-lab/index.html, served from out/renderer by appProtocol.ts. */
  | { readonly kind: 'app-protocol'; readonly url: string };

export interface AppLocationInputs {
  /** ELECTRON_RENDERER_URL, set by `electron-vite dev`. */
  readonly devServerUrl: string | undefined;
  /** app.isPackaged: a packaged app never follows the environment to another page. */
  readonly isPackaged: boolean;
}

export const BUILT_APP: AppLocation = { kind: 'app-protocol', url: APP_INDEX_URL };

/**
 * True for names that can only mean this machine: localhost, 127.0.0.0/8 and ::1. `hostname` is a WHATWG URL's
 * (already lower-cased, IPv4 shorthands such as 127.1 or 0x7f.1 normalised to dotted quads, IPv6 in brackets).
 */
export function isLoopbackHostname(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  const quad = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(hostname);
  return quad !== null && quad[1] === '127' && quad.slice(2).every((part) => Number(part) <= 255);
}

/**
 * The dev server a `ELECTRON_RENDERER_URL` names, or a UserError saying why it is refused: it must be http(s), on a
 * loopback host, without credentials. Anything else would hand the window, and with it the IPC contract, to a page the
 * developer did not start.
 */
export function parseDevServerUrl(value: string): { url: string; origin: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new UserError(
      `ELECTRON_RENDERER_URL is not a URL ('${value.slice(0, 200)}'); unset it to load the built renderer.`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UserError(
      `ELECTRON_RENDERER_URL must be an http(s) URL, got '${url.protocol}'; unset it to load the built renderer.`,
    );
  }
  if (!isLoopbackHostname(url.hostname)) {
    throw new UserError(
      `ELECTRON_RENDERER_URL must name a loopback host (localhost, 127.0.0.1, [::1]), got '${url.hostname}'; unset it to load the built renderer.`,
    );
  }
  if (url.username !== '' || url.password !== '') {
    throw new UserError(
      'ELECTRON_RENDERER_URL must not carry a user name or password; unset it to load the built renderer.',
    );
  }
  return { url: url.href, origin: url.origin };
}

export function resolveAppLocation(inputs: AppLocationInputs): AppLocation {
  if (inputs.devServerUrl && !inputs.isPackaged) {
    return { kind: 'dev-server', ...parseDevServerUrl(inputs.devServerUrl) };
  }
  return BUILT_APP;
}

/** True when `candidate` is the app's page (any query or fragment), false for anything else, including garbage. */
export function isAppUrl(candidate: string, app: AppLocation): boolean {
  let url: URL;
  try {
    url = new URL(candidate);
  } catch {
    return false;
  }
  if (app.kind === 'dev-server') return url.origin === app.origin;
  // app: is not a special scheme to WHATWG URL (its origin reads 'null'), so compare the parts. The page is one path:
  // other files under app://mars-lab/ are scripts and styles, never documents that may drive the host.
  return (
    url.protocol === `${APP_SCHEME}:` &&
    url.host === APP_HOST &&
    url.username === '' &&
    url.password === '' &&
    url.pathname === new URL(APP_INDEX_URL).pathname
  );
}
