/**
 * Against a real single-node Ray head (tests/ray/rayHead.ts): `study --ray URL --ship` packs the built engine, the
 * packages it loads and resources/ into a zip, uploads it through the dashboard's package API and runs each job with
 * that zip as its runtime_env working_dir, with an entrypoint relative to it. The job runs the engine from Ray's
 * unpacked copy (MARS_LAB_DEBUG=1 makes it print which file it started: under the head's temp folder, not this
 * checkout), a 2-step seqgrpo-copy run finishes, and its folder comes back through the fetch-back. A second study
 * takes the packed zip from the cache and uploads nothing (the cluster has it). A job that finds no project at its
 * path, or no node, fails with a line naming --ship / --ray-node. A package the cluster lost is uploaded again from the
 * cache before a re-attach submits runs (ensurePackage). Needs `npm run build` first (npm test runs it).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { strToU8, zipSync } from 'fflate';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { ensurePackage } from '../../engine/cluster/studies/shipProject';
import { readStudy } from '../../engine/cluster/studies/studyRecord';
import { CLI, expectRay, PROJECT, rayMissing, startRayHead, type RayHead } from './rayHead';

const missing = rayMissing();
if (missing && !expectRay) console.warn(`tests/ray skipped: ${missing}`);

const run = promisify(execFile);

async function cli(args: string[], timeout = 240_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, ...args], { timeout, maxBuffer: 32 << 20 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** The JSON lines of `study --json`: the ship line, run changes, then the study. */
function jsonLines(stdout: string): { type: string; [k: string]: unknown }[] {
  return stdout
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as { type: string });
}

