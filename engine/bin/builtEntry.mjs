/**
 * Which engine `mars-lab` starts: the bundle `npm run build` made (out/cli/index.js, engine.vite.config.ts) or the
 * TypeScript sources through tsx's loader. The bundle is taken when it is there and
 * - the sources are not (a packaged app need not ship them), or the project is inside an .asar archive (a packaged
 *   app: an archive keeps no modification times to compare), or
 * - none of the sources it was built from (out/cli/build.json) is missing or newer than the build,
 * and MARS_LAB_DEV=1 is not set. Otherwise the sources run, so an edit is never hidden by an old build.
 *
 * Plain JavaScript without dependencies: it runs before anything is loaded, at every start (a few hundred stat calls).
 */
import fs from 'node:fs';
import path from 'node:path';

export const BUILT_ENTRY = 'out/cli/index.js';
export const BUILD_RECORD = 'out/cli/build.json';
export const SOURCE_ENTRY = 'engine/commands/cli.ts';

/** out/cli/build.json as the build writes it, or null when it is missing or not that shape. */
export function readBuildRecord(root) {
  let record;
  try {
    record = JSON.parse(fs.readFileSync(path.join(root, BUILD_RECORD), 'utf8'));
  } catch {
    return null;
  }
  const ok =
    record !== null &&
    typeof record === 'object' &&
    record.version === 1 &&
    Number.isFinite(record.builtAt) &&
    Array.isArray(record.sources) &&
    record.sources.every((s) => typeof s === 'string' && s !== '' && !path.isAbsolute(s));
  return ok ? record : null;
}

/**
 * The engine to start under `root` (the project folder): `{ kind: 'built', file }` or `{ kind: 'sources', file,
 * reason }`, the reason in words for MARS_LAB_DEBUG and the tests.
 */
export function chooseEntry(root, env = process.env) {
  const sources = { kind: 'sources', file: path.join(root, SOURCE_ENTRY) };
  if (env.MARS_LAB_DEV === '1') return { ...sources, reason: 'MARS_LAB_DEV=1' };
  const built = path.join(root, BUILT_ENTRY);
  if (!fs.existsSync(built)) return { ...sources, reason: `no build (${BUILT_ENTRY}; npm run build makes it)` };
  if (!fs.existsSync(sources.file) || /\.asar$/i.test(root)) return { kind: 'built', file: built };
  const record = readBuildRecord(root);
  if (!record) return { ...sources, reason: `${BUILD_RECORD} is missing or unreadable` };
  for (const source of record.sources) {
    let mtime;
    try {
      mtime = fs.statSync(path.join(root, source)).mtimeMs;
    } catch {
      return { ...sources, reason: `${source}, built from, is gone` };
    }
    if (mtime > record.builtAt) return { ...sources, reason: `${source} changed after the build` };
  }
  return { kind: 'built', file: built };
}
