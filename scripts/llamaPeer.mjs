#!/usr/bin/env node
// Installs llama.cpp as a reference engine for the real-model tests (issue 30, item 6b): node-llama-cpp with its
// prebuilt CPU binary for linux-x64, pinned, into `.peer-llama/` (gitignored), apart from the project's own
// dependencies. Installed with the project, node-llama-cpp would bring its CUDA and Vulkan builds as optional
// packages (730 MB); here only the CPU build comes (83 MB, 6 s from the npm registry), with its install script off:
// it would otherwise try to download or build llama.cpp. Again later, it only checks the stamp.
// `node scripts/llamaPeer.mjs [--print]` (--print: the folder, for the tests).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const LLAMA_PACKAGES = ['node-llama-cpp@3.21.1', '@node-llama-cpp/linux-x64@3.21.1'];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const LLAMA_PEER_DIR = path.join(root, '.peer-llama');
const STAMP = path.join(LLAMA_PEER_DIR, 'mars-lab-peer.json');
const ENTRY = path.join(LLAMA_PEER_DIR, 'node_modules', 'node-llama-cpp', 'dist', 'index.js');

function fail(msg) {
  process.stderr.write(`llamaPeer: ${msg}\n`);
  process.exit(2);
}

function installed() {
  try {
    return (
      fs.existsSync(ENTRY) && JSON.parse(fs.readFileSync(STAMP, 'utf8')).packages.join(' ') === LLAMA_PACKAGES.join(' ')
    );
  } catch {
    return false;
  }
}

function main() {
  const print = process.argv.includes('--print');
  if (!installed()) {
    if (process.platform !== 'linux' || process.arch !== 'x64') {
      fail(`the pinned llama.cpp build is for linux-x64; this is ${process.platform}-${process.arch}`);
    }
    fs.rmSync(LLAMA_PEER_DIR, { recursive: true, force: true });
    fs.mkdirSync(LLAMA_PEER_DIR, { recursive: true });
    fs.writeFileSync(
      path.join(LLAMA_PEER_DIR, 'package.json'),
      JSON.stringify({ name: 'mars-lab-llama-peer', private: true, type: 'module' }) + '\n',
    );
    const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
    const args = ['install', '--prefix', LLAMA_PEER_DIR, '--save-exact', '--omit=optional', '--ignore-scripts'];
    process.stderr.write(`+ npm ${[...args, ...LLAMA_PACKAGES].join(' ')}\n`);
    try {
      execFileSync(npm, [...args, '--no-audit', '--no-fund', ...LLAMA_PACKAGES], {
        stdio: ['ignore', process.stderr, process.stderr],
      });
    } catch {
      fail('npm install failed (above); the llama.cpp comparison needs the npm registry once');
    }
    if (!fs.existsSync(ENTRY)) fail(`after npm install, ${ENTRY} is missing`);
    fs.writeFileSync(STAMP, JSON.stringify({ packages: LLAMA_PACKAGES }) + '\n');
  }
  if (print) console.log(LLAMA_PEER_DIR);
  else process.stderr.write(`llama.cpp (node-llama-cpp, CPU) is in ${LLAMA_PEER_DIR}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
