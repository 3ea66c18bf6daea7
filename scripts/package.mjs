#!/usr/bin/env node
/**
 * `npm run package -- <packaged app>`: the fuse step of packaging. It flips the Electron fuses that main/fuses.ts
 * lists (RunAsNode, NODE_OPTIONS and --inspect off; asar integrity and only-load-from-asar on; …) on an app a packager
 * has produced — Electron's binary with the app in resources/app.asar — and checks each by reading it back. Run it
 * after packaging and before code signing, so the signature covers the flipped bits.
 *
 * Run through tsx (package.json), which lets it import main/fuses.ts. Errors the user can fix are one line, exit 2.
 */
import { applyFuses } from '../main/fuses.ts';
import { UserError } from '../engine/userError.ts';

try {
  const target = process.argv[2];
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
