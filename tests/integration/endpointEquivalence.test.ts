/**
 * The equivalence that makes endpoint agents trustworthy (issue 20): a mars-lab checkpoint evaluated in-process, and
 * the same checkpoint served by a real `mars-lab serve-model` child process and evaluated through the endpoint over
 * HTTP on loopback, give the same episodes, trees and scores at temperature 0 — MARS (dual system with search) and
 * MARTI (AB-MCTS-A trees and T+). Log-probs are compared to 1e-4: the server batches rows differently, which moves
 * the last float bits, never a greedy choice here.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { evaluateWithEndpoints } from '../../engine/runs/evaluation/evaluateEndpoints';
import { endpointSourceSchema } from '../../engine/policy/policySource';
import { parseRunConfig, type Algorithm, type RunConfig } from '../../engine/runs/config/configSchema';
import { checkpointConfig, evaluateCheckpoint } from '../../engine/runs/evaluation/evaluation';
import { useBackend } from '../helpers/backends';
import { spawnCli } from '../helpers/cli';

const MARS_CK = path.resolve('resources/mars/base-tiny');
const MARTI_CK = path.resolve('resources/marti/base-tiny');

interface Served {
  baseUrl: string;
  model: string;
  token: string;
  stop: () => Promise<void>;
}

function serve(checkpoint: string, name?: string): Promise<Served> {
  return new Promise((resolve, reject) => {
    const { child, exited } = spawnCli(
      [
        'serve-model',
        '--checkpoint',
        checkpoint,
        '--port',
        '0',
        '--json',
        '--backend',
        'wasm',
        ...(name ? ['--model-name', name] : []),
      ],
      {},
      (line) => {
        const j = JSON.parse(line) as { baseUrl: string; model: string; token: string };
        resolve({ ...j, stop: async () => void (child.kill('SIGTERM'), await exited) });
      },
    );
    void exited.then((code) => reject(new Error(`serve-model exited with ${code} before it printed its address`)));
  });
}

/** Every number in a record, log-probs pulled out (compared with a tolerance), the rest compared exactly. */
function split(x: unknown, lps: number[] = []): { rest: unknown; lps: number[] } {
  const walk = (v: unknown, key = ''): unknown => {
    if (Array.isArray(v)) return v.map((e) => walk(e, key));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, walk(e, k)]));
    if (typeof v === 'number' && /logprob|entropy/i.test(key)) return (lps.push(v), 'lp');
    return v;
  };
  return { rest: walk(x), lps };
}

function expectSameResults(
  inProcess: { metrics: Record<string, number>; items: unknown[] },
  viaEndpoint: { metrics: Record<string, number>; items: unknown[] },
): void {
  const a = split({ metrics: inProcess.metrics, items: inProcess.items });
  const b = split({ metrics: viaEndpoint.metrics, items: viaEndpoint.items });
  expect(b.rest).toEqual(a.rest);
  expect(b.lps.length).toBe(a.lps.length);
  const worst = Math.max(0, ...a.lps.map((x, i) => Math.abs(x - b.lps[i]!)));
  expect(worst).toBeLessThan(1e-4);
}

let home: string;
const servers: Served[] = [];
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-endpoint-eq-'));
}, 120_000);
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
  fs.rmSync(home, { recursive: true, force: true });
});

type ConfigOf<A extends Algorithm> = Extract<RunConfig, { algorithm: A }>;

function isAlgorithm<A extends Algorithm>(cfg: RunConfig, algorithm: A): cfg is ConfigOf<A> {
  return cfg.algorithm === algorithm;
}

/** A copy of an `algorithm` config with `edit` applied, validated again as a config file would be. */
function withSource<A extends Algorithm>(algorithm: A, cfg: RunConfig, edit: (c: ConfigOf<A>) => void): ConfigOf<A> {
  const c = structuredClone(cfg);
  if (!isAlgorithm(c, algorithm)) throw new Error(`expected a ${algorithm} config, got ${c.algorithm}`);
  edit(c);
  const parsed = parseRunConfig(c);
  if (!isAlgorithm(parsed, algorithm)) throw new Error(`expected a ${algorithm} config, got ${parsed.algorithm}`);
  return parsed;
}

