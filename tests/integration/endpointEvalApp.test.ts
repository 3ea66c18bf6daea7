/**
 * Endpoint evaluations launched from the app (issue 20), at the host: validateEndpointEval / startEndpointEval through
 * the contract's dispatch, a real launcher and real run-worker processes, against a real `mars-lab serve-model` child
 * serving the shipped MARS base model on loopback.
 * - the run finishes with the same items (episodes, answers, scores) and metrics as `mars-lab eval` gives for the same
 *   config, its episodes in trajectories.jsonl for the Episodes tab, its held-out score in the run list;
 * - stopped mid-evaluation (stopRun) it cancels the requests in flight (the proxy sees clients go away), keeps the
 *   answered ones, and is `stopped`; resumed (resumeRun) it replays exactly those and finishes with the CLI's items;
 * - MARTI too: the run's trajectories are the CLI's search trees (the Tree tab's records);
 * - an unreachable endpoint fails the run with one line;
 * - a key typed into the key-variable field is refused, on its field, before anything is written: no run, no file
 *   under the home holds it, and the error does not repeat it.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiSchemas, type ApiMethod, type ApiResponse } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import {
  cliEval,
  MARS_CK,
  MARTI_CK,
  serveModel,
  slowProxy,
  splitLogProbs,
  worstDiff,
  type EvalItem,
  type Served,
  type SlowProxy,
} from '../helpers/endpointEvalFixture';

const KEY_VAR = 'H3_APP_EVAL_KEY';
const PRESET = 'mars-tiny';

let home: string;
let host: Host;
let served: Served;
let proxy: SlowProxy;
let reference: { items: EvalItem[]; metrics: Record<string, number> };

/** The --set lines of the evaluation (the CLI's and the app's): 6 held-out questions, greedy, System 2 at `baseUrl`. */
function sets(baseUrl: string): string[] {
  return [
    'eval.items=6',
    'eval.temperature=0',
    `mars.policies=${JSON.stringify({ sys2: { kind: 'endpoint', baseUrl, model: served.model, apiKeyEnv: KEY_VAR, concurrency: 4 } })}`,
  ];
}

async function call<M extends ApiMethod>(method: M, request: unknown): Promise<ApiResponse<M>> {
  return apiSchemas[method].response.parse(await callApi(host.handlers, method, request)) as ApiResponse<M>;
}

/** Polls the run until `pred` holds (bounded: about `seconds`). */
async function until(runId: string, pred: (run: Awaited<ReturnType<typeof getRun>>) => boolean, seconds = 240) {
  for (let i = 0; i < seconds * 4; i++) {
    const run = await getRun(runId);
    if (pred(run)) return run;
    await new Promise((r) => setTimeout(r, 250));
  }
  throw new Error(`run ${runId}: condition not reached in ${seconds} s`);
}

function getRun(runId: string) {
  return call('getRun', { runId, eventsLimit: 500 });
}

async function records(runId: string): Promise<unknown[]> {
  return (await call('getTrajectories', { runId, offset: 0, limit: 500 })).records;
}

/** The run's episodes equal the CLI's items' records (log-probs to 1e-4), in the same order. */
function expectCliEpisodes(recs: unknown[]): void {
  const ours = splitLogProbs(recs.map((r) => ({ ...(r as object), step: undefined })));
  const cli = splitLogProbs(reference.items.map((i) => ({ ...(i.record as object), step: undefined })));
  expect(ours.rest).toEqual(cli.rest);
  expect(worstDiff(ours.lps, cli.lps)).toBeLessThan(1e-4);
}

function allFiles(dir: string): string[] {
  return fs.existsSync(dir)
    ? fs.readdirSync(dir, { recursive: true, encoding: 'utf8' }).map((f) => path.join(dir, f))
    : [];
}

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-app-endpoint-eval-'));
  served = await serveModel(MARS_CK);
  proxy = await slowProxy(served.baseUrl, 0);
  // the app's environment holds the key (the worker inherits it); the form names the variable only
  process.env[KEY_VAR] = served.token;
  // and declares where a window may have it sent (engine/api/host/keyGrants.ts): the server, and the proxy before it
  process.env.MARS_LAB_ALLOW_KEYS = [served.baseUrl, proxy.baseUrl]
    .map((u) => `${KEY_VAR}=${new URL(u).host}`)
    .join(',');
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  reference = await cliEval(PRESET, sets(served.baseUrl), { [KEY_VAR]: served.token });
}, 300_000);

