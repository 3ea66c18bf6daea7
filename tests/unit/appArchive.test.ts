/**
 * The packaging step refuses an app whose app.asar lacks what it starts from (scripts/appArchive.mjs,
 * scripts/package.mjs): above all the built engine, out/cli/index.js, which a packaged app runs instead of the
 * TypeScript sources.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { listAsarFiles, missingAppFiles, REQUIRED_APP_FILES } from '../../scripts/appArchive.mjs';
import { writeAsar } from '../helpers/asarArchive';

const dirs: string[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'mars-lab-app-archive-'));
  dirs.push(dir);
  return dir;
}
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

const allFiles = () => Object.fromEntries(REQUIRED_APP_FILES.map((f) => [f, `// ${f}`]));

describe('app.asar listing', () => {
  it('lists every file of the archive, nested folders included', () => {
    const file = join(tempDir(), 'app.asar');
    writeAsar(file, {
      'package.json': '{}',
      'out/cli/index.js': '1',
      'out/main/index.js': '2',
      'engine/bin/mars-lab.mjs': '3',
    });
    expect(listAsarFiles(file)?.sort()).toEqual([
      'engine/bin/mars-lab.mjs',
      'out/cli/index.js',
      'out/main/index.js',
      'package.json',
    ]);
  });

  it('names what an app without the built engine lacks', () => {
    const file = join(tempDir(), 'app.asar');
    const files = allFiles();
    delete files['out/cli/index.js'];
    writeAsar(file, { ...files, 'engine/commands/cli.ts': '// sources do not stand in for the build' });
    expect(missingAppFiles(file)).toEqual(['out/cli/index.js']);
    writeAsar(file, allFiles());
    expect(missingAppFiles(file)).toEqual([]);
  });

  it('says null for a file that is not an asar archive', () => {
    const file = join(tempDir(), 'app.asar');
    writeFileSync(file, 'asar');
    expect(listAsarFiles(file)).toBeNull();
    writeFileSync(file, Buffer.alloc(64));
    expect(listAsarFiles(file)).toBeNull();
  });
});

describe('npm run package on an app without the built engine', () => {
  it('refuses in one line, exit code 2, naming out/cli/index.js and npm run build, and flips nothing', () => {
    const dir = tempDir();
    const executable = join(dir, 'mars-lab');
    writeFileSync(executable, 'a stand-in for the Electron binary: never touched');
    mkdirSync(join(dir, 'resources'));
    const files = allFiles();
    delete files['out/cli/index.js'];
    writeAsar(join(dir, 'resources', 'app.asar'), files);
    const result = spawnSync(
      process.execPath,
      [resolve('node_modules/tsx/dist/cli.mjs'), 'scripts/package.mjs', executable],
      { encoding: 'utf8', timeout: 60_000 },
    );
    expect(result.status).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(
      /^mars-lab package: '.*app\.asar' lacks out\/cli\/index\.js: run `npm run build` before packaging/,
    );
    expect(readFileSync(executable, 'utf8')).toBe('a stand-in for the Electron binary: never touched');
  });
});
