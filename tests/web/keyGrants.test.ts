/**
 * A window with the web token cannot have the host send its secrets to a URL of its choosing (issue 34, finding 2):
 * an endpoint policy's `apiKeyEnv` and a study's `ray.tokenEnv` are used as keys only when the variable has a key's
 * name and the user declared it for the URL's host in MARS_LAB_ALLOW_KEYS (engine/api/host/keyGrants.ts). A decoy
 * secret and HOME are named by requests through the contract's dispatch (what both transports call), towards a loopback
 * listener that records every request it gets: refused, and nothing arrives. A declared pair is sent, to its host only.
 */
import http from 'node:http';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { ALLOW_KEYS_ENV, keyGrantProblem, readKeyGrants } from '../../engine/api/host/keyGrants';
import { resumeEndpointEvalRun } from '../../engine/api/endpointEval/endpointEvalRun';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { createRunFolder } from '../../engine/runs/folder/runFolder';

const DECOY_VAR = 'H34_DECOY_API_KEY';
const DECOY = 'decoy-secret-7f3a9c1e5b';
const PRESET = 'mars-tiny';

let launched = 0;
const launcher: RunLauncher = {
  launch() {
    launched++;
    throw new Error('a refused request launches nothing');
  },
};

let home: string;
let host: Host;
let listener: http.Server;
let port: number;
const seen: { url: string; authorization?: string }[] = [];
const savedEnv: Record<string, string | undefined> = {};

function setEnv(name: string, value: string | undefined): void {
  if (!(name in savedEnv)) savedEnv[name] = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
}

async function call(method: string, request: unknown): Promise<{ value?: unknown; error?: string }> {
  try {
    return { value: await callApi(host.handlers, method, request) };
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/** A MARS config whose System 2 is an endpoint at `baseUrl` with the key in `apiKeyEnv`, as the launch form sends it. */
async function evalConfig(baseUrl: string, apiKeyEnv: string): Promise<Record<string, unknown>> {
  const policies = { sys2: { kind: 'endpoint', baseUrl, model: 'm', apiKeyEnv } };
  const r = (await callApi(host.handlers, 'validateConfig', {
    preset: PRESET,
    sets: ['eval.items=2', `mars.policies=${JSON.stringify(policies)}`],
  })) as { ok: boolean; config: Record<string, unknown> };
  expect(r.ok).toBe(true);
  return r.config;
}

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-key-grants-'));
  listener = http.createServer((req, res) => {
    seen.push({
      url: req.url ?? '',
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    });
    req.resume();
    res.writeHead(404, { connection: 'close' }).end('not here');
  });
  await new Promise<void>((r) => listener.listen(0, '127.0.0.1', r));
  port = (listener.address() as { port: number }).port;
  setEnv(DECOY_VAR, DECOY);
  setEnv(ALLOW_KEYS_ENV, undefined);
  setEnv('MARS_LAB_RAY_TOKEN', undefined);
  host = await createHost({ home, launcher, transport: 'web' });
});

afterEach(() => setEnv(ALLOW_KEYS_ENV, undefined));

