/**
 * Against a real single-node Ray head (tests/ray/rayHead.ts): a 1-run study whose --ray-home is a path this machine
 * does not have when the study starts (so it is taken as not shared), run from the CLI; the run's folder comes back
 * into this home through the follow-up fetch job, byte for byte equal to the cluster's copy (run.json,
 * metrics.jsonl), listed by `mars-lab ls`; a failed fetch retried by `study status --follow`; a second fetch never
 * overwrites the folder; an 8 MiB archive comes through Ray's log whole.
 */
import { execFile } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { fetchRun } from '../../engine/cluster/studies/fetchBack';
import { readStudy } from '../../engine/cluster/studies/studyRecord';
import { CLI, expectRay, rayMissing, startRayHead, type RayHead } from './rayHead';

const missing = rayMissing();
if (missing && !expectRay) console.warn(`tests/ray skipped: ${missing}`);

const run = promisify(execFile);

async function cli(args: string[], timeout = 180_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, ...args], { timeout, maxBuffer: 32 << 20 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe.runIf(expectRay || !missing)('fetch-back from a real Ray head', () => {
  let head: RayHead;
  let root: string;

  beforeAll(async () => {
    if (missing) throw new Error(`MARS_LAB_EXPECT_RAY=1 but ${missing}`);
    head = await startRayHead();
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-fetch-'));
  }, 120_000);

  afterAll(async () => {
    await head?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it("brings a finished run's folder back from a ray home only the job sees", async () => {
    const home = path.join(root, 'here');
    const rayHome = path.join(root, 'cluster-home'); // does not exist yet: the study takes it as not shared
    const r = await cli([
      'study',
      '--preset',
      'seqgrpo-copy',
      '--seeds',
      '1',
      '--set',
      'budget.steps=4',
      '--home',
      home,
      '--ray',
      head.url,
      '--ray-home',
      rayHome,
    ]);
    expect(r.stderr).not.toMatch(/mars-lab: /);
    expect(r.code).toBe(0);
    const id = /^study (\S+):/.exec(r.stdout)![1]!;
    const study = readStudy(home, id);
    expect(study.where).toMatchObject({ kind: 'ray', rayHome, fetch: 'last' });
    const runId = study.runs[0]!.runId;
    expect(study.runs[0]).toMatchObject({ state: 'finished', fetch: 'fetched', fetchAttempts: 1 });
    const here = path.join(home, 'runs', runId);
    const there = path.join(rayHome, 'runs', runId);
    for (const f of ['run.json', 'metrics.jsonl']) {
      expect(fs.readFileSync(path.join(here, f)), f).toEqual(fs.readFileSync(path.join(there, f)));
    }
    const client = new RayJobsClient({ url: head.url });
    expect((await client.job(`${runId}-fetch`)).status).toBe('SUCCEEDED');
    const ls = await cli(['ls', '--home', home]);
    expect(ls.stdout).toContain(runId);

    // a failed fetch is retried by `study status --follow`, as a new job (-fetch-2)
    fs.rmSync(here, { recursive: true });
    const rec = JSON.parse(fs.readFileSync(path.join(home, 'studies', `${id}.json`), 'utf8')) as typeof study;
    rec.runs[0]!.fetch = 'fetch failed: the archive was damaged';
    fs.writeFileSync(path.join(home, 'studies', `${id}.json`), JSON.stringify(rec));
    const retry = await cli(['study', 'status', id, '--follow', '--home', home]);
    expect(retry.stderr).not.toMatch(/mars-lab: /);
    expect(retry.code).toBe(0);
    expect(readStudy(home, id).runs[0]).toMatchObject({ state: 'finished', fetch: 'fetched', fetchAttempts: 2 });
    expect((await client.job(`${runId}-fetch-2`)).status).toBe('SUCCEEDED');
    expect(fs.readFileSync(path.join(here, 'metrics.jsonl'))).toEqual(
      fs.readFileSync(path.join(there, 'metrics.jsonl')),
    );

    // fetched again (e.g. a retry): the folder here is kept, and the record says so in one line
    const again = { ...study.runs[0]!, fetch: undefined };
    await fetchRun(home, study, again, client, { pollMs: 200 });
    expect(again.fetch).toMatch(/^kept: .* exists here already, not overwritten/);

    // an archive of some size (8 MiB that gzip cannot shrink) survives Ray's log path whole
    const blob = crypto.randomBytes(8 << 20);
    fs.writeFileSync(path.join(there, 'blob.bin'), blob);
    const home2 = path.join(root, 'here-2');
    const big = { ...study.runs[0]!, fetch: undefined, fetchAttempts: 5 };
    await fetchRun(home2, study, big, client, { pollMs: 200 });
    expect(big.fetch).toBe('fetched');
    expect(fs.readFileSync(path.join(home2, 'runs', runId, 'blob.bin')).equals(blob)).toBe(true);
  }, 240_000);
});