describe.runIf(expectRay || !missing)('a study shipped to a real Ray head (runtime_env working_dir)', () => {
  let head: RayHead;
  let root: string;

  beforeAll(async () => {
    if (missing) throw new Error(`MARS_LAB_EXPECT_RAY=1 but ${missing}`);
    head = await startRayHead();
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-ship-'));
  }, 120_000);

  afterAll(async () => {
    await head?.stop();
    if (root) fs.rmSync(root, { recursive: true, force: true });
  }, 60_000);

  it('runs train from the shipped zip, fetches the run back, and ships nothing twice', async () => {
    const home = path.join(root, 'here');
    const rayHome = path.join(root, 'cluster-home'); // not here when the study starts: fetched back
    const common = ['--preset', 'seqgrpo-copy', '--seeds', '1', '--set', 'budget.steps=2', '--home', home];
    const r = await cli([
      'study',
      ...common,
      '--ray',
      head.url,
      '--ship',
      '--ray-home',
      rayHome,
      '--ray-runtime-env',
      '{"env_vars":{"MARS_LAB_DEBUG":"1"}}',
      '--json',
    ]);
    expect(r.stderr).not.toMatch(/mars-lab: /);
    expect(r.code).toBe(0);
    const lines = jsonLines(r.stdout);
    const ship = lines.find((l) => l.type === 'ship')!;
    expect(ship).toMatchObject({ cached: false, uploaded: true });
    expect(ship.uri).toMatch(/^gcs:\/\/_ray_pkg_[0-9a-f]{40}\.zip$/);
    expect(ship.bytes).toBeGreaterThan(1 << 20);
    expect(ship.bytes).toBeLessThan(100 << 20);
    const id = String(lines.at(-1)!.id);
    const study = readStudy(home, id);
    expect(study.where).toMatchObject({
      kind: 'ray',
      project: '.',
      fetch: 'last',
      runtimeEnv: { working_dir: ship.uri, env_vars: { MARS_LAB_DEBUG: '1' } },
    });
    const runId = study.runs[0]!.runId;
    expect(study.runs[0]).toMatchObject({ state: 'finished', step: 2, totalSteps: 2, fetch: 'fetched' });

    // the job: an entrypoint relative to the working_dir, no path of this checkout
    const client = new RayJobsClient({ url: head.url });
    const job = await client.job(runId);
    expect(job.entrypoint).toMatch(/^node engine\/bin\/mars-lab\.mjs train --preset seqgrpo-copy /);
    expect(job.entrypoint).not.toContain(PROJECT);
    expect(job.runtime_env).toMatchObject({ working_dir: ship.uri });
    // the engine it ran: the build inside Ray's unpacked copy, under the head's temp folder
    const log = fs.readFileSync(path.join(home, 'studies', id, `${runId}.log`), 'utf8');
    const engine = /mars-lab: engine from (\S+)/.exec(log)?.[1];
    expect(engine, log.slice(0, 2000)).toBeDefined();
    expect(engine!.startsWith(fs.realpathSync(head.tempDir)) || engine!.startsWith(head.tempDir)).toBe(true);
    expect(engine).toMatch(/_ray_pkg_[0-9a-f]{40}\/out\/cli\/index\.js$/);
    expect(engine).not.toContain(PROJECT);

    // the run folder came back, two steps of metrics in it
    const here = path.join(home, 'runs', runId);
    const metrics = fs.readFileSync(path.join(here, 'metrics.jsonl'), 'utf8').trim().split('\n');
    expect(metrics).toHaveLength(2);
    expect(fs.readFileSync(path.join(here, 'metrics.jsonl'))).toEqual(
      fs.readFileSync(path.join(rayHome, 'runs', runId, 'metrics.jsonl')),
    );

    // a second study: the zip from the cache, nothing uploaded, the run written straight into the (shared) home
    const again = await cli(['study', ...common, '--ray', head.url, '--ship', '--json']);
    expect(again.stderr).not.toMatch(/mars-lab: /);
    expect(again.code).toBe(0);
    const lines2 = jsonLines(again.stdout);
    expect(lines2.find((l) => l.type === 'ship')).toMatchObject({ uri: ship.uri, cached: true, uploaded: false });
    const study2 = readStudy(home, String(lines2.at(-1)!.id));
    expect(study2.runs[0]).toMatchObject({ state: 'finished', step: 2 });
    expect(fs.existsSync(path.join(home, 'runs', study2.runs[0]!.runId, 'run.json'))).toBe(true);
  }, 600_000);

  it('names --ship when a job finds no project at the path, and --ray-node when it finds no node', async () => {
    const home = path.join(root, 'hints');
    const base = ['study', '--preset', 'seqgrpo-copy', '--seeds', '1', '--home', home, '--ray', head.url];
    const noProject = await cli([...base, '--ray-project', path.join(root, 'no-such-project')]);
    expect(noProject.code).toBe(2);
    expect(noProject.stdout).toContain(
      `: the cluster has no ${path.join(root, 'no-such-project')}/engine/bin/mars-lab.mjs: add --ship to send the project with the jobs, or give its folder there with --ray-project PATH`,
    );
    const noNode = await cli([...base, '--ray-node', 'mars-lab-no-such-node']);
    expect(noNode.code).toBe(2);
    expect(noNode.stdout).toContain(
      ": mars-lab-no-such-node not found on the cluster: install Node.js 20 on its nodes' PATH, or give its path there with --ray-node PATH",
    );
  }, 240_000);

  it('uploads a package again from the cache when the cluster has lost it, and says when neither has it', async () => {
    const client = new RayJobsClient({ url: head.url });
    const cacheDir = path.join(root, 'cache-ensure');
    fs.mkdirSync(cacheDir, { recursive: true });
    const zip = Buffer.from(zipSync({ 'hello.txt': strToU8(`hello ${Date.now()}`) }));
    const uri = `gcs://_ray_pkg_${createHash('sha1').update(zip).digest('hex')}.zip`;
    fs.writeFileSync(path.join(cacheDir, uri.slice('gcs://'.length)), zip);
    expect(await client.packageExists(uri)).toBe(false);
    expect(await ensurePackage(client, uri, cacheDir)).toBe('uploaded');
    expect(await client.packageExists(uri)).toBe(true);
    expect(await ensurePackage(client, uri, cacheDir)).toBe('there');
    const gone = `gcs://_ray_pkg_${'0'.repeat(40)}.zip`;
    await expect(ensurePackage(client, gone, cacheDir)).rejects.toThrow(
      `the shipped package ${gone} is gone from the cluster and from ${cacheDir}: start the runs left in a new study with --ship`,
    );
  }, 60_000);

  it('refuses --ship without --ray, and with --ray-project, in one line', async () => {
    const home = path.join(root, 'lines');
    const a = await cli(['study', '--preset', 'seqgrpo-copy', '--seeds', '1', '--home', home, '--ship']);
    expect(a.code).toBe(2);
    expect(a.stderr.trim()).toBe('mars-lab: --ship sends the project to a Ray cluster: it needs --ray URL');
    const b = await cli([
      'study',
      '--preset',
      'seqgrpo-copy',
      '--seeds',
      '1',
      '--home',
      home,
      '--ray',
      head.url,
      '--ship',
      '--ray-project',
      '/opt/mars-lab',
    ]);
    expect(b.code).toBe(2);
    expect(b.stderr.trim()).toMatch(/^mars-lab: --ship and --ray-project: choose one \(/);
    expect(b.stderr.trim().split('\n')).toHaveLength(1);
  }, 120_000);
});