describe('evaluation through serve-model equals in-process evaluation at temperature 0', () => {
  it('MARTI: the same pass@1 nodes, search trees, T+ trees and metrics', async () => {
    const s = await serve(MARTI_CK);
    servers.push(s);
    const base = withSource('marti', checkpointConfig(MARTI_CK), (c) => {
      c.eval = { ...c.eval, items: 4, temperature: 0 };
      c.marti = {
        ...c.marti,
        evalNodes: 5,
        evalSearchTemperature: 0,
        tplus: { ...c.marti.tplus, enabled: true, nodes: 6 },
      };
    });
    const inProcess = await evaluateCheckpoint(home, MARTI_CK, base);
    const source = endpointSourceSchema.parse({
      kind: 'endpoint',
      baseUrl: s.baseUrl,
      model: s.model,
      apiKeyEnv: 'EQ_MARTI_KEY',
      concurrency: 4,
    });
    const viaCfg = withSource('marti', base, (c) => {
      for (const a of c.marti.agents) a.policy = source;
    });
    const via = await evaluateWithEndpoints(home, viaCfg, { env: { EQ_MARTI_KEY: s.token } });
    expect(via.journal.fresh).toBeGreaterThan(20);
    expect(via.identity).toEqual(inProcess.identity);
    expect(via.items.length).toBe(4);
    expectSameResults(inProcess, via);
    // trees really grew and were recorded: every search tree has its evalNodes nodes
    for (const it of via.items) expect((it.record as { nodes: unknown[] }).nodes.length).toBeGreaterThanOrEqual(5);
  });

  it('MARS: the same System 2 turns, searches, System 1 bins, answers and metrics', async () => {
    const s = await serve(MARS_CK);
    servers.push(s);
    const base = withSource('mars', checkpointConfig(MARS_CK), (c) => {
      c.eval = { ...c.eval, items: 8, temperature: 0 };
      c.model.from = { kind: 'random' };
    });
    const inProcess = await evaluateCheckpoint(home, MARS_CK, base);
    const viaCfg = withSource('mars', base, (c) => {
      c.mars.policies = {
        sys2: endpointSourceSchema.parse({
          kind: 'endpoint',
          baseUrl: s.baseUrl,
          model: s.model,
          apiKeyEnv: 'EQ_MARS_KEY',
          concurrency: 8,
        }),
      };
    });
    const via = await evaluateWithEndpoints(home, viaCfg, { env: { EQ_MARS_KEY: s.token } });
    expect(via.identity).toEqual(inProcess.identity);
    expect(via.items.length).toBe(8);
    // the episodes searched and called System 1, so both systems went through the endpoint
    const turns = via.items.flatMap((it) => (it.record as { turns: { bins: unknown[] }[] }).turns);
    expect(turns.some((t) => t.bins.length > 0)).toBe(true);
    expectSameResults(inProcess, via);
  });

  it('a heterogeneous MARTI team on two endpoints (one streaming) and MARS with System 1 on its own endpoint', async () => {
    const [a, b] = await Promise.all([serve(MARTI_CK, 'alpha-model'), serve(MARTI_CK, 'beta-model')]);
    servers.push(a, b);
    const hetero = withSource('marti', checkpointConfig(MARTI_CK), (c) => {
      c.eval = { ...c.eval, items: 3, temperature: 0 };
      c.marti = {
        ...c.marti,
        configuration: 'heterogeneous',
        evalNodes: 4,
        evalSearchTemperature: 0,
        tplus: { ...c.marti.tplus, enabled: false },
      };
    });
    const inProcess = await evaluateCheckpoint(home, MARTI_CK, hetero);
    const viaCfg = withSource('marti', hetero, (c) => {
      c.marti.agents[0]!.policy = endpointSourceSchema.parse({
        kind: 'endpoint',
        baseUrl: a.baseUrl,
        model: 'alpha-model',
        apiKeyEnv: 'KEY_A',
      });
      c.marti.agents[1]!.policy = endpointSourceSchema.parse({
        kind: 'endpoint',
        baseUrl: b.baseUrl,
        model: 'beta-model',
        apiKeyEnv: 'KEY_B',
        stream: true,
      });
    });
    const via = await evaluateWithEndpoints(home, viaCfg, { env: { KEY_A: a.token, KEY_B: b.token } });
    expect(via.policies).toEqual({
      'MARTI agent alpha': expect.stringContaining('alpha-model'),
      'MARTI agent beta': expect.stringContaining('beta-model'),
    });
    expectSameResults(inProcess, via);

    const [s2, s1] = await Promise.all([serve(MARS_CK, 'sys2-model'), serve(MARS_CK, 'sys1-model')]);
    servers.push(s2, s1);
    const mars = withSource('mars', checkpointConfig(MARS_CK), (c) => {
      c.eval = { ...c.eval, items: 6, temperature: 0 };
      c.model.from = { kind: 'random' };
    });
    const marsIn = await evaluateCheckpoint(home, MARS_CK, mars);
    const marsVia = await evaluateWithEndpoints(
      home,
      withSource('mars', mars, (c) => {
        c.mars.policies = {
          sys2: endpointSourceSchema.parse({
            kind: 'endpoint',
            baseUrl: s2.baseUrl,
            model: 'sys2-model',
            apiKeyEnv: 'K2',
          }),
          sys1: endpointSourceSchema.parse({
            kind: 'endpoint',
            baseUrl: s1.baseUrl,
            model: 'sys1-model',
            apiKeyEnv: 'K1',
            stream: true,
          }),
        };
      }),
      { env: { K2: s2.token, K1: s1.token } },
    );
    expect(Object.keys(marsVia.policies)).toEqual(['MARS System 2', 'MARS System 1']);
    expectSameResults(marsIn, marsVia);
  });
});