afterAll(async () => {
  for (const [name, value] of Object.entries(savedEnv)) {
    if (value === undefined) delete process.env[name];
    else process.env[name] = value;
  }
  await host?.close();
  await new Promise((r) => listener?.close(r));
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe('keys a window names (MARS_LAB_ALLOW_KEYS)', () => {
  it('reads NAME=host[:port] grants; a host without a port is its default port only; other names grant nothing', () => {
    const env = { [ALLOW_KEYS_ENV]: 'OPENAI_API_KEY=api.openai.com, RAY_TOKEN=10.0.0.5:8265,HOME=evil.example,junk' };
    const { grants, bad } = readKeyGrants(env);
    expect([...grants.keys()]).toEqual(['OPENAI_API_KEY', 'RAY_TOKEN']);
    expect(bad).toBe(2);
    expect(keyGrantProblem('OPENAI_API_KEY', 'https://api.openai.com/v1', env)).toBeNull();
    expect(keyGrantProblem('OPENAI_API_KEY', 'https://API.OpenAI.com:443/v1', env)).toBeNull();
    expect(keyGrantProblem('OPENAI_API_KEY', 'https://api.openai.com:8443/v1', env)).toMatch(/not declared for/);
    expect(keyGrantProblem('OPENAI_API_KEY', 'https://evil.example/v1', env)).toMatch(/not declared for evil\.example/);
    expect(keyGrantProblem('RAY_TOKEN', 'http://10.0.0.5:8265', env)).toBeNull();
    expect(keyGrantProblem('RAY_TOKEN', 'http://10.0.0.5:8266', env)).toMatch(/not declared for 10\.0\.0\.5:8266/);
    expect(keyGrantProblem('RAY_TOKEN', 'https://api.openai.com/v1', env)).toMatch(/not declared/);
    expect(keyGrantProblem('HOME', 'https://evil.example/v1', env)).toMatch(/HOME is not a key's name/);
  });
});

describe('an endpoint evaluation from a window', () => {
  it('is refused, on its field, when its key variable is not declared for the endpoint; nothing is sent', async () => {
    const baseUrl = `http://127.0.0.1:${port}/v1`;
    const config = await evalConfig(baseUrl, DECOY_VAR);
    const v = (await call('validateEndpointEval', { preset: PRESET, config })).value as {
      ok: boolean;
      issues: { path: string; message: string }[];
    };
    expect(v.ok).toBe(false);
    expect(v.issues.map((i) => i.path)).toEqual(['mars.policies.sys2.apiKeyEnv']);
    expect(v.issues[0]!.message).toContain(`${DECOY_VAR} is not declared for 127.0.0.1:${port} in ${ALLOW_KEYS_ENV}`);
    const start = await call('startEndpointEval', { preset: PRESET, config });
    expect(start.error).toMatch(/mars\.policies\.sys2\.apiKeyEnv: H34_DECOY_API_KEY is not declared/);
    expect(start.error).toContain(`${ALLOW_KEYS_ENV}="${DECOY_VAR}=127.0.0.1:${port}"`);

    // HOME, set in every environment, is not a key's name at all
    const home = await call('startEndpointEval', { preset: PRESET, config: await evalConfig(baseUrl, 'HOME') });
    expect(home.error).toMatch(/mars\.policies\.sys2\.apiKeyEnv: HOME is not a key's name/);
    // declared, but for another port of the same host
    setEnv(ALLOW_KEYS_ENV, `${DECOY_VAR}=127.0.0.1:${port + 1}`);
    expect((await call('startEndpointEval', { preset: PRESET, config })).error).toMatch(/is not declared for/);

    for (const text of [JSON.stringify(v), start.error, home.error]) {
      expect(text).not.toContain(DECOY);
      expect(text).not.toContain(os.homedir());
    }
    expect(launched).toBe(0);
    expect(seen).toEqual([]);
  });

  it('passes with the pair declared', async () => {
    setEnv(ALLOW_KEYS_ENV, `OTHER_KEY=example.org,${DECOY_VAR}=127.0.0.1:${port}`);
    const config = await evalConfig(`http://127.0.0.1:${port}/v1`, DECOY_VAR);
    const v = (await call('validateEndpointEval', { preset: PRESET, config })).value as { ok: boolean };
    expect(v.ok).toBe(true);
  });

  it('a crafted evaluation run in the home is not resumed with an undeclared key, by the host or by its worker', async () => {
    const config = await evalConfig(`http://127.0.0.1:${port}/v1`, DECOY_VAR);
    const { id, dir } = createRunFolder(home, {
      algorithm: 'mars',
      preset: PRESET,
      config: { ...config, tags: ['endpoint-eval'] },
      engineVersion: '0',
      seed: 1,
      tags: ['endpoint-eval'],
      notes: '',
    });
    const byHost = await call('resumeRun', { runId: id });
    expect(byHost.error).toMatch(/mars\.policies\.sys2\.apiKeyEnv: H34_DECOY_API_KEY is not declared/);
    expect(launched).toBe(0);
    // the worker's own check, for a window that got past the host
    await expect(resumeEndpointEvalRun(dir)).rejects.toThrow(/H34_DECOY_API_KEY is not declared for 127\.0\.0\.1/);
    expect(seen).toEqual([]);
  });
});

describe('a study on a Ray cluster from a window', () => {
  const rayUrl = (): string => `http://127.0.0.1:${port}`;

  it('is refused when ray.tokenEnv is not declared for the dashboard, or is not a key; nothing is sent', async () => {
    const decoy = await call('startStudy', {
      preset: 'seqgrpo-copy',
      seeds: [0],
      ray: { url: rayUrl(), tokenEnv: DECOY_VAR },
    });
    expect(decoy.error).toMatch(
      /^ray\.tokenEnv: H34_DECOY_API_KEY is not declared for 127\.0\.0\.1:\d+ in MARS_LAB_ALLOW_KEYS/,
    );
    const homeVar = await call('startStudy', {
      preset: 'seqgrpo-copy',
      seeds: [0],
      ray: { url: rayUrl(), tokenEnv: 'HOME' },
    });
    expect(homeVar.error).toMatch(/^ray\.tokenEnv: HOME is not a key's name/);
    // the default variable the Ray client reads without a tokenEnv is held to the same rule
    setEnv('MARS_LAB_RAY_TOKEN', DECOY);
    const implicit = await call('startStudy', { preset: 'seqgrpo-copy', seeds: [0], ray: { url: rayUrl() } });
    setEnv('MARS_LAB_RAY_TOKEN', undefined);
    expect(implicit.error).toMatch(/^ray\.tokenEnv \(empty: MARS_LAB_RAY_TOKEN\): MARS_LAB_RAY_TOKEN is not declared/);
    for (const text of [decoy.error, homeVar.error, implicit.error]) expect(text).not.toContain(DECOY);
    expect(seen).toEqual([]);
    expect(fs.existsSync(path.join(home, 'studies')) ? fs.readdirSync(path.join(home, 'studies')) : []).toEqual([]);
  });

  it('sends a declared token to its host (the listener is no Ray dashboard, so the study itself fails after)', async () => {
    setEnv(ALLOW_KEYS_ENV, `${DECOY_VAR}=127.0.0.1:${port}`);
    const r = await call('startStudy', {
      preset: 'seqgrpo-copy',
      seeds: [0],
      ray: { url: rayUrl(), tokenEnv: DECOY_VAR },
    });
    expect(r.error).toBeDefined();
    expect(r.error).not.toContain(DECOY);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((s) => s.authorization === `Bearer ${DECOY}`)).toBe(true);
  });
});
