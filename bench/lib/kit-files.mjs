#!/usr/bin/env node
// Which files of node_modules the GPU kit carries (bench/make-gpu-kit.sh; see bench/README.md).
//
//   node bench/lib/kit-files.mjs [--report]     prints the paths (relative to the project root), one a line
//
// The packages are the dependency closure of what bench/gpu.sh runs on the GPU machine: the engine's runtime
// dependencies (package.json `dependencies`), the optional GPU packages that are installed here, and vitest (the
// numerics tests). Every package of that closure goes in whole, less what a run never reads (source maps, type
// declarations, docs), except the large ones, which are cut to what Node loads on linux-x64:
// - @tensorflow/*: package.json files, the Node bundle (`main`) and the .wasm kernels;
// - webgpu (Dawn): its entry and dist/linux-x64 only (the package holds prebuilt binaries for every platform);
// - esbuild: its JavaScript API, not the copy of the binary in esbuild/bin (tsx runs @esbuild/linux-x64's);
// - platform packages (@esbuild/*, @rolldown/binding-*, lightningcss-*, …) only for linux-x64 with glibc.
// Packages the closure names that are not installed (other platforms' optional binaries) are skipped.
import fs from 'node:fs';
import path from 'node:path';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
const report = process.argv.includes('--report');
const pkgJson = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));

/** Packages never needed on the GPU machine even if something in the closure names them. */
const EXCLUDED = new Set([
  'typescript', // a peer that vitest and others only look for; tsx uses esbuild
  'electron',
  '@tensorflow/tfjs-node',
  '@tensorflow/tfjs-node-gpu', // not installable here (its installer downloads libtensorflow): see bench/README.md
]);

const roots = [
  ...Object.keys(pkgJson.dependencies ?? {}),
  ...Object.keys(pkgJson.optionalDependencies ?? {}),
  'vitest',
];

/** Resolve a package by name from a package folder, as Node does: node_modules folders up to the project root. */
function resolvePackage(name, fromDir) {
  let dir = fromDir;
  for (;;) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === root) return null;
    const up = path.dirname(dir);
    if (up === dir || !up.startsWith(root)) return null;
    dir = up;
  }
}

/** A platform-specific package that is not for linux-x64 glibc. */
function otherPlatform(meta) {
  const ok = (list, want) =>
    !list || list.includes(want) || (list.every((x) => x.startsWith('!')) && !list.includes(`!${want}`));
  return !ok(meta.os, 'linux') || !ok(meta.cpu, 'x64') || (meta.libc && !ok(meta.libc, 'glibc'));
}

const packages = new Map(); // folder → package.json
const queue = roots.map((name) => ({ name, from: root, optional: true }));
while (queue.length) {
  const { name, from } = queue.shift();
  if (EXCLUDED.has(name)) continue;
  const dir = resolvePackage(name, from);
  if (!dir || packages.has(dir)) continue;
  const meta = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  if (otherPlatform(meta)) continue;
  packages.set(dir, meta);
  for (const dep of [
    ...Object.keys(meta.dependencies ?? {}),
    ...Object.keys(meta.optionalDependencies ?? {}),
    // Peers are looked for at run time; those installed here go along, absent ones stay absent.
    ...Object.keys(meta.peerDependencies ?? {}),
  ]) {
    queue.push({ name: dep, from: dir });
  }
}

const NEVER =
  /(\.map|\.d\.ts|\.d\.mts|\.d\.cts|\.tsbuildinfo|\.md|\.markdown)$|(^|\/)(CHANGELOG|HISTORY|AUTHORS)(\.|$)/i;

function walk(dir, out) {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    // Nested node_modules are packages of their own, reached through the closure.
    if (e.isDirectory()) {
      if (e.name !== 'node_modules') walk(p, out);
    } else if (e.isFile() || e.isSymbolicLink()) out.push(p);
  }
  return out;
}

function selectFiles(dir, meta) {
  const rel = (p) => path.relative(dir, p);
  const all = walk(dir, []);
  const name = meta.name;
  if (name.startsWith('@tensorflow/')) {
    const main = path.normalize(meta.main ?? 'index.js');
    return all.filter(
      (p) =>
        /(^|\/)package\.json$/.test(rel(p)) || rel(p) === main || p.endsWith('.wasm') || /(^|\/)LICENSE/.test(rel(p)),
    );
  }
  if (name === 'webgpu') {
    return all.filter(
      (p) => /^(index\.js|package\.json|LICENSE.*)$/.test(rel(p)) || rel(p).startsWith('dist/linux-x64/'),
    );
  }
  if (name === 'esbuild') return all.filter((p) => !rel(p).startsWith('bin/') && !NEVER.test(rel(p)));
  return all.filter((p) => !NEVER.test(rel(p)));
}

const files = [];
const sizes = [];
for (const [dir, meta] of packages) {
  const chosen = selectFiles(dir, meta);
  let bytes = 0;
  for (const f of chosen) bytes += fs.lstatSync(f).size;
  sizes.push({ name: path.relative(path.join(root, 'node_modules'), dir), bytes, files: chosen.length });
  files.push(...chosen);
}

// The command shims for what gpu.sh starts (it calls node on them, so only the targets matter; these are convenience).
for (const bin of ['tsx', 'vitest']) {
  const p = path.join(root, 'node_modules', '.bin', bin);
  if (fs.existsSync(p)) files.push(p);
}

if (report) {
  sizes.sort((a, b) => b.bytes - a.bytes);
  const total = sizes.reduce((s, x) => s + x.bytes, 0);
  for (const s of sizes.slice(0, 25)) {
    console.log(`${(s.bytes / 2 ** 20).toFixed(1).padStart(7)} MiB  ${String(s.files).padStart(5)} files  ${s.name}`);
  }
  console.log(
    `${(total / 2 ** 20).toFixed(1).padStart(7)} MiB  ${String(files.length).padStart(5)} files  in ${packages.size} packages (uncompressed)`,
  );
} else {
  for (const f of files) console.log(path.relative(root, f));
}
