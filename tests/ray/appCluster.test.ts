/**
 * The app's side of studies on a Ray cluster (engine/api/cluster/clusterMethods.ts), through the API as a window calls it
 * (callApi: the contract's zod schemas, then the host), against a real single-node Ray head (tests/ray/rayHead.ts; no
 * fake of the Jobs API): a study submitted from the launch form's request (its edited config reaching every job as
 * sets), its status and its jobs' logs pushed as events (every byte once), its runs appearing through the home
 * watcher; Stop of one job mid-run; and an unreachable cluster: refused in one line with nothing recorded at launch,
 * and mid-study a state ("unreachable", nothing lost) that a later attachStudy picks up from the record.
 * Skips without .venv-ray, fails instead when MARS_LAB_EXPECT_RAY=1 (as rayJobs.test.ts).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiEvent, ApiStudyView } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { listStudyIds, readStudy } from '../../engine/cluster/studies/studyRecord';
import { expectRay, freePorts, rayMissing, startRayHead, type RayHead } from './rayHead';

const missing = rayMissing();
if (missing && !expectRay) console.warn(`tests/ray/appCluster.test.ts skipped: ${missing}`);

/** A loopback TCP relay to `port` that can be closed (the cluster becomes unreachable from here). */
async function relay(port: number): Promise<{ url: string; close: () => Promise<void> }> {
  const socks = new Set<net.Socket>();
  const server = net.createServer((inbound) => {
    const outbound = net.connect(port, '127.0.0.1');
    socks.add(inbound).add(outbound);
    inbound.pipe(outbound).pipe(inbound);
    const end = () => (inbound.destroy(), outbound.destroy(), socks.delete(inbound), socks.delete(outbound));
    inbound.on('error', end).on('close', end);
    outbound.on('error', end).on('close', end);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    close: () =>
      new Promise<void>((r) => {
        for (const s of socks) s.destroy();
        server.close(() => r());
      }),
  };
}

describe.runIf(expectRay || !missing)('the app against a real Ray head', () => {
  let head: RayHead;
  let client: RayJobsClient;
  let home: string;
  let host: Host;
  const events: ApiEvent[] = [];
  const waiters = new Set<() => void>();
  const api = <T>(method: string, params: unknown) => callApi(host.handlers, method, params) as Promise<T>;

  /** Resolves once `test` holds for the events so far (checked on every new event). */
  const until = (test: () => boolean, what: string, ms = 150_000) =>
    new Promise<void>((resolve, reject) => {
      if (test()) return resolve();
      const t = setTimeout(() => (waiters.delete(check), reject(new Error(`timed out waiting for ${what}`))), ms);
      const check = () => {
        if (!test()) return;
        clearTimeout(t);
        waiters.delete(check);
        resolve();
      };
      waiters.add(check);
    });
  const lastView = (id: string): ApiStudyView | undefined =>
    events.findLast(
      (e): e is Extract<ApiEvent, { type: 'studyChanged' }> => e.type === 'studyChanged' && e.study.id === id,
    )?.study;
  /** A run's log as the events carried it (each piece placed at its byte offset). */
  const logOf = (studyId: string, runId: string): string => {
    let buf = Buffer.alloc(0);
    for (const e of events) {
      if (e.type !== 'clusterLog' || e.studyId !== studyId || e.runId !== runId) continue;
      expect(e.from).toBe(buf.length); // in order, no gap, nothing twice
      buf = Buffer.concat([buf, Buffer.from(e.text)]);
      expect(buf.length).toBe(e.to);
    }
    return buf.toString('utf8');
  };

  beforeAll(async () => {
    if (missing) throw new Error(`MARS_LAB_EXPECT_RAY=1 but ${missing}`);
    head = await startRayHead();
    client = new RayJobsClient({ url: head.url });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-appray-'));
    host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
    host.subscribe((e) => {
      events.push(e);
      for (const w of [...waiters]) w();
    });
  }, 120_000);

  afterAll(async () => {
    await host?.close();
    await head?.stop();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  }, 60_000);

  it("submits the launch form's study as Ray jobs, pushes its status and logs, and its runs appear as local ones do", async () => {
    expect((await api<{ variants: string[] }>('studyOptions', { preset: 'seqgrpo-copy' })).variants).toEqual(
      expect.any(Array),
    );
    // the form sends the preset's config as edited (here: 6 steps, evaluation every 3)
    const form = await api<{ ok: true; config: Record<string, unknown> }>('validateConfig', {
      preset: 'seqgrpo-copy',
      sets: ['budget.steps=6', 'eval.every=3'],
    });
    const { study } = await api<{ study: ApiStudyView }>('startStudy', {
      preset: 'seqgrpo-copy',
      config: form.config,
      seeds: [0, 1],
      ray: { url: head.url },
    });
    expect(study).toMatchObject({
      preset: 'seqgrpo-copy',
      where: { kind: 'ray', url: head.url, rayHome: home },
      link: 'following',
    });
    expect(study.runs.map((r) => r.seed)).toEqual([0, 1]);
    await until(() => lastView(study.id)?.link === 'idle', 'the study to end');
    const end = lastView(study.id)!;
    for (const run of end.runs) {
      expect(run).toMatchObject({ state: 'finished', jobStatus: 'SUCCEEDED', step: 6 });
      expect(run.headline?.key).toBe('eval.accuracy');
      const job = await client.job(run.runId);
      expect(job.metadata?.mars_lab_study).toBe(study.id);
      expect(job.entrypoint).toContain('--set budget.steps=6');
      // the live log, as pushed, is the job's whole log, every byte once
      expect(logOf(study.id, run.runId)).toBe(await client.logs(run.runId));
      // written into the shared home: the watcher showed it as it shows a local run
      expect(events.some((e) => e.type === 'runCreated' && e.runId === run.runId)).toBe(true);
      const meta = JSON.parse(fs.readFileSync(path.join(home, 'runs', run.runId, 'run.json'), 'utf8'));
      expect(meta).toMatchObject({ status: 'finished', seed: run.seed });
      expect(meta.config.budget.steps).toBe(6);
    }
    const listed = await api<{ runs: { id: string }[] }>('listRuns', {});
    expect(listed.runs.map((r) => r.id)).toEqual(expect.arrayContaining(end.runs.map((r) => r.runId)));
    expect(readStudy(home, study.id).runs.every((r) => r.state === 'finished')).toBe(true);
    const { studies } = await api<{ studies: ApiStudyView[] }>('listStudies', {});
    expect(studies.find((s) => s.id === study.id)?.runs.map((r) => r.state)).toEqual(['finished', 'finished']);
    const log = await api<{ text: string; from: number; size: number }>('getClusterLog', {
      studyId: study.id,
      runId: end.runs[0]!.runId,
    });
    expect(log.from).toBe(0);
    expect(log.text).toBe(await client.logs(end.runs[0]!.runId));
  });

  it("a home the cluster does not share: the app's study fetches each finished run's folder back, as study --fetch", async () => {
    // a path this machine does not have: the jobs write there (on this one-node cluster it is created by the job),
    // and the run folder must come back into the app's own home through the fetch job
    const rayHome = path.join(home, 'not-shared-home');
    const { study } = await api<{ study: ApiStudyView }>('startStudy', {
      preset: 'seqgrpo-copy',
      sets: ['budget.steps=2'],
      seeds: [5],
      ray: { url: head.url, rayHome },
    });
    expect(readStudy(home, study.id).where).toMatchObject({ kind: 'ray', rayHome, fetch: 'last' });
    await until(() => lastView(study.id)?.link === 'idle', 'the study to end');
    const runId = study.runs[0]!.runId;
    expect(readStudy(home, study.id).runs[0]).toMatchObject({ state: 'finished', fetch: 'fetched' });
    const here = path.join(home, 'runs', runId);
    expect(fs.readFileSync(path.join(here, 'metrics.jsonl'), 'utf8')).toBe(
      fs.readFileSync(path.join(rayHome, 'runs', runId, 'metrics.jsonl'), 'utf8'),
    );
  });

  it('stops one job mid-run through the API: Ray stops it and the run checkpoints as stopped', async () => {
    const { study } = await api<{ study: ApiStudyView }>('startStudy', {
      preset: 'seqgrpo-copy',
      sets: ['budget.steps=5000'],
      seeds: [3],
      ray: { url: head.url },
    });
    const runId = study.runs[0]!.runId;
    await until(() => logOf(study.id, runId).includes('"type":"progress"'), 'the job to log progress');
    const answer = await api<{ stopping: boolean; message: string }>('stopClusterJob', { studyId: study.id, runId });
    expect(answer).toMatchObject({ stopping: true });
    await until(() => lastView(study.id)?.link === 'idle', 'the stopped study to end');
    expect(lastView(study.id)!.runs[0]!.state).toBe('stopped');
    expect((await client.job(runId)).status).toBe('STOPPED');
    expect(JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'run.json'), 'utf8')).status).toBe('stopped');
    const again = await api<{ stopping: boolean; message: string }>('stopClusterJob', { studyId: study.id, runId });
    expect(again.stopping).toBe(false);
  });

  it('an unreachable cluster: one line and nothing recorded at launch; mid-study a state, then re-attached from the record', async () => {
    const [closed] = await freePorts(1);
    const before = listStudyIds(home).length;
    const refused = await api('startStudy', {
      preset: 'seqgrpo-copy',
      seeds: [0],
      ray: { url: `http://127.0.0.1:${closed}` },
    }).catch((e: unknown) => e as Error);
    expect(refused).toBeInstanceOf(Error);
    expect((refused as Error).message).toMatch(
      /^Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED/,
    );
    expect((refused as Error).message).not.toContain('\n');
    expect(listStudyIds(home)).toHaveLength(before);
    const badToken = await api('startStudy', {
      preset: 'seqgrpo-copy',
      seeds: [0],
      ray: { url: head.url, tokenEnv: 'MARS_LAB_TEST_NO_SUCH_TOKEN' },
    }).catch((e: unknown) => e as Error);
    // undeclared for the head's host (MARS_LAB_ALLOW_KEYS): refused before the variable is looked at; declared: unset
    expect((badToken as Error).message).toMatch(/^ray\.tokenEnv: MARS_LAB_TEST_NO_SUCH_TOKEN is not declared for /);
    process.env.MARS_LAB_ALLOW_KEYS = `MARS_LAB_TEST_NO_SUCH_TOKEN=${new URL(head.url).host}`;
    const unsetToken = await api('startStudy', {
      preset: 'seqgrpo-copy',
      seeds: [0],
      ray: { url: head.url, tokenEnv: 'MARS_LAB_TEST_NO_SUCH_TOKEN' },
    }).catch((e: unknown) => e as Error);
    delete process.env.MARS_LAB_ALLOW_KEYS;
    expect((unsetToken as Error).message).toMatch(/^ray\.tokenEnv: MARS_LAB_TEST_NO_SUCH_TOKEN is not set/);
    const badRequest = await api('startStudy', { preset: 'seqgrpo-copy', seeds: [], ray: { url: head.url } }).catch(
      (e: unknown) => e as Error,
    );
    expect((badRequest as Error).message).toMatch(/^startStudy: invalid request \(seeds: /);

    // mid-study: the cluster goes away for this machine (a relay closed)
    const r = await relay(head.dashboardPort);
    const { study } = await api<{ study: ApiStudyView }>('startStudy', {
      preset: 'seqgrpo-copy',
      sets: ['budget.steps=60', 'eval.every=20'],
      seeds: [0],
      ray: { url: r.url },
    });
    const runId = study.runs[0]!.runId;
    await until(() => logOf(study.id, runId).length > 0, 'the job to log');
    await r.close();
    await until(() => lastView(study.id)?.link === 'unreachable', 'the unreachable state', 120_000);
    const lost = lastView(study.id)!;
    expect(lost.message).toMatch(/unreachable/);
    expect(lost.runs[0]!.state).toBe('unknown');
    expect(readStudy(home, study.id).runs[0]!.state).toBe('unknown'); // recorded: nothing lost
    // re-attach at the recorded (dead) address: still unreachable, said so, not thrown
    const still = await api<{ study: ApiStudyView }>('attachStudy', { studyId: study.id });
    expect(still.study).toMatchObject({
      link: 'unreachable',
      message: expect.stringMatching(/^Ray cluster at .* is unreachable/),
    });
    // the cluster at its real address: re-attached from the record, followed to the end
    const back = await api<{ study: ApiStudyView }>('attachStudy', { studyId: study.id, ray: { url: head.url } });
    expect(back.study.link).toBe('following');
    await until(() => lastView(study.id)?.link === 'idle', 'the re-attached study to end');
    expect(lastView(study.id)!.runs[0]).toMatchObject({ state: 'finished', jobStatus: 'SUCCEEDED', step: 60 });
    expect(readStudy(home, study.id).runs[0]!.state).toBe('finished');
  });
});

if (!expectRay && missing !== null) {
  describe('the app against a real Ray head, without Ray', () => {
    it.skip(`skipped: ${missing}`, () => {});
  });
}
