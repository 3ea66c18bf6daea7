/**
 * The built renderer's custom scheme (main/appProtocol.ts) and the dev-server decision (main/appLocation.ts), as plain
 * modules: the handler serves a temporary renderer folder and must refuse every way out of it; ELECTRON_RENDERER_URL
 * is followed only to loopback http(s), and never by a packaged app.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { BUILT_APP, isLoopbackHostname, parseDevServerUrl, resolveAppLocation } from '../../main/appLocation';
import {
  APP_INDEX_URL,
  APP_SCHEME_PRIVILEGES,
  createAppProtocolHandler,
  resolveAppAsset,
  type AppProtocolRequest,
} from '../../main/appProtocol';
import { CONTENT_SECURITY_POLICY_HEADER } from '../../main/contentSecurityPolicy';
import { UserError } from '../../engine/base/userError';

const SECRET = 'root:x:0:0:secret-outside-the-renderer';

/** <tmp>/out/renderer holds the app; <tmp>/out/secret.txt and <tmp>/secret.txt are what traversal would reach. */
let root: string;
let rendererDir: string;
let serve: (request: AppProtocolRequest) => Promise<Response>;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'mars-lab-protocol-'));
  rendererDir = join(root, 'out', 'renderer');
  mkdirSync(join(rendererDir, 'assets'), { recursive: true });
  writeFileSync(join(rendererDir, 'index.html'), '<!doctype html><title>mars-lab</title>');
  writeFileSync(join(rendererDir, 'assets', 'index-abc.js'), 'export const x = 1;');
  writeFileSync(join(rendererDir, 'assets', 'index-abc.css'), 'body{}');
  writeFileSync(join(rendererDir, 'assets', 'tfjs-backend-wasm.wasm'), Buffer.from([0x00, 0x61, 0x73, 0x6d]));
  writeFileSync(join(rendererDir, 'assets', 'notes.unknownext'), '<script>alert(1)</script>');
  writeFileSync(join(root, 'out', 'secret.txt'), SECRET);
  writeFileSync(join(root, 'secret.txt'), SECRET);
  serve = createAppProtocolHandler(rendererDir);
});

const get = (url: string): Promise<Response> => serve({ url, method: 'GET' });

describe('app:// scheme privileges', () => {
  it('is a standard, secure scheme that may fetch its own files, and nothing more', () => {
    expect(APP_SCHEME_PRIVILEGES.scheme).toBe('app');
    const privileges: Record<string, boolean | undefined> = APP_SCHEME_PRIVILEGES.privileges;
    expect(privileges['standard']).toBe(true);
    expect(privileges['secure']).toBe(true);
    expect(privileges['supportFetchAPI']).toBe(true);
    // The CSP must apply, other origins must not read the app, and no service worker may outlive a response.
    for (const off of ['bypassCSP', 'corsEnabled', 'allowServiceWorkers', 'stream']) {
      expect(privileges[off], off).not.toBe(true);
    }
  });
});

