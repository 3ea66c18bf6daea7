/**
 * What a packaged app's resources/app.asar holds, read from the archive's header, so the packaging step
 * (scripts/package.mjs) can refuse an app that would not start its engine: the app runs the built engine
 * (out/cli/index.js, made by `npm run build`) through engine/bin/mars-lab.mjs and needs no TypeScript sources.
 *
 * The asar format (@electron/asar): a Chromium pickle holding the header's size (bytes 0–7), then a pickle holding the
 * header, a JSON string: bytes 8–11 the pickle's payload size, 12–15 the string's length, the JSON from byte 16.
 * The JSON is a tree: {"files": {"out": {"files": {"cli": {"files": {"index.js": {"size": …, "offset": "…"}}}}}}};
 * a file kept outside the archive (app.asar.unpacked) is listed the same, with "unpacked": true.
 */
import fs from 'node:fs';

/** The files an app needs to start its window and its runs, relative to the archive's root. */
export const REQUIRED_APP_FILES = [
  'out/main/index.js',
  'out/preload/index.cjs',
  'out/renderer/index.html',
  'out/cli/index.js',
  'engine/bin/mars-lab.mjs',
  'engine/bin/builtEntry.mjs',
];

/** Every file path in the archive ('/'-separated), or null when `file` is not an asar archive. */
export function listAsarFiles(file) {
  const fd = fs.openSync(file, 'r');
  try {
    const head = Buffer.alloc(16);
    if (fs.readSync(fd, head, 0, 16, 0) < 16 || head.readUInt32LE(0) !== 4) return null;
    const length = head.readUInt32LE(12);
    if (length > fs.fstatSync(fd).size - 16) return null;
    const json = Buffer.alloc(length);
    fs.readSync(fd, json, 0, length, 16);
    let header;
    try {
      header = JSON.parse(json.toString('utf8'));
    } catch {
      return null;
    }
    if (typeof header !== 'object' || header === null || typeof header.files !== 'object') return null;
    const out = [];
    const walk = (node, prefix) => {
      for (const [name, entry] of Object.entries(node.files ?? {})) {
        const path = prefix ? `${prefix}/${name}` : name;
        if (entry && typeof entry === 'object' && entry.files) walk(entry, path);
        else out.push(path);
      }
    };
    walk(header, '');
    return out;
  } finally {
    fs.closeSync(fd);
  }
}

/** REQUIRED_APP_FILES the archive lacks ([] when it has them all), or null when it is not an asar archive. */
export function missingAppFiles(asarFile) {
  const files = listAsarFiles(asarFile);
  if (files === null) return null;
  const present = new Set(files);
  return REQUIRED_APP_FILES.filter((f) => !present.has(f));
}
