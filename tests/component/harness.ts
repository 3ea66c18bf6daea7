/**
 * Component tests of the renderer's inspector components in the same headless Chromium as the browser tests (Debian's,
 * driven by playwright-core), served by Vite's dev server with the Svelte plugin: no DOM emulation, the real layout,
 * titles and keyboard. The page (tests/component/harness/index.html) loads tests/component/harness/harness.ts,
 * which mounts a component by name with the props the test sends.
 *
 * Fixtures are recorded trajectories.jsonl files under tests/fixtures/ (see tests/fixtures/README.md).
 */
import fs from 'node:fs';
import path from 'node:path';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { type Browser, type Page } from 'playwright-core';
import { launchChromium } from '../helpers/chromium';
import { createServer, type ViteDevServer } from 'vite';

export { CHROMIUM, haveChromium } from '../helpers/chromium';
export const OUTPUT = path.resolve('tests/output/component');

export function readFixture(name: string): Record<string, unknown>[] {
  return fs
    .readFileSync(path.resolve('tests/fixtures', name), 'utf8')
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

export interface Harness {
  page: Page;
  errors: string[];
  mount(name: string, props: Record<string, unknown>): Promise<void>;
  update(changes: Record<string, unknown>): Promise<void>;
  shot(name: string): Promise<void>;
  close(): Promise<void>;
}

export async function openHarness(): Promise<Harness> {
  // The repository is the server's root, so the page can load the renderer's sources by their paths.
  const root = path.resolve('.');
  const server: ViteDevServer = await createServer({
    configFile: false,
    root,
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
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (error) => errors.push(error.message));
    page.on('console', (m) => {
      if (m.type() === 'error') errors.push(m.text());
    });
    await page.goto(`http://127.0.0.1:${port}/tests/component/harness/index.html`);
    await page
      .waitForFunction(() => (globalThis as unknown as { __ready?: boolean }).__ready === true, undefined, {
        timeout: 60_000,
      })
      .catch((error: Error) => {
        throw new Error(`the harness page did not start: ${errors.join('; ') || error.message}`);
      });
    fs.mkdirSync(OUTPUT, { recursive: true });
    const b = browser;
    return {
      page,
      errors,
      async mount(name, props) {
        await page.evaluate(
          ([n, p]) => (globalThis as unknown as { __mount(n: string, p: unknown): void }).__mount(n, p),
          [name, props] as const,
        );
      },
      async update(changes) {
        await page.evaluate((c) => (globalThis as unknown as { __update(c: unknown): void }).__update(c), changes);
      },
      async shot(name) {
        await page.screenshot({ path: path.join(OUTPUT, `${name}.png`), fullPage: true });
      },
      async close() {
        await b.close();
        await server.close();
      },
    };
  } catch (error) {
    await browser?.close();
    await server.close();
    throw error;
  }
}
