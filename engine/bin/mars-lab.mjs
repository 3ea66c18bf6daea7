#!/usr/bin/env node
// Entry point of `npx mars-lab` (and of the run worker: `mars-lab run-worker`). It starts the engine as JavaScript,
// the bundle `npm run build` made (out/cli/index.js), while that is fresher than the sources or the sources are not
// there (a packaged app); otherwise, and with MARS_LAB_DEV=1, the TypeScript sources through tsx's loader (Node 20
// cannot strip types). builtEntry.mjs decides; MARS_LAB_DEBUG=1 says which engine started and why.
// Loading the engine from sources opens a few hundred files and starts esbuild; when the open-file limit is too low
// for that, say so in one line instead of a loader's stack trace (engine/commands/cli.ts reports everything after loading).
import { readFileSync, writeSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { chooseEntry } from './builtEntry.mjs';

/** The soft limit on open files (Linux), or null where it cannot be read. Read now: once files run out, it cannot be. */
function openFileLimit() {
  try {
    const m = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}
const limit = openFileLimit();

// Below this limit a failure while loading is put down to it: esbuild then fails to start with a TypeError of its
// own, or the loader's worker thread dies without a word.
const LOW_OPEN_FILE_LIMIT = 256;
let loading = true;
let reported = false;

function isOpenFileFailure(err) {
  const code = err && typeof err === 'object' ? err.code : undefined;
  return code === 'EMFILE' || code === 'ENFILE' || (limit !== null && limit < LOW_OPEN_FILE_LIMIT);
}

function report(err) {
  if (reported) return;
  reported = true;
  const where =
    typeof err?.path === 'string' ? ` ${err.path}` : typeof err?.spawnfile === 'string' ? ` ${err.spawnfile}` : '';
  const now = limit === null ? '' : ` (it is ${limit})`;
  try {
    writeSync(
      2,
      `mars-lab: too many open files while loading${where || ' the engine'}: raise the limit${now}, e.g. ulimit -n 4096, then run the command again\n`,
    );
  } catch {
    // Nowhere to report to.
  }
}

const whileLoading = (err) => {
  if (isOpenFileFailure(err)) {
    report(err);
    process.exit(2);
  }
  process.off('uncaughtException', whileLoading);
  setImmediate(() => {
    throw err; // as if this handler were not there: Node prints it and exits
  });
};
// The loader's worker thread exiting takes the process down with code 1 and no message.
const exitWhileLoading = (code) => {
  if (!loading || code === 0 || code === 2 || !isOpenFileFailure(null)) return;
  report(null);
  process.exitCode = 2;
};
process.on('uncaughtException', whileLoading);
process.on('exit', exitWhileLoading);
const entry = chooseEntry(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..'));
if (process.env.MARS_LAB_DEBUG === '1') {
  writeSync(2, `mars-lab: engine from ${entry.kind === 'built' ? entry.file : `sources (${entry.reason})`}\n`);
}
try {
  // tsx is imported only here, so a built start never loads it.
  if (entry.kind === 'sources') (await import('tsx/esm/api')).register();
  await import(pathToFileURL(entry.file).href);
} catch (err) {
  if (!isOpenFileFailure(err)) throw err;
  report(err);
  process.exit(2);
} finally {
  loading = false;
  process.off('uncaughtException', whileLoading);
  process.off('exit', exitWhileLoading);
}
