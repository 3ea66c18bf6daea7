/**
 * The stale-build rule of engine/bin/builtEntry.mjs: `mars-lab` starts out/cli/index.js only while no source it was
 * built from is newer or gone (or the sources are not shipped at all), and the TypeScript sources otherwise.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { chooseEntry as choose } from '../../engine/bin/builtEntry.mjs';

let root: string;
const builtAt = Date.parse('2026-06-01T12:00:00Z');
const before = new Date(builtAt - 60_000);
const after = new Date(builtAt + 60_000);

function write(rel: string, text: string, mtime = before): void {
  const file = path.join(root, rel);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, text);
  fs.utimesSync(file, mtime, mtime);
}

beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-built-entry-'));
  write('engine/commands/cli.ts', '// cli');
  write('engine/model/llama.ts', '// model');
  write('out/cli/index.js', '// built');
  write(
    'out/cli/build.json',
    JSON.stringify({
      version: 1,
      builtAt,
      entry: 'engine/commands/cli.ts',
      sources: ['engine/commands/cli.ts', 'engine/model/llama.ts'],
    }),
  );
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

describe('chooseEntry', () => {
  it('takes the build while every source is older than it', () => {
    expect(choose(root, {})).toEqual({ kind: 'built', file: path.join(root, 'out/cli/index.js') });
  });

  it('takes the sources once one of them changed after the build', () => {
    write('engine/model/llama.ts', '// edited', after);
    expect(choose(root, {})).toMatchObject({
      kind: 'sources',
      file: path.join(root, 'engine/commands/cli.ts'),
      reason: 'engine/model/llama.ts changed after the build',
    });
  });

  it('takes the sources when a source the build was made from is gone (moved or deleted)', () => {
    fs.rmSync(path.join(root, 'engine/model/llama.ts'));
    expect(choose(root, {})).toMatchObject({ kind: 'sources', reason: 'engine/model/llama.ts, built from, is gone' });
  });

  it('takes the sources with MARS_LAB_DEV=1, however fresh the build', () => {
    expect(choose(root, { MARS_LAB_DEV: '1' })).toMatchObject({ kind: 'sources', reason: 'MARS_LAB_DEV=1' });
  });

  it('takes the sources when there is no build', () => {
    fs.rmSync(path.join(root, 'out'), { recursive: true });
    expect(choose(root, {})).toMatchObject({ kind: 'sources', reason: expect.stringMatching(/^no build/) });
  });

  it('takes the sources when the build record is unreadable or of another shape', () => {
    write('out/cli/build.json', '{"version":1,"builtAt":"yesterday","sources":[]}');
    expect(choose(root, {})).toMatchObject({ kind: 'sources', reason: 'out/cli/build.json is missing or unreadable' });
    write('out/cli/build.json', '{not json');
    expect(choose(root, {}).kind).toBe('sources');
  });

  it('takes the build when the sources are not there (a packaged app), even without a record', () => {
    fs.rmSync(path.join(root, 'engine'), { recursive: true });
    fs.rmSync(path.join(root, 'out/cli/build.json'));
    expect(choose(root, {})).toEqual({ kind: 'built', file: path.join(root, 'out/cli/index.js') });
  });

  it('takes the build inside app.asar, where modification times say nothing, even with sources shipped', () => {
    const asar = path.join(root, 'resources', 'app.asar');
    fs.mkdirSync(path.dirname(asar), { recursive: true });
    fs.cpSync(path.join(root, 'engine'), path.join(asar, 'engine'), { recursive: true });
    fs.cpSync(path.join(root, 'out'), path.join(asar, 'out'), { recursive: true });
    fs.utimesSync(path.join(asar, 'engine/commands/cli.ts'), after, after);
    expect(choose(asar, {})).toEqual({ kind: 'built', file: path.join(asar, 'out/cli/index.js') });
  });
});
