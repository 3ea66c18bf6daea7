/**
 * The built renderer is served from a privileged custom scheme, `app://mars-lab/…`, instead of file:// (Electron's
 * security checklist). The page then has a real origin ('self' in the CSP means the app, not every file on disk),
 * responses carry the CSP header, and a URL can reach only the files of out/renderer: dot segments, encoded slashes,
 * backslashes and NUL are refused before any path is built, and the built path must stay inside that folder.
 *
 * Plain module with a type-only Electron import: main/index.ts passes `APP_SCHEME_PRIVILEGES` to
 * protocol.registerSchemesAsPrivileged and `createAppProtocolHandler(dir)` to protocol.handle; tests call both directly.
 */
import type { CustomScheme } from 'electron';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { CONTENT_SECURITY_POLICY_HEADER } from './contentSecurityPolicy';

export const APP_SCHEME = 'app';
export const APP_HOST = 'mars-lab';
export const APP_INDEX_URL = `${APP_SCHEME}://${APP_HOST}/index.html`;

/**
 * standard: relative URLs and a real origin (app://mars-lab); secure: a secure context, like https;
 * supportFetchAPI: the page may fetch() its own files (tfjs's .wasm); codeCache: V8 caches the scripts.
 * Left off on purpose: bypassCSP (the policy must apply), corsEnabled (other origins must not read the app's files),
 * allowServiceWorkers and stream (not needed).
 */
export const APP_SCHEME_PRIVILEGES = {
  scheme: APP_SCHEME,
  privileges: { standard: true, secure: true, supportFetchAPI: true, codeCache: true },
} as const satisfies CustomScheme;

/** Content types of what the renderer build emits; anything else goes out as bytes the page cannot sniff into HTML. */
const CONTENT_TYPES: Readonly<Record<string, string>> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.txt': 'text/plain; charset=utf-8',
};

export function contentTypeOf(file: string): string {
  return CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream';
}

/**
 * The file under `rootDir` that `requestUrl` names, or null when the URL is not app://mars-lab/… or leaves the folder
 * in any spelling. `/` means index.html. Each path segment is percent-decoded once and must then be a plain name.
 */
export function resolveAppAsset(rootDir: string, requestUrl: string): string | null {
  let url: URL;
  try {
    url = new URL(requestUrl);
  } catch {
    return null;
  }
  if (url.protocol !== `${APP_SCHEME}:` || url.host !== APP_HOST || url.username !== '' || url.password !== '') {
    return null;
  }
  const segments = (url.pathname === '/' ? '/index.html' : url.pathname).split('/').slice(1);
  const names: string[] = [];
  for (const segment of segments) {
    let name: string;
    try {
      name = decodeURIComponent(segment);
    } catch {
      return null; // malformed percent-encoding
    }
    // Empty (`//`, trailing `/`), dot segments that survived URL parsing (`%2e%2e` decoded here), separators hidden as
    // %2f or %5c, NUL, and ':' (a Windows drive or stream name) are never part of a built asset's path.
    if (name === '' || name === '.' || name === '..' || /[/\\:\0]/.test(name)) return null;
    names.push(name);
  }
  const root = path.resolve(rootDir);
  const file = path.resolve(root, ...names);
  const relative = path.relative(root, file);
  if (relative === '' || relative.startsWith('..') || path.isAbsolute(relative)) return null;
  return file;
}

/** The parts of a Fetch API Request the handler reads (Electron passes a GlobalRequest). */
export interface AppProtocolRequest {
  readonly url: string;
  readonly method: string;
}

const BASE_HEADERS = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY_HEADER,
  'X-Content-Type-Options': 'nosniff',
  'Cache-Control': 'no-cache',
} as const;

function refusal(status: 404 | 405): Response {
  return new Response(status === 404 ? 'not found' : 'method not allowed', {
    status,
    headers: { ...BASE_HEADERS, 'Content-Type': 'text/plain; charset=utf-8' },
  });
}

/**
 * For protocol.handle('app', …): GET and HEAD of files inside `rootDir` (out/renderer), with their content type and
 * the CSP header; 404 for anything outside it, missing, or not a regular file; 405 for other methods. Reads with
 * fs, which inside a packaged app reads from app.asar, so no file:// URL is involved anywhere.
 */
export function createAppProtocolHandler(rootDir: string): (request: AppProtocolRequest) => Promise<Response> {
  return async (request) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return refusal(405);
    const file = resolveAppAsset(rootDir, request.url);
    if (file === null) return refusal(404);
    try {
      if (!(await stat(file)).isFile()) return refusal(404);
      const body = request.method === 'HEAD' ? null : await readFile(file);
      return new Response(body, { status: 200, headers: { ...BASE_HEADERS, 'Content-Type': contentTypeOf(file) } });
    } catch {
      return refusal(404);
    }
  };
}
