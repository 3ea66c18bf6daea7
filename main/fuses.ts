/**
 * The Electron fuses of a packaged mars-lab, and the packaging step that flips them (`npm run package -- <app>`,
 * scripts/package.mjs). Fuses are bits in the Electron binary itself, so a packaged app cannot be talked out of them by
 * an environment variable or a command-line flag; code signing then keeps them from being flipped back.
 *
 * Not part of the Electron main bundle (main/index.ts does not import it): it runs at packaging time under Node, and
 * tests assert every setting without a binary, then flip a fake fuse wire to check the step end to end.
 */
import { flipFuses, FuseV1Options, FuseVersion, getCurrentFuseWire, type FuseV1Config } from '@electron/fuses';
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../engine/base/userError';

/**
 * Every fuse @electron/fuses 1.8 knows, each set on purpose (a fuse left out would keep Electron's default):
 * - RunAsNode off: ELECTRON_RUN_AS_NODE cannot turn the app into a plain Node that runs any script. Runs use
 *   utilityProcess, which does not need it (child_process.fork of the Electron binary would).
 * - EnableCookieEncryption on: the cookie store on disk is encrypted with the OS keychain (the app sets no cookies today).
 * - EnableNodeOptionsEnvironmentVariable off: NODE_OPTIONS cannot preload code (--require, --import) into main.
 * - EnableNodeCliInspectArguments off: --inspect / --inspect-brk cannot attach a debugger to main.
 * - EnableEmbeddedAsarIntegrityValidation on: app.asar's header hash is checked at launch (macOS, Windows); the
 *   packager must embed that hash, or the app refuses to start.
 * - OnlyLoadAppFromAsar on: Electron loads the app from app.asar only, not from a loose app/ folder beside it.
 * - LoadBrowserProcessSpecificV8Snapshot off: no separate V8 snapshot for main (Electron's default; none is shipped).
 * - GrantFileProtocolExtraPrivileges off: file:// pages lose the extra powers Electron grants them (fetch of other
 *   files, …); the app's page comes from app://mars-lab/, so nothing uses file:// any more.
 */
export const FUSES = {
  version: FuseVersion.V1,
  [FuseV1Options.RunAsNode]: false,
  [FuseV1Options.EnableCookieEncryption]: true,
  [FuseV1Options.EnableNodeOptionsEnvironmentVariable]: false,
  [FuseV1Options.EnableNodeCliInspectArguments]: false,
  [FuseV1Options.EnableEmbeddedAsarIntegrityValidation]: true,
  [FuseV1Options.OnlyLoadAppFromAsar]: true,
  [FuseV1Options.LoadBrowserProcessSpecificV8Snapshot]: false,
  [FuseV1Options.GrantFileProtocolExtraPrivileges]: false,
} as const satisfies FuseV1Config;

/** The fuse settings by name, for messages and tests: { RunAsNode: false, … }. */
export function fuseSettingsByName(): Record<string, boolean> {
  const byName: Record<string, boolean> = {};
  for (const [index, value] of Object.entries(FUSES)) {
    if (index === 'version') continue;
    byName[FuseV1Options[Number(index)] as string] = value as boolean;
  }
  return byName;
}

/** A packaged app as the fuse step sees it: the file that holds the fuse wire's binary and the files beside it. */
export interface PackagedApp {
  /** What flipFuses is given: the executable (Linux, Windows) or the .app bundle (macOS). */
  readonly target: string;
  readonly appAsar: string;
  /** macOS: the bundle's Info.plist, which must carry the ElectronAsarIntegrity hash. */
  readonly infoPlist: string | null;
}

const USAGE = 'usage: npm run package -- <packaged app: its executable, or mars-lab.app on macOS>';

/**
 * The packaged app at `target`, or a UserError naming what is missing: the path itself, its app.asar (without it
 * OnlyLoadAppFromAsar leaves nothing to start), or on macOS the asar integrity hash (without it the app is killed at
 * launch once EnableEmbeddedAsarIntegrityValidation is on).
 */
export function locatePackagedApp(target: string | undefined): PackagedApp {
  if (!target) throw new UserError(`no packaged app given; ${USAGE}`);
  const resolved = path.resolve(target);
  let stat: fs.Stats;
  try {
    stat = fs.statSync(resolved);
  } catch {
    throw new UserError(
      `no Electron binary at '${resolved}': package the app first (Electron's binary with the app in resources/app.asar), then ${USAGE.replace('usage: ', '')}`,
    );
  }
  if (resolved.endsWith('.app')) {
    const contents = path.join(resolved, 'Contents');
    const app: PackagedApp = {
      target: resolved,
      appAsar: path.join(contents, 'Resources', 'app.asar'),
      infoPlist: path.join(contents, 'Info.plist'),
    };
    requireAppAsar(app);
    const plist = fs.existsSync(app.infoPlist!) ? fs.readFileSync(app.infoPlist!, 'utf8') : '';
    if (!plist.includes('ElectronAsarIntegrity')) {
      throw new UserError(
        `'${app.infoPlist}' has no ElectronAsarIntegrity hash: with asar integrity validation on, the app would be killed at launch; package with a tool that embeds it (@electron/packager, electron-builder).`,
      );
    }
    return app;
  }
  if (!stat.isFile()) {
    throw new UserError(
      `'${resolved}' is a folder; give the app's executable inside it (${USAGE.replace('usage: ', '')}).`,
    );
  }
  const app: PackagedApp = {
    target: resolved,
    appAsar: path.join(path.dirname(resolved), 'resources', 'app.asar'),
    infoPlist: null,
  };
  requireAppAsar(app);
  return app;
}

function requireAppAsar(app: PackagedApp): void {
  if (!fs.existsSync(app.appAsar)) {
    throw new UserError(
      `no '${app.appAsar}': with OnlyLoadAppFromAsar on, Electron would find no app to start; package the app into app.asar first.`,
    );
  }
}

/**
 * Flips FUSES on the packaged app at `target`, then reads the wire back and checks each fuse holds its setting.
 * `platform`/`arch` decide whether macOS arm64's ad-hoc signature must be renewed (a flipped, unsigned arm64 binary
 * does not start). Returns the settings by name.
 */
export async function applyFuses(
  target: string | undefined,
  platform: NodeJS.Platform = process.platform,
  arch: string = process.arch,
): Promise<Record<string, boolean>> {
  const app = locatePackagedApp(target);
  const config: FuseV1Config = { ...FUSES, resetAdHocDarwinSignature: platform === 'darwin' && arch === 'arm64' };
  try {
    await flipFuses(app.target, config);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    if (/sentinel/i.test(reason)) {
      throw new UserError(
        `'${app.target}' is not an Electron binary (no fuse wire in it); give the packaged app's executable.`,
      );
    }
    throw new UserError(`flipping the fuses of '${app.target}' failed: ${reason.split('\n')[0]}`);
  }
  const wire = await getCurrentFuseWire(app.target);
  const expected = fuseSettingsByName();
  for (const [index, value] of Object.entries(FUSES)) {
    if (index === 'version') continue;
    // The wire stores '1' (0x31) for on and '0' (0x30) for off.
    const state = (wire as unknown as Record<string, number | undefined>)[index];
    if (state !== (value ? 0x31 : 0x30)) {
      throw new Error(
        `fuse ${FuseV1Options[Number(index)]} reads ${String(state)} after flipping, not ${value ? 'on' : 'off'}`,
      );
    }
  }
  return expected;
}
