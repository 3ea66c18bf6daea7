/**
 * The packaging step's fuses (main/fuses.ts, scripts/package.mjs), checked without Electron's binary: every fuse's
 * setting is asserted by name, then the step runs on a fake binary that holds only a fuse wire (the sentinel
 * @electron/fuses looks for, a version byte, a length byte and one state byte per fuse) and the bytes are read back.
 */
import { FuseV1Options } from '@electron/fuses';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { UserError } from '../../engine/base/userError';
import { applyFuses, FUSES, fuseSettingsByName, locatePackagedApp } from '../../main/fuses';
import { REQUIRED_APP_FILES } from '../../scripts/appArchive.mjs';
import { writeAsar } from '../helpers/asarArchive';

/** The marker @electron/fuses (1.8.0, src/constants.ts) finds the fuse wire by. */
const SENTINEL = 'dL7pKGdnNz796PbbjQWNKmHXBZaB9tsX';
/** Electron's defaults, in wire order, plus a ninth fuse newer than @electron/fuses 1.8 that must stay as it is. */
const DEFAULT_WIRE = '100100011';

function fakeElectronBinary(file: string, wire = DEFAULT_WIRE): void {
  mkdirSync(dirname(file), { recursive: true });
  const header = Buffer.from([1, wire.length]); // fuse wire version 1, then its length
  writeFileSync(
    file,
    Buffer.concat([
      Buffer.from('ELF…padding…'),
      Buffer.from(SENTINEL),
      header,
      Buffer.from(wire),
      Buffer.from('…rest'),
    ]),
  );
}

function readWire(file: string): string {
  const bytes = readFileSync(file);
  const start = bytes.indexOf(SENTINEL) + SENTINEL.length;
  return bytes.subarray(start + 2, start + 2 + bytes[start + 1]!).toString('latin1');
}

/** A Linux-style packaged app: <dir>/mars-lab and <dir>/resources/app.asar. */
function packagedLinuxApp(withAsar = true): string {
  const dir = mkdtempSync(join(tmpdir(), 'mars-lab-fuses-'));
  const executable = join(dir, 'mars-lab');
  fakeElectronBinary(executable);
  if (withAsar) {
    mkdirSync(join(dir, 'resources'));
    // What the app starts from (scripts/package.mjs checks for it before flipping).
    writeAsar(join(dir, 'resources', 'app.asar'), Object.fromEntries(REQUIRED_APP_FILES.map((f) => [f, `// ${f}`])));
  }
  return executable;
}

async function userErrorOf(promise: Promise<unknown>): Promise<Error> {
  const error = await promise.then(
    () => null,
    (caught: unknown) => caught,
  );
  expect(error).toBeInstanceOf(UserError);
  expect((error as Error).message.includes('\n')).toBe(false);
  return error as Error;
}

describe('fuse settings', () => {
  it('turns off running as Node, NODE_OPTIONS, --inspect and file:// extra privileges', () => {
    expect(FUSES[FuseV1Options.RunAsNode]).toBe(false);
    expect(FUSES[FuseV1Options.EnableNodeOptionsEnvironmentVariable]).toBe(false);
    expect(FUSES[FuseV1Options.EnableNodeCliInspectArguments]).toBe(false);
    expect(FUSES[FuseV1Options.GrantFileProtocolExtraPrivileges]).toBe(false);
    expect(FUSES[FuseV1Options.LoadBrowserProcessSpecificV8Snapshot]).toBe(false);
  });

  it('turns on asar integrity, loading only from app.asar, and cookie encryption', () => {
    expect(FUSES[FuseV1Options.EnableEmbeddedAsarIntegrityValidation]).toBe(true);
    expect(FUSES[FuseV1Options.OnlyLoadAppFromAsar]).toBe(true);
    expect(FUSES[FuseV1Options.EnableCookieEncryption]).toBe(true);
  });

  it("decides every fuse the library knows, none left to Electron's default", () => {
    const known = Object.values(FuseV1Options).filter((value): value is number => typeof value === 'number');
    expect(known.length).toBeGreaterThanOrEqual(8);
    for (const index of known) {
      expect(typeof (FUSES as Record<number, unknown>)[index], FuseV1Options[index]).toBe('boolean');
    }
    expect(fuseSettingsByName()).toEqual({
      RunAsNode: false,
      EnableCookieEncryption: true,
      EnableNodeOptionsEnvironmentVariable: false,
      EnableNodeCliInspectArguments: false,
      EnableEmbeddedAsarIntegrityValidation: true,
      OnlyLoadAppFromAsar: true,
      LoadBrowserProcessSpecificV8Snapshot: false,
      GrantFileProtocolExtraPrivileges: false,
    });
  });
});

