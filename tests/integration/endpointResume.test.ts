/**
 * An endpoint evaluation that fails part-way keeps every answered request (requests.jsonl) and, run again, resumes
 * where it stopped: the answered requests are replayed, only the rest are asked, and the results equal an
 * evaluation that never failed. The endpoint is mars-lab's own model server, in-process, behind a loopback proxy that
 * starts failing after a number of requests.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EndpointError } from '../../engine/policy/endpointClient';
import { evaluateWithEndpoints } from '../../engine/runs/evaluation/evaluateEndpoints';
import { loadCheckpoint } from '../../engine/model/formats/checkpoint';
import { loadTokenizer } from '../../engine/model/tokenizers/tokenizer';
import { parseRunConfig } from '../../engine/runs/config/configSchema';
import { checkpointConfig } from '../../engine/runs/evaluation/evaluation';
import { startModelServer, type ModelServer } from '../../engine/serveModel/server';
import { useBackend } from '../helpers/backends';

const CK = path.resolve('resources/marti/base-tiny');
let home: string;
let server: ModelServer;
let proxy: http.Server;
let proxyUrl: string;
const state = { failAfter: Infinity, seen: 0 };

beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-endpoint-resume-'));
  const { model } = await loadCheckpoint(CK);
  server = await startModelServer({
    model,
    tokenizer: await loadTokenizer(path.join(CK, 'tokenizer.json')),
    modelName: 'base-tiny',
    port: 0,
  });
  const target = new URL(server.baseUrl);
  proxy = http.createServer((req, res) => {
    if (++state.seen > state.failAfter) {
      res.writeHead(500, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ error: { message: 'injected failure' } }));
    }
    const up = http.request(
      {
        host: target.hostname,
        port: target.port,
        path: req.url,
        method: req.method,
        headers: { ...req.headers, host: target.host },
      },
      (r) => {
        res.writeHead(r.statusCode!, r.headers);
        r.pipe(res);
      },
    );
    req.pipe(up);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}/v1`;
}, 120_000);
afterAll(async () => {
  proxy.closeAllConnections();
  await new Promise((r) => proxy.close(r));
  await server.close();
  fs.rmSync(home, { recursive: true, force: true });
});

describe('an interrupted endpoint evaluation', () => {
  it('keeps the answered requests and resumes where it stopped, with the results of an uninterrupted run', async () => {
    const c = JSON.parse(JSON.stringify(checkpointConfig(CK)));
    c.eval = { ...c.eval, items: 3, temperature: 0 };
    c.marti = { ...c.marti, evalNodes: 4, evalSearchTemperature: 0, tplus: { ...c.marti.tplus, enabled: false } };
    const source = {
      kind: 'endpoint',
      baseUrl: proxyUrl,
      model: 'base-tiny',
      apiKeyEnv: 'RESUME_KEY',
      maxRetries: 0,
      concurrency: 2,
    };
    c.marti.agents.forEach((a: Record<string, unknown>) => (a.policy = source));
    const cfg = parseRunConfig(c);
    const env = { RESUME_KEY: server.token };

    state.failAfter = 10;
    let message = '';
    try {
      await evaluateWithEndpoints(home, cfg, { env });
    } catch (err) {
      expect(err).toBeInstanceOf(EndpointError);
      message = (err as Error).message;
    }
    expect(message).toMatch(
      /the server answered 500 after 0 retries: 500 injected failure; (\d+) answers kept in .*requests\.jsonl: run the same command again to resume$/,
    );
    const kept = Number(/; (\d+) answers kept/.exec(message)![1]);
    expect(kept).toBeGreaterThanOrEqual(8);
    expect(kept).toBeLessThanOrEqual(10);

    state.failAfter = Infinity;
    state.seen = 0;
    const resumed = await evaluateWithEndpoints(home, cfg, { env });
    expect(resumed.journal.replayed).toBe(kept);
    expect(state.seen).toBe(resumed.journal.fresh);

    state.seen = 0;
    const clean = await evaluateWithEndpoints(home, cfg, { env, fresh: true });
    expect(clean.journal.replayed).toBe(0);
    expect(clean.journal.fresh).toBe(kept + resumed.journal.fresh);
    expect(resumed.items).toEqual(clean.items);
    // token entropy comes from the log-probs, whose last float bits depend on how the server batched the rows
    expect(Object.keys(resumed.metrics)).toEqual(Object.keys(clean.metrics));
    for (const [k, v] of Object.entries(clean.metrics)) {
      if (/tokenEntropy/.test(k)) expect(resumed.metrics[k]).toBeCloseTo(v, 5);
      else expect(resumed.metrics[k]).toBe(v);
    }
    // the stored results are eval's format: identity, metrics, items with their trees
    const stored = JSON.parse(fs.readFileSync(resumed.file, 'utf8'));
    expect(stored.items.map((i: { id: string }) => i.id)).toEqual(clean.items.map((i) => i.id));
    expect(stored.identity).toEqual(clean.identity);
  });
});
