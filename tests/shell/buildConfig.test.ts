/** The build settings other parts depend on: a CommonJS preload (sandbox: true) and an unminified renderer (tfjs wasm). */
import { describe, expect, it } from 'vitest';
import config from '../../electron.vite.config';

describe('electron.vite.config.ts', () => {
  it('builds the preload as CommonJS named index.cjs, the path main loads', () => {
    const output = config.preload?.build?.rolldownOptions?.output;
    expect(output).toMatchObject({ format: 'cjs', entryFileNames: '[name].cjs' });
  });

  it('never minifies the renderer (the tfjs wasm pthread worker breaks under minification)', () => {
    expect(config.renderer?.build?.minify).toBe(false);
  });
});
