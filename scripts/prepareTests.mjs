#!/usr/bin/env node
/**
 * `npm test`'s first step (npm runs it as `pretest`): makes what the suite needs, so `npm ci && npm test` passes on a
 * fresh machine by itself. Each step says in one line what it is doing, and does nothing when its result is there:
 *
 * 1. the build (`npm run build`) when out/ is missing or older than the sources (scripts/buildStamp.mjs): the browser
 *    tests drive the built windows, and the CLI tests the built engine;
 * 2. the Ray tests' Python venv (scripts/rayEnv.mjs, .venv-ray/). Without Python's venv module or the package index
 *    it says why and the Ray tests skip, unless MARS_LAB_EXPECT_RAY=1 (CI), where it fails here.
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
