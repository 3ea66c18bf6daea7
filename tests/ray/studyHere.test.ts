/**
 * The parts of `study` and the Ray client that need no Ray: a 1 × 2 study run here from the CLI (child train
 * processes, the table, the record, `study status`), the plan's checks (bad seeds, variants, --set: one line before
 * anything starts), the entrypoint's quoting, Ray's plain-text errors reduced to one line, and the client's
 * transport options (bearer token, custom headers, a CA file for an https dashboard) seen by a loopback https
 * server (a stand-in for a TLS proxy in front of Ray, not for the Jobs API, which tests/ray/rayJobs.test.ts uses for real).
 */
import { execFile, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { parseRayUrl, rayErrorLine, RayError, RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { readStudy } from '../../engine/cluster/studies/studyRecord';
import { parseSeeds, parseVariants, rayEntrypoint } from '../../engine/cluster/studies/studyPlan';
import { UserError } from '../../engine/base/userError';
import { CLI } from './rayHead';
import { planRayStudy } from './rayStudyPlan';

const run = promisify(execFile);
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-study-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

async function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, ...args], { timeout: 120_000 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('study here', () => {
  it('runs variants × seeds as child train processes and prints a table; the record reads back', async () => {
    const home = path.join(tmp, 'home');
    const r = await cli([
      'study',
      '--preset',
      'seqgrpo-copy',
      '--seeds',
      '0,3',
      '--set',
      'budget.steps=4',
      '--set',
      'eval.every=2',
      '--parallel',
      '2',
      '--home',
      home,
    ]);
    expect(r.stderr).not.toMatch(/mars-lab: /);
    expect(r.code).toBe(0);
    const id = /^study (\S+): preset seqgrpo-copy, here \(2 at once\)/.exec(r.stdout)![1]!;
    const rows = r.stdout.split('\n').filter((l) => l.startsWith(id));
    expect(rows.map((l) => l.split(/\s+/).slice(1, 5))).toEqual([
      ['–', '0', 'finished', '4/4'],
      ['–', '3', 'finished', '4/4'],
    ]);
    for (const l of rows) expect(l).toMatch(/\d\.\d{3} accuracy$/);
    const study = readStudy(home, id.slice(0, 20)); // a unique prefix
    expect(study.where).toEqual({ kind: 'local', parallel: 2 });
    for (const run of study.runs) {
      const meta = JSON.parse(fs.readFileSync(path.join(home, 'runs', run.runId, 'run.json'), 'utf8'));
      expect(meta).toMatchObject({ id: run.runId, status: 'finished', seed: run.seed });
      expect(run.headline).toMatchObject({ key: 'eval.accuracy', label: 'accuracy', value: expect.any(Number) });
    }
    const status = await cli(['study', 'status', id, '--home', home]);
    expect(status.code).toBe(0);
    expect(status.stdout.match(/ finished /g)).toHaveLength(2);
  });

  it('checks every run before starting any: a bad variant, seeds or --set is one line, and nothing is recorded', async () => {
    const home = path.join(tmp, 'bad');
    const cases: [string[], RegExp][] = [
      [['--seeds', '2', '--variants', 'nope'], /^mars-lab: --variant nope: preset 'seqgrpo-copy' has no variants$/],
      [['--seeds', '0'], /^mars-lab: --seeds 0: give a count from 1 to 1000/],
      [['--seeds', '1,1'], /^mars-lab: --seeds 1,1: a seed is listed twice$/],
      [['--seeds', '2', '--set', 'rl.lr=abc'], /^mars-lab: .*rl\.lr/],
      [
        ['--seeds', '2', '--ray-home', '/x'],
        /^mars-lab: --ray-home, --ray-project, --ray-setup and --ray-runtime-env need --ray URL$/,
      ],
    ];
    for (const [extra, want] of cases) {
      const r = await cli(['study', '--preset', 'seqgrpo-copy', '--home', home, ...extra]);
      expect(r.code, extra.join(' ')).toBe(2);
      expect(r.stderr.trim(), extra.join(' ')).toMatch(want);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
    expect(fs.existsSync(path.join(home, 'studies'))).toBe(false);
  });
});

describe('study plan', () => {
  it('reads seeds and variants', () => {
    expect(parseSeeds('3')).toEqual([0, 1, 2]);
    expect(parseSeeds('4, 7')).toEqual([4, 7]);
    expect(() => parseSeeds('x')).toThrow(UserError);
    expect(parseVariants(undefined)).toEqual([null]);
    expect(parseVariants('full,sys1-off')).toEqual(['full', 'sys1-off']);
    expect(() => parseVariants('a,,b')).toThrow(/an empty name/);
  });

  it("quotes the job's entrypoint for the shell, with the run id as train's --run-id and the cluster's home", () => {
    const study = planRayStudy(
      'mars-ablations',
      ['notes=it is "quoted" \'here\''],
      { url: 'http://h:8265', rayHome: '/shared/mars lab', project: '/opt/mars-lab' },
      { variants: ['sys1-off'], seeds: [2], now: new Date('2026-12-01T10:00:00Z') },
    );
    const run = study.runs[0]!;
    expect(run.runId).toMatch(/^20261201-100000-mars-ablations-[0-9a-f]{4}-sys1-off-s2$/);
    const entry = rayEntrypoint(study, run);
    expect(entry).toBe(
      `node /opt/mars-lab/engine/bin/mars-lab.mjs train --preset mars-ablations --variant sys1-off --set 'notes=it is "quoted" '\\''here'\\''' --set seed=2 --run-id ${run.runId} --home '/shared/mars lab' --json`,
    );
    // what the shell makes of it: the same words back
    const words = execFileSync('sh', ['-c', `printf '%s\\n' ${entry}`], { encoding: 'utf8' })
      .trimEnd()
      .split('\n');
    expect(words).toContain(`notes=it is "quoted" 'here'`);
    expect(words).toContain('/shared/mars lab');
  });
});

describe('Ray client without a cluster', () => {
  it("reduces Ray's plain-text errors (tracebacks) to their last error line", () => {
    // Ray 2.52.1's answer to a submission id that exists (HTTP 500, text/plain), as captured from a real head
    const body = `Traceback (most recent call last):
  File "/x/ray/dashboard/modules/job/job_head.py", line 386, in submit_job
    resp = await job_agent_client.submit_job_internal(submit_request)
RuntimeError: Request failed with status code 400: Traceback (most recent call last):
  File "/x/ray/dashboard/modules/job/job_manager.py", line 542, in submit_job
    raise ValueError(
ValueError: Job with submission_id t1 already exists. Please use a different submission_id.
.
`;
    expect(rayErrorLine(body)).toBe(
      'ValueError: Job with submission_id t1 already exists. Please use a different submission_id.',
    );
    expect(rayErrorLine('Job nope does not exist')).toBe('Job nope does not exist');
    expect(rayErrorLine('')).toBe('(empty body)');
  });

  it('takes http(s) dashboard URLs only', () => {
    expect(parseRayUrl('http://127.0.0.1:8265/').href).toBe('http://127.0.0.1:8265/');
    expect(parseRayUrl('https://proxy/ray/').pathname).toBe('/ray');
    expect(() => parseRayUrl('127.0.0.1:6379')).toThrow(RayError);
    expect(() => parseRayUrl('ray://h:10001')).toThrow(/not an http\(s\) URL/);
  });

  it('sends the bearer token and custom headers, and trusts an https dashboard through --ray-ca', async () => {
    const dir = path.join(tmp, 'tls');
    fs.mkdirSync(dir);
    const key = path.join(dir, 'key.pem');
    const cert = path.join(dir, 'cert.pem');
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-keyout',
        key,
        '-out',
        cert,
        '-days',
        '1',
        '-subj',
        '/CN=127.0.0.1',
        '-addext',
        'subjectAltName=IP:127.0.0.1',
      ],
      { stdio: 'ignore' },
    );
    const seen: Record<string, unknown>[] = [];
    const server = https.createServer({ key: fs.readFileSync(key), cert: fs.readFileSync(cert) }, (req, res) => {
      seen.push({ ...req.headers });
      if (req.headers.authorization !== 'Bearer s3cret') {
        res
          .writeHead(req.headers.authorization ? 403 : 401, { 'content-type': 'text/plain' })
          .end('Unauthorized: missing or invalid token');
        return;
      }
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ version: '4', ray_version: '2.52.1' }));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `https://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const ok = new RayJobsClient({ url, token: 's3cret', headers: { 'x-proxy-key': 'k1' }, caFile: cert, env: {} });
      expect((await ok.version()).ray_version).toBe('2.52.1');
      expect(seen.at(-1)).toMatchObject({ authorization: 'Bearer s3cret', 'x-proxy-key': 'k1' });
      expect(Object.keys(seen.at(-1)!).some((h) => h.startsWith('sec-fetch'))).toBe(false); // Ray refuses those as browser traffic
      // the token from the environment
      const fromEnv = new RayJobsClient({ url, caFile: cert, env: { MARS_LAB_RAY_TOKEN: 's3cret' } });
      expect((await fromEnv.version()).version).toBe('4');
      const noToken = await new RayJobsClient({ url, caFile: cert, env: {} }).version().catch((e: unknown) => e);
      expect((noToken as RayError).kind).toBe('auth');
      expect((noToken as RayError).message).toMatch(
        /refused the request \(401: .*\): it wants a token; set MARS_LAB_RAY_TOKEN or --ray-token/,
      );
      const wrong = await new RayJobsClient({ url, caFile: cert, token: 'nope', env: {} })
        .version()
        .catch((e: unknown) => e);
      expect((wrong as RayError).message).toMatch(/\(403: .*\): the token is wrong/);
      // without the CA the certificate is not trusted: one line naming the cause
      const untrusted = await new RayJobsClient({ url, token: 's3cret', env: {} }).version().catch((e: unknown) => e);
      expect((untrusted as RayError).kind).toBe('unreachable');
      expect((untrusted as RayError).message).toMatch(
        /unreachable \((DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN)/,
      );
      expect(() => new RayJobsClient({ url, caFile: path.join(dir, 'missing.pem') })).toThrow(
        /^--ray-ca .*missing\.pem: cannot read it \(ENOENT\)/,
      );
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
