/**
 * Against a real single-node Ray head (tests/ray/rayHead.ts; no fake of the Jobs API): `mars-lab train` submitted as
 * a Ray job and its log followed over the WebSocket; a 1 × 2 study on Ray from the CLI; a study stopped with Ctrl-C
 * (its job stopped through the API, the run checkpointed and 'stopped'); and the faults: a wrong URL, a closed port,
 * an unknown job, a submission id that exists, a log socket that drops (a loopback TCP relay cut mid-stream), and a
 * cluster that becomes unreachable mid-study (the run marked 'unknown', then re-attached from the record).
 * One head for the whole file (≈20 s to start on 2 cores); it is stopped in afterAll, also when a test fails.
 */
import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RayError, RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { GPUS_METADATA_KEY } from '../../engine/cluster/ray/jobsSchemas';
import { followJobLogs } from '../../engine/cluster/ray/logTail';
import { runStudyOnRay } from '../../engine/cluster/studies/rayStudy';
import { readStudy, studyLogFile } from '../../engine/cluster/studies/studyRecord';
import { CLI, expectRay, freePorts, PROJECT, rayMissing, startRayHead, type RayHead } from './rayHead';
import { planRayStudy } from './rayStudyPlan';

const missing = rayMissing();
if (missing && !expectRay) console.warn(`tests/ray skipped: ${missing}`);

const run = promisify(execFile);