afterAll(async () => {
  delete process.env[KEY_VAR];
  delete process.env.MARS_LAB_ALLOW_KEYS;
  await host?.close();
  await proxy?.close();
  await served?.stop();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe('an endpoint evaluation launched from the app', () => {
  it('refuses a key typed into the key-variable field, on its field, and keeps it nowhere', async () => {
    const key = 'Zx81kQ2mN4vB7rT0pL5sW9yH3';
    const config = (await call('validateConfig', { preset: PRESET, sets: sets(served.baseUrl) })) as {
      ok: true;
      config: Record<string, unknown>;
    };
    expect(config.ok).toBe(true);
    const withKey = structuredClone(config.config) as { mars: { policies: { sys2: { apiKeyEnv: string } } } };
    withKey.mars.policies.sys2.apiKeyEnv = key;
    const answer = await call('validateEndpointEval', { preset: PRESET, config: withKey });
    expect(answer.ok).toBe(false);
    const issues = answer.ok ? [] : answer.issues;
    expect(issues.map((i) => i.path)).toEqual(['mars.policies.sys2.apiKeyEnv']);
    expect(issues[0]!.message).toMatch(/looks like a key itself: give the NAME of an environment variable/);
    let message = '';
    try {
      await callApi(host.handlers, 'startEndpointEval', { preset: PRESET, config: withKey });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toMatch(/mars\.policies\.sys2\.apiKeyEnv: this looks like a key itself/);
    // a key of the sk-… kind is refused by the schema itself
    withKey.mars.policies.sys2.apiKeyEnv = `sk-${key}`;
    const bySchema = await call('validateEndpointEval', { preset: PRESET, config: withKey });
    expect(bySchema.ok ? [] : bySchema.issues.map((i) => i.path)).toEqual(['mars.policies.sys2.apiKeyEnv']);
    // a variable not declared for this endpoint in MARS_LAB_ALLOW_KEYS: refused before the environment is looked at
    withKey.mars.policies.sys2.apiKeyEnv = 'H3_NO_SUCH_KEY';
    const undeclared = await call('validateEndpointEval', { preset: PRESET, config: withKey });
    expect(undeclared.ok ? '' : undeclared.issues[0]!.message).toMatch(
      /^H3_NO_SUCH_KEY is not declared for 127\.0\.0\.1:\d+ in MARS_LAB_ALLOW_KEYS/,
    );
    // declared, but a variable the app does not have
    const allowed = process.env.MARS_LAB_ALLOW_KEYS;
    process.env.MARS_LAB_ALLOW_KEYS = `${allowed},H3_NO_SUCH_KEY=${new URL(served.baseUrl).host}`;
    const unset = await call('validateEndpointEval', { preset: PRESET, config: withKey });
    process.env.MARS_LAB_ALLOW_KEYS = allowed;
    expect(unset.ok ? '' : unset.issues[0]!.message).toMatch(/the app's environment has no variable H3_NO_SUCH_KEY/);
    for (const text of [message, JSON.stringify(answer), JSON.stringify(bySchema)]) expect(text).not.toContain(key);
    expect((await call('listRuns', {})).runs).toEqual([]);
    for (const f of allFiles(home).filter((f) => fs.statSync(f).isFile())) {
      expect(fs.readFileSync(f, 'utf8')).not.toContain(key);
    }
  });

  it("finishes as a run with the CLI's items: episodes in trajectories.jsonl, metrics, the held-out score", async () => {
    const { runId } = await call('startEndpointEval', { preset: PRESET, sets: sets(served.baseUrl) });
    const run = await until(runId, (r) => r.meta.status === 'finished' || r.meta.status === 'failed');
    expect(run.meta.status).toBe('finished');
    expect(run.meta.tags).toContain('endpoint-eval');
    expect(run.meta.algorithm).toBe('mars');
    // the config as kept names the key's variable, never the key
    expect(JSON.stringify(run.meta.config)).toContain(KEY_VAR);
    for (const f of allFiles(home).filter((f) => fs.statSync(f).isFile())) {
      expect(fs.readFileSync(f, 'utf8')).not.toContain(served.token);
    }
    expect(run.events.some((e) => e.type === 'progress')).toBe(true);
    const recs = await records(runId);
    expect(recs).toHaveLength(6);
    expect(recs.every((r) => (r as { kind: string; step: number }).kind === 'mars.episode')).toBe(true);
    expectCliEpisodes(recs);
    const series = await call('getMetricSeries', { runId, names: ['eval.exactMatch', 'eval.f1'] });
    expect(series.series['eval.exactMatch']!.last).toEqual([reference.metrics.exactMatch]);
    expect(series.series['eval.f1']!.last).toEqual([reference.metrics.f1]);
    const listed = (await call('listRuns', {})).runs.find((r) => r.id === runId);
    expect(listed?.headline?.value).toBe(reference.metrics.exactMatch);
  }, 300_000);

  it('stops mid-evaluation (requests in flight cancelled, answered ones kept) and resumes to the same items', async () => {
    proxy.delay.ms = 300;
    proxy.holdAfter(3); // three answers, then the rest wait for Stop
    const { runId } = await call('startEndpointEval', { preset: PRESET, sets: sets(proxy.baseUrl) });
    const answered = (r: Awaited<ReturnType<typeof getRun>>): number =>
      Math.max(0, ...r.events.filter((e) => e.type === 'progress').map((e) => Number(e.answered)));
    // progress events come at most once a second: wait for one, and for the proxy to have let its three answers through
    await until(runId, (r) => answered(r) >= 1 && proxy.counts.answered >= 3);
    const stop = await call('stopRun', { runId });
    expect(stop.stopping).toBe(true);
    // stopped, and its process gone (run.json says 'stopped' just before the process exits)
    const stopped = await until(runId, (r) => r.meta.status !== 'running' && !r.hostProcess);
    expect(stopped.meta.status).toBe('stopped');
    expect(proxy.counts.cancelled).toBeGreaterThan(0);
    const said = stopped.events.find((e) => e.type === 'status' && e.status === 'stopped');
    const m = /(\d+) answers? kept in (.*requests\.jsonl): Resume asks only the rest/.exec(String(said?.message));
    expect(m).not.toBeNull();
    const kept = Number(m![1]);
    expect(kept).toBeGreaterThanOrEqual(1);
    expect(kept).toBeLessThanOrEqual(3); // the parked requests were never answered
    expect(fs.readFileSync(m![2]!, 'utf8').trim().split('\n')).toHaveLength(kept);
    expect(await records(runId)).toHaveLength(0);

    proxy.delay.ms = 0;
    proxy.release();
    const before = proxy.counts.answered;
    await call('resumeRun', { runId });
    const done = await until(runId, (r) => r.meta.status === 'finished' || r.meta.status === 'failed');
    expect(done.meta.status).toBe('finished');
    const series = await call('getMetricSeries', { runId, names: ['requests.replayed', 'requests.answered'] });
    expect(series.series['requests.replayed']!.last).toEqual([kept]);
    // only the requests not kept went to the endpoint again
    expect(proxy.counts.answered - before).toBe(series.series['requests.answered']!.last[0]! - kept);
    expectCliEpisodes(await records(runId));
  }, 300_000);

  it("MARTI: the run's trajectories are the search trees mars-lab eval gives", async () => {
    const marti = await serveModel(MARTI_CK);
    const allowed = process.env.MARS_LAB_ALLOW_KEYS;
    try {
      const martiSets = [
        'eval.items=3',
        'eval.temperature=0',
        'marti.evalNodes=4',
        'marti.evalSearchTemperature=0',
        'marti.tplus.enabled=false',
        `marti.agents.0.policy=${JSON.stringify({ kind: 'endpoint', baseUrl: marti.baseUrl, model: marti.model, apiKeyEnv: 'H3_MARTI_KEY' })}`,
      ];
      process.env.H3_MARTI_KEY = marti.token;
      process.env.MARS_LAB_ALLOW_KEYS = `${allowed},H3_MARTI_KEY=${new URL(marti.baseUrl).host}`;
      const ref = await cliEval('marti-single-small', martiSets, { H3_MARTI_KEY: marti.token });
      const { runId } = await call('startEndpointEval', { preset: 'marti-single-small', sets: martiSets });
      const run = await until(runId, (r) => r.meta.status === 'finished' || r.meta.status === 'failed');
      expect(run.meta.status).toBe('finished');
      const recs = await records(runId);
      expect(recs).toHaveLength(3);
      const ours = splitLogProbs(recs.map((r) => ({ ...(r as object), step: undefined })));
      const cli = splitLogProbs(ref.items.map((i) => ({ ...(i.record as object), step: undefined })));
      expect(ours.rest).toEqual(cli.rest);
      expect(worstDiff(ours.lps, cli.lps)).toBeLessThan(1e-4);
      for (const r of recs) expect((r as { nodes: unknown[] }).nodes.length).toBeGreaterThanOrEqual(4);
      const series = await call('getMetricSeries', { runId, names: ['eval.pass1'] });
      expect(series.series['eval.pass1']!.last).toEqual([ref.metrics.pass1]);
    } finally {
      delete process.env.H3_MARTI_KEY;
      process.env.MARS_LAB_ALLOW_KEYS = allowed;
      await marti.stop();
    }
  }, 300_000);

  it('an unreachable endpoint: the run fails with one line that says so', async () => {
    const closed = await slowProxy(served.baseUrl, 0);
    const url = closed.baseUrl;
    await closed.close(); // a loopback port nothing listens on now
    const unreachable = [
      'eval.items=2',
      `mars.policies=${JSON.stringify({ sys2: { kind: 'endpoint', baseUrl: url, model: served.model, maxRetries: 0 } })}`,
    ];
    const { runId } = await call('startEndpointEval', { preset: PRESET, sets: unreachable });
    const run = await until(runId, (r) => r.meta.status !== 'running' && r.meta.status !== 'created');
    expect(run.meta.status).toBe('failed');
    const failed = run.events.find((e) => e.type === 'status' && e.status === 'failed');
    expect(String(failed?.error)).toMatch(
      /^MARS System 2 \(.*\): cannot reach the server \(ECONNREFUSED\) after 0 retries/,
    );
    expect(String(failed?.error).split('\n')).toHaveLength(1);
  }, 120_000);
});
