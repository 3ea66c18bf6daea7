/**
 * electron-vite 6 build of the three Electron parts into out/ (BUILD-NOTES.md §4).
 * Entries live at the repository root (main/, preload/, renderer/), not electron-vite's default src/.
 */
import { resolve } from 'node:path';
import { svelte } from '@sveltejs/vite-plugin-svelte';
import { defineConfig } from 'electron-vite';

const root = import.meta.dirname;

export default defineConfig({
  // Packages in `dependencies` (tfjs, …) stay external: main loads them from node_modules at run time, so the wasm
  // backend finds its .wasm files next to its own code (electron-vite's default externalizeDeps).
  main: {
    build: {
      outDir: resolve(root, 'out/main'),
      rolldownOptions: { input: { index: resolve(root, 'main/index.ts') } },
    },
  },
  preload: {
    build: {
      outDir: resolve(root, 'out/preload'),
      rolldownOptions: {
        input: { index: resolve(root, 'preload/index.ts') },
        // CommonJS, because the window runs with sandbox: true and a sandboxed preload cannot be an ES module
        // (with "type": "module" electron-vite would emit index.mjs). The .cjs name keeps Node from reading it as ESM.
        output: { format: 'cjs', entryFileNames: '[name].cjs' },
      },
    },
  },
  renderer: {
    root: resolve(root, 'renderer'),
    plugins: [svelte()],
    build: {
      outDir: resolve(root, 'out/renderer'),
      rolldownOptions: { input: { index: resolve(root, 'renderer/index.html') } },
      // Never minify the renderer: tfjs-backend-wasm's threaded build stringifies its pthread worker factory and runs
      // it in a Worker, and minification renames the variables that source refers to (`ReferenceError: e is not
      // defined`, BUILD-NOTES.md §1). electron-vite's default is already false; this states it on purpose.
      minify: false,
    },
  },
});