/** The CLI's exit code, stdout and stderr (a non-zero exit is not thrown). */
async function cli(args: string[], timeout = 120_000): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, ...args], { timeout, maxBuffer: 32 << 20 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

const trainEntry = (runId: string, home: string, steps: number, evalEvery = 5) =>
  `${process.execPath} ${CLI} train --preset seqgrpo-copy --set budget.steps=${steps} --set eval.every=${evalEvery} --run-id ${runId} --home ${home} --json`;

/** A loopback TCP relay to `port` whose connections can be cut (a dropped socket) and which can be closed (an unreachable cluster). */
async function relay(port: number): Promise<{ url: string; cut: () => void; close: () => Promise<void> }> {
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
  const cut = () => {
    for (const s of socks) s.destroy();
  };
  return {
    url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`,
    cut,
    close: () => new Promise<void>((r) => (cut(), server.close(() => r()))),
  };
}

describe.runIf(expectRay || !missing)('a real Ray head', () => {
  let head: RayHead;
  let client: RayJobsClient;
  let home: string;

  beforeAll(async () => {
    if (missing) throw new Error(`MARS_LAB_EXPECT_RAY=1 but ${missing}`);
    head = await startRayHead();
    client = new RayJobsClient({ url: head.url });
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-ray-'));
  }, 120_000);

  afterAll(async () => {
    await head?.stop();
    if (home) fs.rmSync(home, { recursive: true, force: true });
  }, 60_000);

  it('runs mars-lab train as a Ray job and follows its log over the WebSocket, every byte once', async () => {
    expect((await client.version()).ray_version).toBe('2.52.1');
    const id = 'train-follow-1';
    await client.submit({
      entrypoint: trainEntry(id, home, 8),
      submission_id: id,
      metadata: { mars_lab_run: id },
      entrypoint_num_cpus: 1,
    });
    let text = '';
    const r = await followJobLogs(client, id, { onText: (t) => (text += t) });
    expect(r.job?.status).toBe('SUCCEEDED');
    expect(text).toBe(await client.logs(id));
    expect(r.fromSocket).toBe(r.chars); // all of it live over the WebSocket, none from the full-log reads
    const done = text.split('\n').find((l) => l.startsWith('{"type":"done"'));
    expect(JSON.parse(done!)).toMatchObject({ runId: id, status: 'finished', step: 8 });
    expect(JSON.parse(fs.readFileSync(path.join(home, 'runs', id, 'run.json'), 'utf8')).status).toBe('finished');
    expect((await client.job(id)).metadata).toEqual({ mars_lab_run: id });
  });

  it('runs a 1 × 2 study as Ray jobs from the CLI and prints its table', async () => {
    const r = await cli([
      'study',
      '--preset',
      'seqgrpo-copy',
      '--seeds',
      '2',
      '--set',
      'budget.steps=5',
      '--home',
      home,
      '--ray',
      head.url,
    ]);
    expect(r.stderr).not.toMatch(/mars-lab: /);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n').filter((l) => /-s[01] /.test(l));
    expect(lines).toHaveLength(2);
    for (const l of lines) expect(l).toMatch(/finished \(SUCCEEDED\)\s+5\/5\s+\d\.\d{3} accuracy/);
    const id = /^study (\S+):/.exec(r.stdout)![1]!;
    const study = readStudy(home, id);
    expect(study.where).toMatchObject({ kind: 'ray', url: head.url, rayHome: home, project: PROJECT });
    for (const run of study.runs) {
      expect(run.state).toBe('finished');
      expect((await client.job(run.runId)).metadata?.mars_lab_study).toBe(id);
      expect(fs.existsSync(path.join(home, 'runs', run.runId, 'metrics.jsonl'))).toBe(true);
      expect(fs.readFileSync(studyLogFile(home, id, run.runId), 'utf8')).toContain('"type":"done"');
    }
    // re-read later from the record and the cluster
    const status = await cli(['study', 'status', id, '--home', home]);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    expect(status.stdout.match(/finished \(SUCCEEDED\)/g)).toHaveLength(2);
    const jobs = await cli(['jobs', 'ls', '--ray', head.url]);
    expect(jobs.stdout).toContain(study.runs[0]!.runId);
  });

  it('--ray-gpus 1 on this CPU head: the submitted job asks Ray for one GPU and webgpu, and waits for a GPU', async () => {
    const child = spawn(
      process.execPath,
      [CLI, 'study', '--preset', 'seqgrpo-copy', '--seeds', '1', '--ray-gpus', '1', '--home', home, '--ray', head.url],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    const code = new Promise<number | null>((r) => child.on('close', r));
    const before = new Set((await client.list()).map((j) => j.submission_id));
    let job: Awaited<ReturnType<RayJobsClient['job']>> | undefined;
    for (let i = 0; i < 300 && !job; i++) {
      job = (await client.list()).find((j) => !before.has(j.submission_id) && j.metadata?.mars_lab_study);
      if (!job) await new Promise((r) => setTimeout(r, 100));
    }
    expect(job, err).toBeDefined();
    job = await client.job(job!.submission_id!);
    // What Ray keeps: the run told to train on webgpu, and a GPU asked for. Ray 2.52.1's job details do not echo
    // entrypoint_num_gpus; it says the job waits for resources it asked for, and the metadata records how many.
    expect(job.metadata?.[GPUS_METADATA_KEY]).toBe('1');
    expect(job.message).toMatch(/waiting for resources/);
    expect(job.entrypoint).toMatch(/ --set backend=webgpu$/);
    // A head with no GPU never starts it (Ray holds the job until a node has one).
    await new Promise((r) => setTimeout(r, 3000));
    expect((await client.job(job.submission_id!)).status).toBe('PENDING');
    const jobs = await cli(['jobs', 'ls', '--ray', head.url]);
    const row = jobs.stdout.split('\n').find((l) => l.includes(job.submission_id!));
    expect(row, jobs.stdout).toMatch(/\s1\s/); // the GPUs column
    // One Ctrl-C ends the study: Ray answers the stop yet keeps a job that never started PENDING (Ray 2.52.1), so
    // the run is marked stopped saying so, instead of the study waiting for Ray's start timeout.
    child.kill('SIGINT');
    expect(await code).toBe(2);
    expect(err).toMatch(/1 stopped of 1 runs/);
    const id = /^study (\S+):/m.exec(err)![1]!;
    const [stopped] = readStudy(home, id).runs;
    expect(stopped).toMatchObject({ state: 'stopped', jobStatus: 'PENDING' });
    expect(stopped!.message).toMatch(/stopped before it started: Ray still lists the job PENDING/);
  }, 120_000);

  it('Ctrl-C stops a study on Ray: its job is stopped through the API and the run checkpoints as stopped', async () => {
    const child = spawn(
      process.execPath,
      [
        CLI,
        'study',
        '--preset',
        'seqgrpo-copy',
        '--seeds',
        '1',
        '--set',
        'budget.steps=5000',
        '--home',
        home,
        '--ray',
        head.url,
      ],
      {
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    const running = new Promise<void>((resolve) =>
      child.stderr.on('data', (d) => {
        err += d;
        if (/running step 1\/5000/.test(err)) resolve();
      }),
    );
    const code = new Promise<number | null>((r) => child.on('close', r));
    await Promise.race([running, code]);
    child.kill('SIGINT');
    expect(await code).toBe(2);
    expect(err).toMatch(/mars-lab: study \S+: 1 stopped of 1 runs\n/);
    const runId = /(\S+-s0)\s/.exec(out)![1]!;
    expect(out).toMatch(/stopped \(STOPPED\)/);
    expect((await client.job(runId)).status).toBe('STOPPED');
    expect(JSON.parse(fs.readFileSync(path.join(home, 'runs', runId, 'run.json'), 'utf8')).status).toBe('stopped');
  });

  it('fills the gap from the full log when the log socket drops, and reconnects', async () => {
    const r = await relay(head.dashboardPort);
    try {
      const viaRelay = new RayJobsClient({ url: r.url });
      const id = 'train-drop-1';
      await client.submit({ entrypoint: trainEntry(id, home, 150, 50), submission_id: id });
      let text = '';
      let cuts = 0;
      const reconnects: string[] = [];
      const res = await followJobLogs(viaRelay, id, {
        retryDelayMs: 50,
        onReconnect: (_n, why) => reconnects.push(why),
        onText: (t) => {
          text += t;
          if (cuts < 1 && t.includes('"progress"')) {
            cuts++;
            r.cut(); // the socket drops mid-stream
          }
        },
      });
      expect(cuts).toBeGreaterThan(0);
      expect(res.reconnects).toBeGreaterThan(0);
      expect(reconnects.length).toBe(res.reconnects);
      expect(res.job?.status).toBe('SUCCEEDED');
      expect(text).toBe(await client.logs(id)); // nothing lost, nothing twice
      expect(res.fromSocket).toBeGreaterThan(text.indexOf('"progress"')); // the reconnected socket carried on past the cut
    } finally {
      await r.close();
    }
  });

  it('marks runs unknown when the cluster becomes unreachable mid-study, and re-attaches from the record', async () => {
    const r = await relay(head.dashboardPort);
    const viaRelay = new RayJobsClient({ url: r.url });
    const record = planRayStudy('seqgrpo-copy', ['budget.steps=60', 'eval.every=20'], {
      url: viaRelay.where,
      rayHome: home,
      project: PROJECT,
      node: process.execPath,
    });
    let closed = false;
    const first = runStudyOnRay(home, record, viaRelay, {
      retryDelayMs: 20,
      onRun: (run) => {
        if (!closed && run.state === 'running') {
          closed = true;
          void r.close(); // the cluster goes away for this machine
        }
      },
    });
    const after = await first.done;
    expect(after.runs[0]!.state).toBe('unknown');
    expect(after.runs[0]!.message).toMatch(/unreachable/);
    expect(readStudy(home, record.id).runs[0]!.state).toBe('unknown'); // recorded
    // `study status` against the dead address: the table the record keeps, and one line
    const dead = await cli(['study', 'status', record.id, '--home', home]);
    expect(dead.code).toBe(2);
    expect(dead.stdout).toContain('unknown');
    expect(dead.stderr).toMatch(/^mars-lab: Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable/);
    // the cluster is reachable again (its real address): re-attach, follow to the end
    const again = await cli(['study', 'status', record.id, '--follow', '--home', home, '--ray', head.url]);
    expect(again.stderr).not.toMatch(/mars-lab: /);
    expect(again.code).toBe(0);
    const final = readStudy(home, record.id).runs[0]!;
    expect(final).toMatchObject({ state: 'finished', jobStatus: 'SUCCEEDED', step: 60 });
    expect(final.headline?.key).toBe('eval.accuracy');
  });

  it('says in one line what is wrong: a wrong URL, a closed port, an unknown job, a failed job, a submission id that exists', async () => {
    const [closed] = await freePorts(1);
    const cases: [string[], RegExp][] = [
      [
        ['jobs', 'ls', '--ray', `${head.url}/not-ray`],
        /^mars-lab: http:\/\/127\.0\.0\.1:\d+\/not-ray has no GET \/api\/jobs\/ \(HTTP 404.*is this a Ray dashboard's address/,
      ],
      [
        ['jobs', 'ls', '--ray', `http://127.0.0.1:${closed}`],
        /^mars-lab: Ray cluster at http:\/\/127\.0\.0\.1:\d+ is unreachable \(ECONNREFUSED/,
      ],
      [
        ['jobs', 'ls', '--ray', 'ray://127.0.0.1:10001'],
        /^mars-lab: --ray: "ray:\/\/127\.0\.0\.1:10001" is not an http\(s\) URL/,
      ],
      [
        ['jobs', 'logs', 'no-such-job', '--ray', head.url],
        /^mars-lab: no job 'no-such-job' on the Ray cluster at http:\/\/127\.0\.0\.1:\d+ \(list them/,
      ],
      [['jobs', 'stop', 'no-such-job', '--ray', head.url], /^mars-lab: no job 'no-such-job'/],
      [
        ['study', '--preset', 'seqgrpo-copy', '--seeds', '2', '--home', home, '--ray', `http://127.0.0.1:${closed}`],
        /^mars-lab: Ray cluster at .* is unreachable/,
      ],
    ];
    for (const [args, want] of cases) {
      const r = await cli(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toMatch(want);
      expect(r.stderr.trim().split('\n'), args.join(' ')).toHaveLength(1);
    }
    // a job that fails (no node at that path on the "cluster"): the run is failed, with the reason, in the table and one line
    const failed = await cli([
      'study',
      '--preset',
      'seqgrpo-copy',
      '--seeds',
      '1',
      '--set',
      'budget.steps=3',
      '--home',
      home,
      '--ray',
      head.url,
      '--ray-node',
      '/no/such/node',
    ]);
    expect(failed.code).toBe(2);
    expect(failed.stdout).toMatch(/-s0 +– +0 +failed \(FAILED\)/);
    expect(failed.stdout).toMatch(/-s0: .*\/no\/such\/node.*not found/);
    expect(failed.stderr).toMatch(/^mars-lab: study \S+: 1 failed of 1 runs\n$/m);
    const failedRun = /^(\S+-s0) /m.exec(failed.stdout)![1]!;
    const logs = await cli(['jobs', 'logs', failedRun, '--follow', '--ray', head.url]);
    expect(logs.code).toBe(2);
    expect(logs.stdout).toContain('/no/such/node');
    expect(logs.stderr).toMatch(
      new RegExp(`^mars-lab: Ray job '${failedRun}' failed: Job entrypoint command failed with exit code 127`),
    );
    await client.submit({ entrypoint: 'echo once', submission_id: 'dup-1' });
    const dup = await client.submit({ entrypoint: 'echo twice', submission_id: 'dup-1' }).catch((e: unknown) => e);
    expect(dup).toBeInstanceOf(RayError);
    expect((dup as RayError).kind).toBe('duplicate');
    expect((dup as RayError).message).toMatch(
      /^a job with submission id 'dup-1' already exists on http:\/\/127\.0\.0\.1:\d+: choose another run id/,
    );
    expect((dup as RayError).message).not.toContain('\n');
    // the first job is untouched by the refused second submit
    const r = await followJobLogs(client, 'dup-1', { onText: () => {} });
    expect(r.job?.entrypoint).toBe('echo once');
  });
});

if (!expectRay && missing !== null) {
  describe('without Ray', () => {
    it.skip(`skipped: ${missing}`, () => {});
  });
}
