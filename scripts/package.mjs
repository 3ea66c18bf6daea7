#!/usr/bin/env node
/**
 * `npm run package -- <packaged app>`: the fuse step of packaging. It flips the Electron fuses that main/fuses.ts
 * lists (RunAsNode, NODE_OPTIONS and --inspect off; asar integrity and only-load-from-asar on; …) on an app a packager
 * has produced — Electron's binary with the app in resources/app.asar — and checks each by reading it back. Run it
 * after packaging and before code signing, so the signature covers the flipped bits.
 *
 * Before flipping, it checks that app.asar holds what the app starts from (appArchive.mjs): the built Electron parts
 * and the built engine (out/cli/index.js), which the packaged app runs instead of the TypeScript sources (they need not
 * be packaged: engine/bin/builtEntry.mjs takes the build inside an archive).
 *
 * Run through tsx (package.json), which lets it import main/fuses.ts. Errors the user can fix are one line, exit 2.
 */
import { applyFuses, locatePackagedApp } from '../main/fuses.ts';
import { UserError } from '../engine/base/userError.ts';
import { missingAppFiles } from './appArchive.mjs';

try {
  const target = process.argv[2];
  const { appAsar } = locatePackagedApp(target);
  const missing = missingAppFiles(appAsar);
  if (missing === null) {
    throw new UserError(`'${appAsar}' is not an asar archive; package the app into app.asar first.`);
  }
  if (missing.length > 0) {
    throw new UserError(
      `'${appAsar}' lacks ${missing.join(', ')}: run \`npm run build\` before packaging and include out/ and engine/bin/ in the app.`,
    );
  }
  const settings = await applyFuses(target);
  const summary = Object.entries(settings)
    .map(([name, on]) => `${name}=${on ? 'on' : 'off'}`)
    .join(', ');
  console.log(`mars-lab: fuses flipped on ${target}: ${summary}`);
} catch (error) {
  if (error instanceof UserError) {
    console.error(`mars-lab package: ${error.message}`);
    process.exit(2);
  }
  throw error;
}
