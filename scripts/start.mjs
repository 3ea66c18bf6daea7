#!/usr/bin/env node
/**
 * `npm start`: the desktop app where Electron's binary is installed; otherwise one sentence saying so, then web mode
 * (`mars-lab serve`) with the URL to open. Both need the build (`npm run build`); it is made here when it is missing
 * or older than the sources (scripts/buildStamp.mjs).
 *
 * Whether the binary is there is read from the electron package's files, not by `require('electron')`, which would
 * try to download it (from GitHub, unreachable on many lab and CI machines).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isBuildFresh } from './buildStamp.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const electronDir = path.join(root, 'node_modules', 'electron');
const extraArgs = process.argv.slice(2);

function electronBinary() {
  if (process.env.ELECTRON_OVERRIDE_DIST_PATH) return process.env.ELECTRON_OVERRIDE_DIST_PATH;
  const pathFile = path.join(electronDir, 'path.txt');
  if (!fs.existsSync(pathFile)) return null;
  const binary = path.join(electronDir, 'dist', fs.readFileSync(pathFile, 'utf8').trim());
  return fs.existsSync(binary) ? binary : null;
}

function run(command, args) {
  const child = spawn(command, args, { cwd: root, stdio: 'inherit' });
  const forward = (signal) => child.kill(signal);
  process.on('SIGINT', forward);
  process.on('SIGTERM', forward);
  child.on('exit', (code, signal) => process.exit(code ?? (signal ? 1 : 0)));
}

const build = isBuildFresh();
if (!build.fresh) {
  console.log(`Building the app first (npm run build), since ${build.reason}…`);
  const result = spawnSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build'], {
    cwd: root,
    stdio: 'inherit',
  });
  if (result.status !== 0) process.exit(result.status ?? 1);
}

if (electronBinary()) {
  run(process.platform === 'win32' ? 'npx.cmd' : 'npx', ['electron-vite', 'preview', ...extraArgs]);
} else {
  console.log(
    "Electron's binary is not installed here (it downloads from GitHub on first use: run `npx install-electron` where GitHub is reachable), so mars-lab starts in web mode; open the URL below in a browser.",
  );
  run(process.execPath, [path.join(root, 'engine', 'bin', 'mars-lab.mjs'), 'serve', ...extraArgs]);
}
