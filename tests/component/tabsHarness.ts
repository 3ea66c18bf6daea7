/**
 * The Run page's trajectory tabs (EpisodesTab, TreeTab) in headless Chromium through Vite's dev server, over a real
 * host (engine/api/host/host.ts) on a temporary home in this process: the page's window.api calls go through
 * `page.exposeFunction` to callApi (validated as over IPC or the socket), so the tabs ask the host exactly what they
 * ask in the app. Nothing trains: the launcher refuses every launch; the tests write the run folders themselves.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium';
import { createServer, type ViteDevServer } from 'vite';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { OUTPUT } from './harness';

export interface TabsHarness {
  page: Page;
  host: Host;
  home: string;
  errors: string[];
  /** Sets the address's hash (the route the tabs read), then mounts the tab. */
  mountTab(name: 'EpisodesTab' | 'TreeTab', props: Record<string, unknown>, hash?: string): Promise<void>;
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

const noLaunches: RunLauncher = {
  launch() {
    throw new Error('the tab harness launches nothing');
  },
};

export async function openTabsHarness(width = 1440): Promise<TabsHarness> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-tabs-'));
  const host = await createHost({ home, launcher: noLaunches, transport: 'web' });
  const server: ViteDevServer = await createServer({
    configFile: false,
    root: path.resolve('.'),
    plugins: [svelte()],
    logLevel: 'error',
    server: { port: 0, host: '127.0.0.1', strictPort: false, watch: null },
    optimizeDeps: { noDiscovery: true, include: [] },
  });
  await server.listen();
  const address = server.httpServer!.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  let browser: Browser | undefined;
  try {
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width, height: 1000 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.exposeFunction('__hostCall', async (method: string, params: unknown) => {
      try {
        return { ok: true, value: await callApi(host.handlers, method, params) };
      } catch (error) {
        return { ok: false, message: error instanceof Error ? error.message : String(error) };
      }
    });
    const unsubscribe = host.subscribe(
      (event) =>
        void page
          .evaluate(
            (e) => (globalThis as unknown as { __hostEvent(e: unknown): void }).__hostEvent(e),
            event as unknown,
          )
          .catch(() => undefined),
    );
    await page.goto(`http://127.0.0.1:${port}/tests/component/harness/tabs.html`);
    await page.waitForFunction(
      () => (globalThis as unknown as { __tabsReady?: boolean }).__tabsReady === true,
      undefined,
      { timeout: 60_000 },
    );
    fs.mkdirSync(OUTPUT, { recursive: true });
    const b = browser;
    return {
      page,
      host,
      home,
      errors,
      async mountTab(name, props, hash = '') {
        await page.evaluate((h) => {
          (globalThis as unknown as { location: { hash: string } }).location.hash = h;
        }, hash);
        await page.evaluate(
          ([n, p]) => (globalThis as unknown as { __mountTab(n: string, p: unknown): Promise<void> }).__mountTab(n, p),
          [name, props] as const,
        );
      },
      async shot(name) {
        await page.screenshot({ path: path.join(OUTPUT, `${name}.png`), fullPage: true });
      },
      async close() {
        unsubscribe();
        await b.close();
        await server.close();
        await host.close();
        fs.rmSync(home, { recursive: true, force: true });
      },
    };
  } catch (error) {
    await browser?.close();
    await server.close();
    await host.close();
    fs.rmSync(home, { recursive: true, force: true });
    throw error;
  }
}
