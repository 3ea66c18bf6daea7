/**
 * The app in web mode for a Chromium test: a host over `home`, its web server on a free port, Debian's Chromium
 * (playwright-core) and one page, with the page's uncaught errors collected. Needs the built renderer.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { DEFAULT_RENDERER_DIR, startWebServer, type WebServer } from '../../engine/api/web/webServer';
import { launchChromium } from './chromium';

export interface WebUi {
  host: Host;
  server: WebServer;
  browser: Browser;
  page: Page;
  pageErrors: string[];
  close(): Promise<void>;
}

export async function openWebUi(home: string, viewport = { width: 1440, height: 1000 }): Promise<WebUi> {
  const index = path.join(DEFAULT_RENDERER_DIR, 'index.html');
  if (!fs.existsSync(index)) throw new Error(`the built renderer is missing (${index}): run \`npm run build\` first`);
  const host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  const server = await startWebServer({ host, port: 0 });
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport });
  const pageErrors: string[] = [];
  page.on('pageerror', (error) => pageErrors.push(error.message));
  return {
    host,
    server,
    browser,
    page,
    pageErrors,
    async close() {
      await browser.close();
      await server.close();
      await host.close();
    },
  };
}
