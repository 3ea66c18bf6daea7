#!/usr/bin/env node
/**
 * `npm run dev`: the app while you change it. The engine always runs from its TypeScript sources (MARS_LAB_DEV=1,
 * engine/bin/builtEntry.mjs), so a run started after an edit uses it.
 * - With Electron's binary installed: `electron-vite dev --watch` (the window reloads on a renderer change; main and
 *   preload rebuild and restart on theirs).
 * - Without it (many lab and CI machines: it downloads from GitHub): web mode. The renderer is rebuilt into
 *   out/renderer on every change (vite build --watch, with electron.vite.config.ts's renderer settings) and
 *   `mars-lab serve` serves it; reload the page to see a change. The server restarts when a file under engine/
 *   changes (it holds the host's code), printing its new URL. Flags after `--` go to `mars-lab serve`.
 * Ctrl-C stops everything.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { watch } from 'chokidar';
import { build, loadConfigFromFile } from 'vite';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const env = { ...process.env, MARS_LAB_DEV: '1' };
const extraArgs = process.argv.slice(2);

/** Electron's binary, read from the electron package's files (require('electron') would try to download it). */
function electronInstalled() {
  if (process.env.ELECTRON_OVERRIDE_DIST_PATH) return true;
  const pathFile = path.join(root, 'node_modules', 'electron', 'path.txt');
  if (!fs.existsSync(pathFile)) return false;
  return fs.existsSync(path.join(root, 'node_modules', 'electron', 'dist', fs.readFileSync(pathFile, 'utf8').trim()));
}

if (electronInstalled()) {
  const child = spawn(
    process.platform === 'win32' ? 'npx.cmd' : 'npx',
    ['electron-vite', 'dev', '--watch', ...extraArgs],
    { cwd: root, env, stdio: 'inherit' },
  );
  for (const signal of ['SIGINT', 'SIGTERM']) process.on(signal, () => child.kill(signal));
  child.on('exit', (code) => process.exit(code ?? 0));
} else {
  console.log(
    "Electron's binary is not installed here, so dev runs in web mode: open the URL below; reload it after a change.",
  );
  await webMode();
}

async function webMode() {
  const loaded = await loadConfigFromFile(
    { command: 'build', mode: 'development' },
    path.join(root, 'electron.vite.config.ts'),
    root,
    'warn',
  );
  const renderer = loaded?.config?.renderer;
  if (!renderer) throw new Error('electron.vite.config.ts has no renderer section');
  // The first build completes before the server starts, so the first page load has a renderer to serve.
  const watcher = await build({
    ...renderer,
    configFile: false,
    mode: 'development',
    logLevel: 'warn',
    build: { ...renderer.build, emptyOutDir: true, watch: {} },
  });
  await new Promise((resolve) => {
    watcher.on('event', (event) => {
      if (event.code === 'END') {
        console.log(`renderer built into out/renderer (${new Date().toLocaleTimeString()})`);
        resolve(undefined);
      }
      if (event.code === 'ERROR') console.error(`renderer build failed: ${event.error.message}`);
    });
  });

  let server = null;
  let stopping = false;
  let restarting = false;
  const start = () => {
    server = spawn(process.execPath, [path.join(root, 'engine', 'bin', 'mars-lab.mjs'), 'serve', ...extraArgs], {
      cwd: root,
      env,
      stdio: 'inherit',
    });
    server.on('exit', (code, signal) => {
      server = null;
      if (stopping) process.exit(0);
      if (restarting) {
        restarting = false;
        start();
      } else {
        console.error(`mars-lab serve exited (${code ?? signal}); it starts again on the next change under engine/`);
      }
    });
  };
  const restart = () => {
    if (!server) return start();
    if (restarting) return;
    restarting = true;
    server.kill('SIGTERM');
  };
  start();

  let timer = null;
  const engineWatcher = watch(path.join(root, 'engine'), { ignoreInitial: true });
  engineWatcher.on('all', (_event, file) => {
    if (!/\.(ts|mjs)$/.test(file)) return;
    clearTimeout(timer);
    timer = setTimeout(() => {
      console.log(`${path.relative(root, file)} changed: restarting mars-lab serve`);
      restart();
    }, 300);
  });

  const stop = async () => {
    stopping = true;
    await engineWatcher.close();
    await watcher.close();
    if (server) server.kill('SIGTERM');
    else process.exit(0);
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
