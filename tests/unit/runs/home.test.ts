import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { resolveHome, runDir, runsDir } from '../../../engine/runs/folder/home';
import { UserError } from '../../../engine/base/userError';

describe('resolveHome', () => {
  it('prefers the flag, then MARS_LAB_HOME, then ~/mars-lab', () => {
    expect(resolveHome({ home: '/a/b', env: { MARS_LAB_HOME: '/c' } })).toBe('/a/b');
    expect(resolveHome({ env: { MARS_LAB_HOME: '/c' } })).toBe('/c');
    expect(resolveHome({ env: {} })).toBe(path.join(os.homedir(), 'mars-lab'));
    expect(resolveHome({ home: '', env: { MARS_LAB_HOME: '  ' } })).toBe(path.join(os.homedir(), 'mars-lab'));
  });

  it('makes relative paths absolute and expands a quoted ~', () => {
    expect(resolveHome({ home: 'rel', env: {} })).toBe(path.resolve('rel'));
    expect(resolveHome({ env: { MARS_LAB_HOME: '~/lab' } })).toBe(path.join(os.homedir(), 'lab'));
  });
});

describe('runDir', () => {
  it('puts runs under runs/ and refuses ids that would leave it', () => {
    expect(runDir('/h', '20261130-024512-toy-copy-3f9a')).toBe(
      path.join(runsDir('/h'), '20261130-024512-toy-copy-3f9a'),
    );
    for (const bad of ['..', '../x', 'a/b', '', '.hidden', 'a..b']) expect(() => runDir('/h', bad)).toThrow(UserError);
  });
});
