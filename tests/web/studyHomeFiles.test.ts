/**
 * A study's files in a home are untrusted like a run's (issue 34, finding 5): a study run's kept log that is a link out
 * of the home (or whose study folder is one) is not read by getClusterLog nor pushed as clusterLog events, a FIFO there
 * does not block the host, the follower never writes through such a link, and a study record that is not JSON is
 * named without quoting its bytes (V8's JSON.parse messages quote the text's start). A run.json that is not JSON gives a
 * watcher warning that quotes nothing of it either.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import type { ApiEvent } from '../../engine/api/contract/contract';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { PROJECT_DIR, planStudy } from '../../engine/cluster/studies/studyPlan';
import {
  openStudyLogForWrite,
  studyLogFile,
  writeStudy,
  type StudyRecord,
} from '../../engine/cluster/studies/studyRecord';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { readCachedPackage, shipCacheDir } from '../../engine/cluster/studies/shipProject';
import { createHash } from 'node:crypto';

const SECRET = 'OUTSIDE-SECRET-9d2c-do-not-send';
const idle: RunLauncher = {
  launch() {
    throw new Error('nothing is launched in these tests');
  },
};

let home: string;
let outside: string;
let host: Host;
const events: ApiEvent[] = [];

/** A study recorded in the home, its one run finished (nothing is followed: only its kept log is read). */
function study(): StudyRecord {
  const record = planStudy({
    preset: 'seqgrpo-copy',
    variants: [null],
    seeds: [0],
    sets: [],
    where: { kind: 'ray', url: 'http://127.0.0.1:9', rayHome: home, project: PROJECT_DIR, node: 'node', cpusPerJob: 1 },
  });
  record.runs[0]!.state = 'finished';
  writeStudy(home, record);
  return record;
}

async function clusterLog(record: StudyRecord): Promise<{ text?: string; error?: string }> {
  try {
    const r = (await callApi(host.handlers, 'getClusterLog', {
      studyId: record.id,
      runId: record.runs[0]!.runId,
      maxBytes: 1 << 20,
    })) as { text: string };
    return { text: r.text };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-study-home-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-study-outside-'));
  fs.writeFileSync(path.join(outside, 'secret.txt'), `${SECRET}\n`);
  host = await createHost({ home, launcher: idle, transport: 'web' });
  host.subscribe((e) => events.push(e));
});

afterAll(async () => {
  await host?.close();
  for (const d of [home, outside]) if (d) fs.rmSync(d, { recursive: true, force: true });
});

describe("a study's kept logs", () => {
  it('a kept log of its own is read (the control)', async () => {
    const record = study();
    const file = studyLogFile(home, record.id, record.runs[0]!.runId);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, 'step 1\nstep 2\n');
    expect(await clusterLog(record)).toEqual({ text: 'step 1\nstep 2\n' });
  });

  it('a log that is a link out of the home is refused, its target never sent', async () => {
    const record = study();
    const file = studyLogFile(home, record.id, record.runs[0]!.runId);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.symlinkSync(path.join(outside, 'secret.txt'), file);
    const r = await clusterLog(record);
    expect(r.text).toBeUndefined();
    expect(r.error).toMatch(/is a symbolic link that leads outside .*; remove the link/);
    expect(r.error).not.toContain(SECRET);
    // nor pushed: attaching reads the record and pushes what the kept logs hold
    await callApi(host.handlers, 'attachStudy', { studyId: record.id }).catch(() => undefined);
    expect(JSON.stringify(events)).not.toContain(SECRET);
  });

  it('a study folder that is a link out of the home is refused, and a FIFO log does not block the host', async () => {
    const linked = study();
    fs.mkdirSync(path.join(home, 'studies'), { recursive: true });
    fs.copyFileSync(path.join(outside, 'secret.txt'), path.join(outside, `${linked.runs[0]!.runId}.log`));
    fs.symlinkSync(outside, path.join(home, 'studies', linked.id));
    const r = await clusterLog(linked);
    expect(r.error).toMatch(/leads outside .*studies: a study's logs must lie in its folder; remove the link/);
    expect(r.error).not.toContain(SECRET);

    const piped = study();
    const file = studyLogFile(home, piped.id, piped.runs[0]!.runId);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    expect(spawnSync('mkfifo', [file]).status).toBe(0);
    expect((await clusterLog(piped)).error).toMatch(/is a FIFO, not a regular file/);
  });

  it('the follower replaces a planted link instead of writing through it', () => {
    const record = study();
    const target = path.join(outside, 'victim.txt');
    fs.writeFileSync(target, 'untouched\n');
    const file = studyLogFile(home, record.id, record.runs[0]!.runId);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.symlinkSync(target, file);
    const fd = openStudyLogForWrite(home, record.id, record.runs[0]!.runId);
    fs.writeSync(fd, 'the job log\n');
    fs.closeSync(fd);
    expect(fs.readFileSync(target, 'utf8')).toBe('untouched\n');
    expect(fs.lstatSync(file).isSymbolicLink()).toBe(false);
    expect(fs.readFileSync(file, 'utf8')).toBe('the job log\n');
  });
});

describe("a home's cache of shipped packages", () => {
  it('uploads only bytes that are the package its name says: a planted link (to a key, say) reads as no package', () => {
    const cache = shipCacheDir(home);
    fs.mkdirSync(cache, { recursive: true });
    const real = Buffer.from('PK a zip, in spirit');
    const realName = `_ray_pkg_${createHash('sha1').update(real).digest('hex')}.zip`;
    fs.writeFileSync(path.join(cache, realName), real);
    expect(readCachedPackage(path.join(cache, realName), `gcs://${realName}`)).toEqual(real);
    // a record crafted to name a package the cache holds as a link to a secret: neither followed out nor hashed right
    const planted = `_ray_pkg_${'0'.repeat(40)}.zip`;
    fs.symlinkSync(path.join(outside, 'secret.txt'), path.join(cache, planted));
    expect(readCachedPackage(path.join(cache, planted), `gcs://${planted}`)).toBeNull();
    // a file of the cache whose bytes do not match its name
    const wrong = `_ray_pkg_${'1'.repeat(40)}.zip`;
    fs.writeFileSync(path.join(cache, wrong), SECRET);
    expect(readCachedPackage(path.join(cache, wrong), `gcs://${wrong}`)).toBeNull();
  });
});

describe('messages about files that are not JSON quote none of their bytes', () => {
  it('a study record that is not JSON', async () => {
    fs.mkdirSync(path.join(home, 'studies'), { recursive: true });
    fs.writeFileSync(path.join(home, 'studies', 'broken.json'), `${SECRET} and more`);
    let message = '';
    try {
      await callApi(host.handlers, 'attachStudy', { studyId: 'broken' });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/broken\.json: cannot read it \(not valid JSON \(.*\)\); it is not a study record/);
    expect(message).not.toContain(SECRET.slice(0, 6));
  });

  it("a run.json that is not JSON: the watcher's warning names the file only", async () => {
    const { dir, id } = createRunFolder(home, {
      algorithm: 'seqgrpo',
      config: {},
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    for (let i = 0; i < 100 && !events.some((e) => e.type === 'runCreated' && e.runId === id); i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    fs.writeFileSync(path.join(dir, 'run.json'), `${SECRET} and more`);
    const warned = (): ApiEvent[] => events.filter((e) => e.type === 'warning' && e.runId === id);
    for (let i = 0; i < 200 && warned().length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    expect(warned().length).toBeGreaterThan(0);
    expect(JSON.stringify(warned())).not.toContain(SECRET.slice(0, 6));
  });
});
