/**
 * The core choice at load, end to end (issue 28): `doctor --json` on a copy of the built addon. Without a cache it
 * learns what OpenBLAS detects on this CPU in a child process and keeps it in core-probe.json; when that detection is a
 * generic fallback (made so here by writing the cache as a Sapphire-Rapids Xeon's Debian OpenBLAS detects it,
 * "Prescott") the library loads with the best core for this CPU's flags instead — the core OpenBLAS reports after
 * loading is the one chosen, so the variable reached it before it initialised; a user's OPENBLAS_CORETYPE wins.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bestCoreFor, PROBE_CACHE, probeKey, readCpu } from '../../engine/tensor/native/coreType';
import { cli } from '../helpers/cli';
import { built, nativeMissing } from '../unit/native/nativeHelpers';

let dir: string;
let file: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-core-'));
  if (!built.loaded) return;
  file = path.join(dir, path.basename(built.loaded.file));
  fs.copyFileSync(built.loaded.file, file);
  fs.copyFileSync(path.join(path.dirname(built.loaded.file), 'build.json'), path.join(dir, 'build.json'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

async function doctorNative(env: NodeJS.ProcessEnv): Promise<Record<string, string>> {
  const { code, stdout, stderr } = await cli(['doctor', '--json'], {
    MARS_LAB_NATIVE_PATH: file,
    MARS_LAB_NATIVE: '',
    OPENBLAS_CORETYPE: undefined,
    ...env,
  });
  expect(code, stderr).toBe(0);
  return (JSON.parse(stdout) as { native: Record<string, string> }).native;
}

describe('OpenBLAS core at load', () => {
  it('learns the detected core once, and loads the best core for the flags over a generic fallback', async (ctx) => {
    const missing = nativeMissing();
    if (missing) ctx.skip(missing);
    if (built.loaded!.info.built !== 'openblas') ctx.skip('the addon was built with the own kernel');
    const cpu = readCpu();
    const best = cpu && bestCoreFor(cpu.flags);
    if (!best) ctx.skip('this CPU has neither AVX2+FMA nor AVX-512: there is nothing to choose');

    const first = await doctorNative({});
    const cache = JSON.parse(fs.readFileSync(path.join(dir, PROBE_CACHE), 'utf8')) as { detected: string };
    expect(cache.detected).toBe(first.coreDetected);
    if (first.coreFrom === 'detected') expect(first.core).toBe(cache.detected);
    else expect(first).toMatchObject({ coreFrom: 'chosen', core: best!.core });

    fs.writeFileSync(path.join(dir, PROBE_CACHE), JSON.stringify({ key: probeKey(file, cpu!), detected: 'Prescott' }));
    const chosen = await doctorNative({});
    expect(chosen).toMatchObject({ core: best!.core, coreFrom: 'chosen', coreDetected: 'Prescott' });
    expect(chosen.detail).toMatch(new RegExp(`core ${best!.core}.*chosen by mars-lab: OpenBLAS detected Prescott`));

    const own = await doctorNative({ OPENBLAS_CORETYPE: 'Prescott' });
    expect(own).toMatchObject({ core: 'Prescott', coreFrom: 'environment' });
    expect(own.detail).toMatch(/set by OPENBLAS_CORETYPE=Prescott in the environment/);
  });
});
