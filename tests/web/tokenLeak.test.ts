/**
 * The token never reaches another origin (issue 15), in a real headless Chromium (Debian's, driven by playwright-core;
 * never a browser download) against web mode with the built renderer. The page opened with its printed URL keeps the
 * token in sessionStorage and drops it from the address bar; no cookie is set, so a second server on another
 * 127.0.0.1 port (cookies ignore ports) sees no token when the same browser visits it, typed or by a link from the
 * app, nor in a Referer. A page with a token the server refuses (it restarted) says so instead of retrying.
 * Needs the built renderer (`npm run build`).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Browser } from 'playwright-core';
import { CHROMIUM, haveChromium, launchChromium } from '../helpers/chromium';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { DEFAULT_RENDERER_DIR, startWebServer, type WebServer } from '../../engine/api/web/webServer';

if (!haveChromium) {
  console.warn(
    `tests/web/tokenLeak.test.ts skipped: no Chromium at ${CHROMIUM} (apt-get install chromium, or set CHROMIUM_PATH)`,
  );
}

let home: string;
let host: Host;
let server: WebServer;
let other: http.Server;
let otherPort = 0;
const seenByOther: { url: string; headers: http.IncomingHttpHeaders }[] = [];
let browser: Browser;

describe.skipIf(!haveChromium)('the token in a browser', () => {
  beforeAll(async () => {
    const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
    if (!fs.existsSync(index)) {
      throw new Error(
        `the built renderer is missing (${index}): run \`npm run build\` before these tests (npm test does)`,
      );
    }
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-leak-'));
    host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
    server = await startWebServer({ host, port: 0 });
    // Another local server, as a developer runs many: it records everything the browser sends it.
    other = http.createServer((req, res) => {
      seenByOther.push({ url: req.url ?? '', headers: req.headers });
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><title>other</title><p>another local server</p><img src="/pixel.png">');
    });
    await new Promise<void>((resolve) => other.listen(0, '127.0.0.1', () => resolve()));
    otherPort = (other.address() as AddressInfo).port;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await new Promise((r) => (other ? other.close(r) : r(undefined)));
    await server?.close();
    await host?.close();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  });

  it('keeps the token out of the address bar and out of cookies, and no other local server ever sees it', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${server.url}#/runs`);
    await page.locator('[data-testid="host-status"][data-state="open"]').waitFor();
    await page.getByTestId('runs-empty').waitFor();
    // The address bar (and the history entry) lost the token, the hash route stayed; the tab keeps it for reloads.
    expect(page.url()).toBe(`http://127.0.0.1:${server.port}/#/runs`);
    // (Written against globalThis: this file is type-checked without the DOM library.)
    type Dom = {
      sessionStorage: { getItem(key: string): string | null };
      document: {
        createElement(tag: 'a'): { href: string; textContent: string; click(): void };
        body: { append(el: unknown): void };
      };
    };
    expect(await page.evaluate(() => (globalThis as unknown as Dom).sessionStorage.getItem('mars-lab-token'))).toBe(
      server.token,
    );
    await page.reload();
    await page.locator('[data-testid="host-status"][data-state="open"]').waitFor();

    // The same browser visits another server on 127.0.0.1: typed into the address bar, in a new tab, and by a link
    // clicked in the app's page.
    const typed = await context.newPage();
    await typed.goto(`http://127.0.0.1:${otherPort}/typed`);
    await typed.close();
    await page.evaluate((href) => {
      const { document } = globalThis as unknown as Dom;
      const a = document.createElement('a');
      a.href = href;
      a.textContent = 'elsewhere';
      document.body.append(a);
      a.click();
    }, `http://127.0.0.1:${otherPort}/linked`);
    await page.waitForURL(`http://127.0.0.1:${otherPort}/linked`);
    await page.getByText('another local server').waitFor();

    const urls = seenByOther.map((r) => r.url);
    expect(urls).toEqual(expect.arrayContaining(['/typed', '/linked']));
    for (const request of seenByOther) {
      expect(request.url).not.toContain(server.token);
      for (const [name, value] of Object.entries(request.headers)) {
        expect(String(value), `${request.url}: ${name}`).not.toContain(server.token);
      }
      expect(request.headers.cookie, request.url).toBeUndefined();
    }
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });

  it('says the token was refused (a mistyped URL, a restarted server) instead of retrying, and shows how to start without one', async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${server.port}/?token=${'x'.repeat(32)}#/runs`);
    const status = page.getByTestId('host-status');
    await page.locator('[data-testid="host-status"][data-state="refused"]').waitFor();
    expect(await status.textContent()).toContain('token refused');
    expect(page.url()).toBe(`http://127.0.0.1:${server.port}/#/runs`);

    // The real story: the page is open and connected, `serve` restarts on the same port with a new token.
    const first = await startWebServer({ host, port: 0 });
    const open = await context.newPage();
    await open.goto(`${first.url}#/runs`);
    await open.locator('[data-testid="host-status"][data-state="open"]').waitFor();
    const samePort = first.port;
    await first.close();
    const restarted = await startWebServer({ host, port: samePort });
    try {
      await open.locator('[data-testid="host-status"][data-state="refused"]').waitFor();
    } finally {
      await restarted.close();
    }

    const bare = await context.newPage();
    await bare.goto(`http://127.0.0.1:${server.port}/#/runs`);
    await bare.getByTestId('no-host').waitFor();
    await context.close();
  });
});
