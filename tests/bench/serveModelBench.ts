/**
 * Measures serve-model against in-process evaluation (docs/results/endpoints.md):
 *   1. raw throughput: N parallel /v1/completions requests (N = 1, 4, 16, 64) of MARTI prompts, greedy, to a
 *      `mars-lab serve-model` child process — requests/s, generated tokens/s, latency p50/p95, and the batch sizes the
 *      server formed;
 *   2. a MARS and a MARTI evaluation of the shipped base-tiny checkpoints in-process and through the endpoint, wall
 *      time, and whether the items are identical.
 * Run: `npx tsx tests/bench/serveModelBench.ts [--items-mars 16] [--items-marti 8]`. Prints JSON lines and a Markdown table.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import OpenAI from 'openai';
import { evaluateWithEndpoints } from '../../engine/runs/evaluation/evaluateEndpoints';
import { rootPrompt } from '../../engine/marti/prompts';
import { heldoutTasks } from '../../engine/marti/problems';
import { endpointSourceSchema } from '../../engine/policy/policySource';
import { parseRunConfig, type Algorithm, type RunConfig } from '../../engine/runs/config/configSchema';
import { checkpointConfig, evaluateCheckpoint } from '../../engine/runs/evaluation/evaluation';
import { initBackend } from '../../engine/tensor/backend';

const BIN = path.resolve('engine/bin/mars-lab.mjs');
const arg = (name: string, dflt: number): number => {
  const i = process.argv.indexOf(name);
  return i >= 0 ? Number(process.argv[i + 1]) : dflt;
};

function serve(checkpoint: string): Promise<{ baseUrl: string; model: string; token: string; stop: () => void }> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [BIN, 'serve-model', '--checkpoint', checkpoint, '--port', '0', '--json', '--backend', 'wasm'],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    child.stdout
      .setEncoding('utf8')
      .once('data', (line: string) => resolve({ ...JSON.parse(line), stop: () => child.kill('SIGTERM') }));
    child.once('exit', (code) => reject(new Error(`serve-model exited with ${code}`)));
  });
}

const pct = (xs: number[], p: number): number =>
  [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(p * xs.length))]!;

type ConfigOf<A extends Algorithm> = Extract<RunConfig, { algorithm: A }>;

function isAlgorithm<A extends Algorithm>(cfg: RunConfig, algorithm: A): cfg is ConfigOf<A> {
  return cfg.algorithm === algorithm;
}

/** A copy of an `algorithm` config with `f` applied, validated again as a config file would be. */
function edit<A extends Algorithm>(algorithm: A, cfg: RunConfig, f: (c: ConfigOf<A>) => void): ConfigOf<A> {
  const c = structuredClone(cfg);
  if (!isAlgorithm(c, algorithm)) throw new Error(`expected a ${algorithm} config, got ${c.algorithm}`);
  f(c);
  const parsed = parseRunConfig(c);
  if (!isAlgorithm(parsed, algorithm)) throw new Error(`expected a ${algorithm} config, got ${parsed.algorithm}`);
  return parsed;
}

async function main(): Promise<void> {
  await initBackend({ force: 'wasm' });
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-endpoint-measure-'));
  const martiCk = path.resolve('resources/marti/base-tiny');
  const marsCk = path.resolve('resources/mars/base-tiny');
  const out: Record<string, unknown>[] = [];
  console.log(
    JSON.stringify({
      uptime: os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' '),
      cpus: os.cpus().length,
      node: process.version,
    }),
  );

  // 1. raw throughput
  const s = await serve(martiCk);
  const client = new OpenAI({ baseURL: s.baseUrl, apiKey: s.token, maxRetries: 0 });
  const martiCfg = checkpointConfig(martiCk);
  const prompts = heldoutTasks(
    edit('marti', martiCfg, (c) => {
      c.eval.items = 64;
    }),
  ).map((t) => `<bos> ${rootPrompt(t, { rolePrompt: 'agent alpha :' })}`);
  for (const n of [1, 4, 16, 64]) {
    const total = Math.max(n, 32);
    let next = 0;
    const lat: number[] = [];
    let tokens = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, async () => {
        while (next < total) {
          const p = prompts[next++ % prompts.length]!;
          const a = performance.now();
          const r = await client.completions.create({ model: s.model, prompt: p, max_tokens: 48, temperature: 0 });
          lat.push(performance.now() - a);
          tokens += r.usage!.completion_tokens;
        }
      }),
    );
    const sec = (performance.now() - t0) / 1000;
    const row = {
      kind: 'throughput',
      parallel: n,
      requests: total,
      seconds: +sec.toFixed(2),
      requestsPerSec: +(total / sec).toFixed(1),
      tokensPerSec: +(tokens / sec).toFixed(0),
      p50ms: Math.round(pct(lat, 0.5)),
      p95ms: Math.round(pct(lat, 0.95)),
    };
    out.push(row);
    console.log(JSON.stringify(row));
  }
  s.stop();

  // 2. evaluations in-process and through serve-model
  for (const [algo, ck, items] of [
    ['marti', martiCk, arg('--items-marti', 8)],
    ['mars', marsCk, arg('--items-mars', 16)],
  ] as const) {
    const base = edit(algo, checkpointConfig(ck), (c) => {
      c.eval = { ...c.eval, items, temperature: 0 };
      if (c.algorithm === 'marti') c.marti = { ...c.marti, evalSearchTemperature: 0 };
      else c.model.from = { kind: 'random' };
    });
    await evaluateCheckpoint(path.join(home, 'warm-up'), ck, base); // the first evaluation compiles kernels and builds the tasks
    const t0 = performance.now();
    const inProcess = await evaluateCheckpoint(home, ck, base);
    const tIn = (performance.now() - t0) / 1000;
    const srv = await serve(ck);
    for (const concurrency of [1, 16]) {
      const source = endpointSourceSchema.parse({
        kind: 'endpoint',
        baseUrl: srv.baseUrl,
        model: srv.model,
        apiKeyEnv: 'MEASURE_KEY',
        concurrency,
      });
      const cfg = edit(algo, base, (c) => {
        if (c.algorithm === 'marti') for (const a of c.marti.agents) a.policy = source;
        else c.mars.policies = { sys2: source };
      });
      const t1 = performance.now();
      const via = await evaluateWithEndpoints(home, cfg, { env: { MEASURE_KEY: srv.token }, fresh: true });
      const tVia = (performance.now() - t1) / 1000;
      const strip = (xs: unknown[]) => JSON.stringify(xs, (k, v) => (/logprob/i.test(k) ? undefined : v));
      const row = {
        kind: 'eval',
        algorithm: algo,
        items,
        concurrency,
        inProcessSec: +tIn.toFixed(1),
        endpointSec: +tVia.toFixed(1),
        requests: via.journal.fresh,
        sameItems: strip(via.items) === strip(inProcess.items),
        headline: algo === 'marti' ? via.metrics.pass1 : via.metrics.exactMatch,
      };
      out.push(row);
      console.log(JSON.stringify(row));
    }
    srv.stop();
  }
  console.log(
    JSON.stringify({
      uptimeAfter: os
        .loadavg()
        .map((x) => x.toFixed(2))
        .join(' '),
    }),
  );
  fs.rmSync(home, { recursive: true, force: true });
  process.exit(0);
}

void main();