describe('app:// handler', () => {
  it('serves index.html (also for /) with the CSP header', async () => {
    for (const url of [APP_INDEX_URL, 'app://mars-lab/']) {
      const response = await get(url);
      expect(response.status, url).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(response.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY_HEADER);
      expect(response.headers.get('x-content-type-options')).toBe('nosniff');
      expect(await response.text()).toBe('<!doctype html><title>mars-lab</title>');
    }
  });

  it('serves assets with their content types (scripts as JavaScript, tfjs .wasm as application/wasm)', async () => {
    const expected: Array<[string, string, string | null]> = [
      ['app://mars-lab/assets/index-abc.js', 'text/javascript; charset=utf-8', 'export const x = 1;'],
      ['app://mars-lab/assets/index-abc.css', 'text/css; charset=utf-8', 'body{}'],
      ['app://mars-lab/assets/tfjs-backend-wasm.wasm', 'application/wasm', null],
      // Unknown types go out as bytes with nosniff, never as something the page could render as HTML.
      ['app://mars-lab/assets/notes.unknownext', 'application/octet-stream', null],
      ['app://mars-lab/assets/index-abc.js?v=1#x', 'text/javascript; charset=utf-8', 'export const x = 1;'],
    ];
    for (const [url, type, body] of expected) {
      const response = await get(url);
      expect(response.status, url).toBe(200);
      expect(response.headers.get('content-type'), url).toBe(type);
      if (body !== null) expect(await response.text()).toBe(body);
    }
    const wasm = new Uint8Array(await (await get('app://mars-lab/assets/tfjs-backend-wasm.wasm')).arrayBuffer());
    expect([...wasm]).toEqual([0x00, 0x61, 0x73, 0x6d]);
  });

  it('refuses every way out of the renderer folder, and never returns the file outside', async () => {
    const escapes = [
      'app://mars-lab/../../etc/passwd',
      'app://mars-lab/../secret.txt',
      'app://mars-lab/../../secret.txt',
      'app://mars-lab/%2e%2e/secret.txt',
      'app://mars-lab/%2E%2E/%2e%2e/secret.txt',
      'app://mars-lab/..%2fsecret.txt',
      'app://mars-lab/assets/..%2f..%2fsecret.txt',
      'app://mars-lab/assets/%2e%2e%2f%2e%2e%2fsecret.txt',
      'app://mars-lab/..%5csecret.txt',
      'app://mars-lab/assets/..%5c..%5c..%5csecret.txt',
      'app://mars-lab/%252e%252e%252fsecret.txt', // double-encoded: decoded once, it is a literal name, not a path
      `app://mars-lab/${encodeURIComponent(join(root, 'secret.txt'))}`, // an absolute path in one segment
      'app://mars-lab/C:%5csecret.txt',
      'app://mars-lab/index.html%00.js',
      'app://mars-lab/%',
      'app://mars-lab/assets/%E0%A4%A',
      'app://mars-lab//etc/passwd',
      'app://mars-lab/assets/',
      'app://mars-lab/assets',
      'app://other-host/index.html',
      'app://user:pass@mars-lab/index.html',
      'file:///etc/passwd',
      'https://mars-lab/index.html',
      'not a url',
    ];
    for (const url of escapes) {
      const response = await get(url);
      expect(response.status, url).toBe(404);
      expect(await response.text(), url).not.toContain('secret-outside');
    }
    for (const url of escapes.slice(0, 14)) {
      const file = resolveAppAsset(rendererDir, url);
      if (file !== null) expect(file.startsWith(join(rendererDir, '/')), `${url} → ${file}`).toBe(true);
    }
  });

  it('refuses hidden separators and dot segments even where the path would stay inside (each layer on its own)', () => {
    // Name layer: these land inside the folder once decoded, yet a built asset never has such a name.
    for (const url of [
      'app://mars-lab/assets%2findex-abc.js',
      'app://mars-lab/assets%5cindex-abc.js',
      'app://mars-lab/assets/x%2f..%2findex-abc.js',
      'app://mars-lab/assets/%2e',
      'app://mars-lab/index.html:stream',
    ]) {
      expect(resolveAppAsset(rendererDir, url), url).toBeNull();
    }
    // Containment layer: the resolved path of plain names must stay under the folder, and not be the folder itself.
    expect(resolveAppAsset(rendererDir, 'app://mars-lab/assets/index-abc.js')).toBe(
      join(rendererDir, 'assets', 'index-abc.js'),
    );
  });

  it('answers HEAD without a body and refuses other methods', async () => {
    const head = await serve({ url: APP_INDEX_URL, method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(head.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(await head.text()).toBe('');
    for (const method of ['POST', 'PUT', 'DELETE']) {
      expect((await serve({ url: APP_INDEX_URL, method })).status, method).toBe(405);
    }
  });

  it('answers 404 for a missing file', async () => {
    expect((await get('app://mars-lab/assets/missing.js')).status).toBe(404);
  });
});

describe('ELECTRON_RENDERER_URL', () => {
  const unpackaged = (devServerUrl: string) => resolveAppLocation({ devServerUrl, isPackaged: false });

  it('is followed to a loopback http(s) dev server when not packaged', () => {
    for (const [value, origin] of [
      ['http://localhost:5173', 'http://localhost:5173'],
      ['http://localhost:5173/', 'http://localhost:5173'],
      ['http://127.0.0.1:5173/', 'http://127.0.0.1:5173'],
      ['http://127.9.8.7:5173/', 'http://127.9.8.7:5173'],
      ['http://127.1:5173/', 'http://127.0.0.1:5173'], // WHATWG URL normalises the shorthand
      ['https://[::1]:5173/', 'https://[::1]:5173'],
      ['http://LOCALHOST:5173/', 'http://localhost:5173'],
    ] as const) {
      expect(unpackaged(value), value).toMatchObject({ kind: 'dev-server', origin });
    }
  });

  it('is refused, with one line naming the variable, for anything but loopback http(s)', () => {
    for (const value of [
      'http://evil.example:5173',
      'http://evil.example:5173/?localhost',
      'http://localhost.evil.example:5173/',
      'http://127.0.0.1.evil.example/',
      'http://128.0.0.1:5173/',
      'http://0.0.0.0:5173/',
      'http://10.0.0.5:5173/',
      'http://[::ffff:7f00:1]:5173/', // an IPv4-mapped address is not ::1
      'http://[::2]:5173/',
      'http://user:pw@localhost:5173/',
      'file:///tmp/index.html',
      'javascript:alert(1)',
      'data:text/html,<script>alert(1)</script>',
      'ws://localhost:5173/',
      'app://mars-lab/index.html',
      'not a url',
    ]) {
      let error: unknown;
      try {
        unpackaged(value);
      } catch (caught) {
        error = caught;
      }
      expect(error, value).toBeInstanceOf(UserError);
      const message = (error as Error).message;
      expect(message, value).toMatch(/^ELECTRON_RENDERER_URL /);
      expect(message.includes('\n'), value).toBe(false);
    }
  });

  it('is ignored by a packaged app, loopback or not', () => {
    for (const devServerUrl of [
      'http://localhost:5173/',
      'http://evil.example:5173',
      'javascript:alert(1)',
      undefined,
    ]) {
      expect(resolveAppLocation({ devServerUrl, isPackaged: true }), String(devServerUrl)).toEqual(BUILT_APP);
    }
    expect(resolveAppLocation({ devServerUrl: undefined, isPackaged: false })).toEqual(BUILT_APP);
    expect(resolveAppLocation({ devServerUrl: '', isPackaged: false })).toEqual(BUILT_APP);
  });

  it('names loopback hosts only', () => {
    expect(isLoopbackHostname('localhost')).toBe(true);
    expect(isLoopbackHostname('127.255.255.254')).toBe(true);
    expect(isLoopbackHostname('[::1]')).toBe(true);
    expect(isLoopbackHostname('127.0.0.256')).toBe(false);
    expect(isLoopbackHostname('::1')).toBe(false); // a WHATWG hostname keeps the brackets
    expect(parseDevServerUrl('http://[0:0:0:0:0:0:0:1]:5173/').origin).toBe('http://[::1]:5173');
  });
});
