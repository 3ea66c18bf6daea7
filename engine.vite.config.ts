/**
 * The engine's own build: engine/commands/cli.ts (the CLI, which is also the run worker: `mars-lab run-worker`) bundled into
 * one JavaScript file, out/cli/index.js, so `mars-lab` starts without a TypeScript loader and a packaged app needs no
 * TypeScript sources. `npm run build` runs it after electron-vite's build of the Electron parts.
 *
 * - One file at out/cli/, two folders below the root like engine/<folder>/: the engine finds resources/, out/renderer
 *   and native/ from `import.meta.url` ('../../…'), which resolves the same from both places.
 * - Packages stay external (loaded from node_modules at run time): tfjs-backend-wasm finds its .wasm files next to its
 *   own code, the native addon its .node file, and optional backends stay optional.
 * - Not minified, with a source map beside it: a stack trace names the engine's functions
 *   (NODE_OPTIONS=--enable-source-maps maps it back to engine/…).
 * - out/cli/build.json lists the sources the bundle was made from and when the build started; engine/bin/mars-lab.mjs
 *   runs the bundle only while none of them is newer (engine/bin/freshBuild.mjs).
 */
import path from 'node:path';
import { defineConfig, type Plugin } from 'vite';

const root = import.meta.dirname;
const outDir = path.resolve(root, 'out/cli');
const startedAt = Date.now();

/** A bare import (a package or a node: builtin) stays an import; only the engine's own files are bundled. */
function isExternal(id: string): boolean {
  return !id.startsWith('.') && !path.isAbsolute(id) && !id.startsWith('\0');
}

/** Writes out/cli/build.json: the bundled sources (relative to the root) and the build's start time. */
function buildRecord(): Plugin {
  return {
    name: 'mars-lab-build-record',
    generateBundle(_options, bundle) {
      const sources = new Set<string>();
      for (const chunk of Object.values(bundle)) {
        if (chunk.type !== 'chunk') continue;
        for (const id of chunk.moduleIds) {
          if (id.startsWith('\0') || id.includes('/node_modules/')) continue;
          sources.add(path.relative(root, id).split(path.sep).join('/'));
        }
      }
      this.emitFile({
        type: 'asset',
        fileName: 'build.json',
        source: `${JSON.stringify({ version: 1, builtAt: startedAt, entry: 'engine/commands/cli.ts', sources: [...sources].sort() }, null, 2)}\n`,
      });
    },
  };
}

export default defineConfig({
  root,
  publicDir: false,
  logLevel: 'warn',
  plugins: [buildRecord()],
  build: {
    ssr: path.resolve(root, 'engine/commands/cli.ts'),
    outDir,
    emptyOutDir: true,
    target: 'node20',
    minify: false,
    sourcemap: true,
    copyPublicDir: false,
    rolldownOptions: {
      external: isExternal,
      output: { format: 'esm', entryFileNames: 'index.js', codeSplitting: false },
    },
  },
});
