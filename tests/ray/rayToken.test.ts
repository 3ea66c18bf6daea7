/**
 * Ray's token mode (Ray ≥ 2.52: RAY_AUTH_MODE=token) on a real head: without the token, or with a wrong one, the
 * client says so in one line naming MARS_LAB_RAY_TOKEN; with it (from the environment, as `Authorization: Bearer`)
 * a job is submitted, and its log followed over the WebSocket, which carries the header too.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RayError, RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { followJobLogs } from '../../engine/cluster/ray/logTail';
import { CLI, expectRay, rayMissing, startRayHead, type RayHead } from './rayHead';

const missing = rayMissing();
const TOKEN = 'mars-lab-test-token-0123456789abcdef';

describe.runIf(expectRay || !missing)('a Ray head in token mode', () => {
  let head: RayHead;

  beforeAll(async () => {
    if (missing) throw new Error(`MARS_LAB_EXPECT_RAY=1 but ${missing}`);
    head = await startRayHead({ env: { RAY_AUTH_MODE: 'token', RAY_AUTH_TOKEN: TOKEN } });
  }, 120_000);

  afterAll(async () => {
    await head?.stop();
  }, 60_000);

  it('refuses a missing or wrong token in one line, and works with the right one, log socket included', async () => {
    const none = await new RayJobsClient({ url: head.url, env: {} }).list().catch((e: unknown) => e);
    expect(none).toBeInstanceOf(RayError);
    expect((none as RayError).message).toMatch(
      /^Ray at http:\/\/127\.0\.0\.1:\d+ refused the request \(401: .*\): it wants a token; set MARS_LAB_RAY_TOKEN or --ray-token/,
    );
    const wrong = await new RayJobsClient({ url: head.url, token: 'not-it', env: {} }).list().catch((e: unknown) => e);
    expect((wrong as RayError).message).toMatch(/refused the request \(403: .*\): the token is wrong/);

    const client = new RayJobsClient({ url: head.url, env: { MARS_LAB_RAY_TOKEN: TOKEN } });
    await client.submit({ entrypoint: 'echo one; sleep 1; echo two', submission_id: 'token-1' });
    let text = '';
    const r = await followJobLogs(client, 'token-1', { onText: (t) => (text += t) });
    expect(r.job?.status).toBe('SUCCEEDED');
    expect(text).toMatch(/one\n[^]*two\n/);
    expect(r.fromSocket).toBe(r.chars);

    const { stdout } = await promisify(execFile)(process.execPath, [CLI, 'jobs', 'ls', '--ray', head.url], {
      env: { ...process.env, MARS_LAB_RAY_TOKEN: TOKEN },
    });
    expect(stdout).toMatch(/token-1\s+SUCCEEDED/);
  });
});
