/**
 * The built renderer's files over HTTP (GET and HEAD only, never outside the renderer's folder), each answer with the
 * security headers (the content security policy of contentSecurityPolicy.ts, no sniffing, no referrer, no caching),
 * and the plain-text refusal every other answer is.
 */
import fs from 'node:fs';
import type http from 'node:http';
import path from 'node:path';
import { CONTENT_SECURITY_POLICY_HEADER } from './contentSecurityPolicy';
import type { Verdict } from './requestGuard';

const CONTENT_TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.wasm': 'application/wasm',
  '.woff2': 'font/woff2',
  '.txt': 'text/plain; charset=utf-8',
};

export const SECURITY_HEADERS = {
  'Content-Security-Policy': CONTENT_SECURITY_POLICY_HEADER,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'Cache-Control': 'no-store',
} as const;

export function refuse(res: http.ServerResponse, status: number, message: string): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': 'text/plain; charset=utf-8', Connection: 'close' });
  res.end(`mars-lab: ${message}\n`);
}

/** Answers one request with a file of `rendererDir`, or a refusal; a request the judge refuses gets its refusal. */
export function serveFile(
  rendererDir: string,
  judge: (req: http.IncomingMessage) => Verdict,
  req: http.IncomingMessage,
  res: http.ServerResponse,
): void {
  const verdict = judge(req);
  if (!verdict.ok) return refuse(res, verdict.status, verdict.message);
  if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, 'only GET');
  const pathname = verdict.pathname;
  const file = path.resolve(rendererDir, `.${pathname === '/' ? '/index.html' : pathname}`);
  if (file !== rendererDir && !file.startsWith(rendererDir + path.sep)) return refuse(res, 404, 'not found');
  let body: Buffer;
  try {
    if (!fs.statSync(file).isFile()) return refuse(res, 404, 'not found');
    body = fs.readFileSync(file);
  } catch {
    return refuse(res, 404, 'not found');
  }
  res.writeHead(200, {
    ...SECURITY_HEADERS,
    'Content-Type': CONTENT_TYPES[path.extname(file).toLowerCase()] ?? 'application/octet-stream',
    'Content-Length': String(body.length),
  });
  res.end(req.method === 'HEAD' ? undefined : body);
}