describe('packaging step: flipping the fuses', () => {
  it('flips each fuse on the binary, leaves a fuse it does not know alone, and reads them back', async () => {
    const executable = packagedLinuxApp();
    const before = readFileSync(executable);
    await expect(applyFuses(executable, 'linux', 'x64')).resolves.toEqual(fuseSettingsByName());
    // RunAsNode 0, CookieEncryption 1, NodeOptions 0, Inspect 0, AsarIntegrity 1, OnlyAsar 1, V8Snapshot 0, FileExtra 0.
    // The ninth fuse, unknown to the library, keeps its '1'.
    expect(readWire(executable)).toBe('010011001');
    const after = readFileSync(executable);
    expect(after.length).toBe(before.length); // only state bytes change
  });

  it('refuses a missing binary in one line, naming the path and what to do', async () => {
    const missing = join(tmpdir(), 'mars-lab-no-such-app', 'mars-lab');
    const error = await userErrorOf(applyFuses(missing, 'linux', 'x64'));
    expect(error.message).toContain(missing);
    expect(error.message).toMatch(/no Electron binary/);
    await userErrorOf(applyFuses(undefined, 'linux', 'x64'));
  });

  it('refuses an app without resources/app.asar (OnlyLoadAppFromAsar would leave nothing to start), untouched', async () => {
    const executable = packagedLinuxApp(false);
    const error = await userErrorOf(applyFuses(executable, 'linux', 'x64'));
    expect(error.message).toMatch(/app\.asar/);
    expect(readWire(executable)).toBe(DEFAULT_WIRE);
  });

  it('refuses a file that is not an Electron binary', async () => {
    const executable = packagedLinuxApp();
    writeFileSync(executable, 'not electron');
    const error = await userErrorOf(applyFuses(executable, 'linux', 'x64'));
    expect(error.message).toMatch(/not an Electron binary/);
  });

  it('on macOS, flips the framework inside the bundle only when Info.plist carries the asar integrity hash', async () => {
    const bundle = join(mkdtempSync(join(tmpdir(), 'mars-lab-fuses-mac-')), 'mars-lab.app');
    const framework = join(bundle, 'Contents', 'Frameworks', 'Electron Framework.framework', 'Electron Framework');
    fakeElectronBinary(framework);
    mkdirSync(join(bundle, 'Contents', 'Resources'), { recursive: true });
    writeFileSync(join(bundle, 'Contents', 'Resources', 'app.asar'), 'asar');
    writeFileSync(join(bundle, 'Contents', 'Info.plist'), '<plist><dict></dict></plist>');
    const error = await userErrorOf(applyFuses(bundle, 'darwin', 'x64'));
    expect(error.message).toMatch(/ElectronAsarIntegrity/);
    expect(readWire(framework)).toBe(DEFAULT_WIRE);
    writeFileSync(
      join(bundle, 'Contents', 'Info.plist'),
      '<plist><dict><key>ElectronAsarIntegrity</key><dict/></dict></plist>',
    );
    expect(locatePackagedApp(bundle).appAsar).toBe(join(bundle, 'Contents', 'Resources', 'app.asar'));
    await applyFuses(bundle, 'darwin', 'x64');
    expect(readWire(framework)).toBe('010011001');
  });
});

describe('npm run package (scripts/package.mjs)', () => {
  const tsxCli = resolve('node_modules/tsx/dist/cli.mjs');
  const runPackage = (...args: string[]) =>
    spawnSync(process.execPath, [tsxCli, 'scripts/package.mjs', ...args], { encoding: 'utf8', timeout: 60_000 });

  it('says in one line, exit code 2, that the binary is missing', () => {
    const result = runPackage(join(tmpdir(), 'mars-lab-no-such-app', 'mars-lab'));
    expect(result.status).toBe(2);
    expect(result.stderr.trim().split('\n')).toHaveLength(1);
    expect(result.stderr).toMatch(/^mars-lab package: no Electron binary at /);
    expect(result.stderr).not.toMatch(/\bat .*\.ts:\d+/); // no stack trace
  });

  it('flips the fuses of a packaged app and says which', () => {
    const executable = packagedLinuxApp();
    const result = runPackage(executable);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('RunAsNode=off');
    expect(result.stdout).toContain('OnlyLoadAppFromAsar=on');
    expect(readWire(executable)).toBe('010011001');
  });
});
