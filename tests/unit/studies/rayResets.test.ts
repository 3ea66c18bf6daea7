/**
 * The Ray jobs client under a dashboard that drops connections (engine/cluster/ray/jobsClient.ts): a GET whose
 * connection is reset is asked again (twice at most) and answers; one reset three times is the one-line
 * 'unreachable' error; a job submission reset after the dashboard made the job is settled by asking for the job (no
 * second job), and one reset before it is made is sent again once. A loopback HTTP server plays the dashboard and
 * resets the connections it is told to (the fresh-clone CI once lost a study to one such reset under load).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { RayError, RayJobsClient } from '../../../engine/cluster/ray/jobsClient';

interface Dashboard {
  url: string;
  seen: string[];
  jobs: Set<string>;
  close: () => Promise<void>;
}

let open: Dashboard | null = null;
afterEach(async () => {
  await open?.close();
  open = null;
});

/** `resets(method route, n)`: whether the n-th request (from 1) of that kind is reset; `madeBeforeReset` for POSTs. */
async function dashboard(resets: (key: string, n: number) => boolean, madeBeforeReset = true): Promise<Dashboard> {
  const seen: string[] = [];
  const jobs = new Set<string>();
  const counts = new Map<string, number>();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const key = `${req.method} ${req.url}`;
      const n = (counts.get(key) ?? 0) + 1;
      counts.set(key, n);
      seen.push(key);
      const submitted = req.method === 'POST' ? (JSON.parse(body) as { submission_id: string }).submission_id : '';
      if (resets(key, n)) {
        if (submitted && madeBeforeReset) jobs.add(submitted);
        req.socket.destroy();
        return;
      }
      res.setHeader('content-type', 'application/json');
      if (key === 'GET /api/version') return res.end(JSON.stringify({ version: '4', ray_version: '2.52.1' }));
      if (req.method === 'POST') {
        if (jobs.has(submitted)) {
          res.statusCode = 400;
          return res.end(`Job with submission_id ${submitted} already exists.`);
        }
        jobs.add(submitted);
        return res.end(JSON.stringify({ submission_id: submitted, job_id: null }));
      }
      const id = /^\/api\/jobs\/([^/]+)$/.exec(req.url ?? '')?.[1];
      if (req.method === 'GET' && id) {
        if (!jobs.has(id)) {
          res.statusCode = 404;
          return res.end(`Job ${id} does not exist`);
        }
        return res.end(JSON.stringify({ submission_id: id, status: 'PENDING', type: 'SUBMISSION' }));
      }
      res.statusCode = 404;
      res.end('no such route');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  open = { url, seen, jobs, close: () => new Promise((r) => server.close(() => r())) };
  return open;
}

const submit = (c: RayJobsClient) => c.submit({ entrypoint: 'echo hi', submission_id: 'mars-lab-s1' });

describe('the Ray jobs client when the dashboard resets a connection', () => {
  it('asks a reset GET again, and says unreachable in one line after three resets', async () => {
    const twice = await dashboard((key, n) => key === 'GET /api/version' && n <= 2);
    expect((await new RayJobsClient({ url: twice.url }).version()).ray_version).toBe('2.52.1');
    expect(twice.seen).toEqual(['GET /api/version', 'GET /api/version', 'GET /api/version']);
    await open!.close();
    const always = await dashboard((key) => key === 'GET /api/version');
    const err = await new RayJobsClient({ url: always.url }).version().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(RayError);
    expect((err as RayError).kind).toBe('unreachable');
    expect((err as RayError).message).toMatch(/is unreachable \((ECONNRESET|socket hang up)/);
    expect(always.seen).toHaveLength(3);
  });

  it('settles a reset submission by asking for the job: made once, never twice', async () => {
    const made = await dashboard((key, n) => key === 'POST /api/jobs/' && n === 1, true);
    expect(await submit(new RayJobsClient({ url: made.url }))).toBe('mars-lab-s1');
    expect(made.seen).toEqual(['POST /api/jobs/', 'GET /api/jobs/mars-lab-s1']);
    await open!.close();
    const lost = await dashboard((key, n) => key === 'POST /api/jobs/' && n === 1, false);
    expect(await submit(new RayJobsClient({ url: lost.url }))).toBe('mars-lab-s1');
    expect(lost.seen).toEqual(['POST /api/jobs/', 'GET /api/jobs/mars-lab-s1', 'POST /api/jobs/']);
    expect([...lost.jobs]).toEqual(['mars-lab-s1']);
  });
});
