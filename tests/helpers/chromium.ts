/** Debian's Chromium through playwright-core (never a downloaded browser), as every browser test launches it. */
import fs from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

export const CHROMIUM = process.env['CHROMIUM_PATH'] ?? '/usr/bin/chromium';
export const haveChromium = fs.existsSync(CHROMIUM);

/** Headless, quiet (no background networking, updates or sync), no sandbox (tests run as root). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
    ],
  });
}
