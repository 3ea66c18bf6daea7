#!/usr/bin/env node
/**
 * Whether out/ (what `npm run build` makes: the app's main, preload and renderer, and the engine's bundle) was built
 * from the sources as they are now. The build's last step (`node scripts/buildStamp.mjs --write`) records one SHA-256
 * over the contents of every input file in out/build-stamp.json; `isBuildFresh()` recomputes it. Contents, not
 * modification times, so a `git checkout` that leaves the files as they were does not cost a rebuild, and an edit is
 * never hidden by an old build. Used by `npm test` (scripts/prepareTests.mjs) and `npm start` (scripts/start.mjs).
 *
 * Plain JavaScript without dependencies; hashing the ~1,000 input files takes well under a second.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const STAMP = 'out/build-stamp.json';
/** What the build reads: the source folders and the files that configure it. */
const INPUT_DIRS = ['engine', 'main', 'preload', 'renderer', 'resources'];
const INPUT_FILES = ['electron.vite.config.ts', 'engine.vite.config.ts', 'package-lock.json', 'tsconfig.json'];
/** The build's outputs that must exist besides the stamp. */
const OUTPUTS = ['out/main/index.js', 'out/preload/index.cjs', 'out/renderer/index.html', 'out/cli/index.js'];

function listFiles(dir, out) {
  let entries;
  try {
    entries = fs.readdirSync(path.join(root, dir), { withFileTypes: true });
  } catch {
    return;
  }
  for (const entry of entries) {
    if (entry.name === 'node_modules' || entry.name.startsWith('.')) continue;
    const rel = `${dir}/${entry.name}`;
    if (entry.isDirectory()) listFiles(rel, out);
    else if (entry.isFile()) out.push(rel);
  }
}

/** The hex SHA-256 over the build's input files (each one's path and contents, in path order). */
export function sourceDigest() {
  const files = [];
  for (const dir of INPUT_DIRS) listFiles(dir, files);
  for (const file of INPUT_FILES) if (fs.existsSync(path.join(root, file))) files.push(file);
  files.sort();
  const hash = crypto.createHash('sha256');
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(fs.readFileSync(path.join(root, file)));
    hash.update('\0');
  }
  return hash.digest('hex');
}

/** `{ fresh: true }`, or `{ fresh: false, reason }` in words. */
export function isBuildFresh() {
  const missing = OUTPUTS.find((f) => !fs.existsSync(path.join(root, f)));
  if (missing) return { fresh: false, reason: `${missing} is missing` };
  let stamp;
  try {
    stamp = JSON.parse(fs.readFileSync(path.join(root, STAMP), 'utf8'));
  } catch {
    return { fresh: false, reason: `${STAMP} is missing (the build was not made by npm run build)` };
  }
  if (stamp?.sources !== sourceDigest()) return { fresh: false, reason: 'the sources changed after the build' };
  return { fresh: true };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (process.argv.includes('--write')) {
    fs.writeFileSync(path.join(root, STAMP), `${JSON.stringify({ version: 1, sources: sourceDigest() }, null, 2)}\n`);
  } else {
    const state = isBuildFresh();
    console.log(state.fresh ? 'the build is fresh' : `the build is stale: ${state.reason}`);
    process.exit(state.fresh ? 0 : 1);
  }
}
