#!/usr/bin/env node
// Creates the project's own Python virtual environment with a pinned Ray, for the Ray tests (tests/ray/) and for
// trying `mars-lab study --ray` against a local head: `node scripts/rayEnv.mjs` makes `.venv-ray/` (gitignored) and
// installs ray[default]==RAY_VERSION with pip. Again later, it only checks the version that is there.
// Needs python3 ≥ 3.9 with the venv module (Debian: apt-get install python3-venv) and access to the package index.
// `--print` prints the path of the `ray` executable (after making sure it is there).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const RAY_VERSION = '2.52.1';
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const VENV = path.join(root, '.venv-ray');
export const RAY_BIN = path.join(VENV, 'bin', 'ray');
const python = path.join(VENV, 'bin', 'python');

function installedVersion() {
  if (!fs.existsSync(python)) return null;
  try {
    return execFileSync(python, ['-c', 'import ray; print(ray.__version__)'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
  } catch {
    return null;
  }
}

function run(cmd, args) {
  process.stderr.write(`+ ${cmd} ${args.join(' ')}\n`);
  execFileSync(cmd, args, { stdio: ['ignore', process.stderr, process.stderr] });
}

function main() {
  const print = process.argv.includes('--print');
  const have = installedVersion();
  if (have === RAY_VERSION && fs.existsSync(RAY_BIN)) {
    if (print) console.log(RAY_BIN);
    else process.stderr.write(`ray ${have} is already in ${VENV}\n`);
    return;
  }
  if (!fs.existsSync(python)) {
    try {
      run('python3', ['-m', 'venv', VENV]);
    } catch {
      fs.rmSync(VENV, { recursive: true, force: true });
      process.stderr.write(
        'rayEnv: `python3 -m venv` failed: install Python 3 with its venv module (Debian: apt-get install python3-venv), then run this again\n',
      );
      process.exit(2);
    }
  }
  run(python, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', `ray[default]==${RAY_VERSION}`]);
  const now = installedVersion();
  if (now !== RAY_VERSION) {
    process.stderr.write(`rayEnv: after pip install, ${VENV} has ray ${now ?? 'missing'}, not ${RAY_VERSION}\n`);
    process.exit(2);
  }
  if (print) console.log(RAY_BIN);
  else process.stderr.write(`ray ${now} installed in ${VENV}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
