/**
 * What the tests of endpoint evaluations launched from the app share: a real `mars-lab serve-model` child on loopback
 * serving a shipped tiny checkpoint, a loopback proxy in front of it that holds each answer back a while and counts
 * the requests a client gave up on (so a stop lands mid-evaluation and its cancelled requests are seen), and the
 * reference: the same evaluation through the CLI (`mars-lab eval --preset … --set … --json`) in a home of its own.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { cli, spawnCli } from './cli';

export const MARS_CK = path.resolve('resources/mars/base-tiny');
export const MARTI_CK = path.resolve('resources/marti/base-tiny');

export interface Served {
  baseUrl: string;
  model: string;
  token: string;
  stop: () => Promise<void>;
}

/** `mars-lab serve-model` on a free loopback port, as a child process; resolves once it prints its address. */
export function serveModel(checkpoint: string): Promise<Served> {
  return new Promise((resolve, reject) => {
    const { child, exited } = spawnCli(
      ['serve-model', '--checkpoint', checkpoint, '--port', '0', '--json', '--backend', 'wasm'],
      {},
      (line) => {
        const j = JSON.parse(line) as { baseUrl: string; model: string; token: string };
        resolve({ ...j, stop: async () => void (child.kill('SIGTERM'), await exited) });
      },
    );
    void exited.then((code) => reject(new Error(`serve-model exited with ${code} before it printed its address`)));
  });
}

export interface SlowProxy {
  baseUrl: string;
  /** Requests answered, and requests whose client went away before their answer (cancelled). */
  counts: { answered: number; cancelled: number };
  /** How long each request is held before it goes on (ms). */
  delay: { ms: number };
  /**
   * From now on, requests after the next `n` are parked, neither forwarded nor answered, until `release()`: a run cannot
   * finish between a test's poll and its Stop, however fast the machine.
   */
  holdAfter: (n: number) => void;
  /** Forwards the parked requests whose clients are still there, and parks no more. */
  release: () => void;
  close: () => Promise<void>;
}

/** A loopback proxy to `target` (a …/v1 base URL) that waits `delayMs` before forwarding each request. */
export async function slowProxy(target: string, delayMs: number): Promise<SlowProxy> {
  const up = new URL(target);
  const counts = { answered: 0, cancelled: 0 };
  const delay = { ms: delayMs };
  let received = 0;
  let parkBeyond = Infinity;
  const parked: (() => void)[] = [];
  const server = http.createServer((req, res) => {
    received++;
    const parkIt = received > parkBeyond;
    const body: Buffer[] = [];
    req.on('data', (c: Buffer) => body.push(c));
    req.on('end', () => {
      let gone = false;
      res.on('close', () => {
        if (!res.writableFinished) {
          gone = true;
          counts.cancelled++;
        }
      });
      const forward = (): void => {
        if (gone) return;
        const out = http.request(
          {
            host: up.hostname,
            port: up.port,
            path: req.url,
            method: req.method,
            headers: { ...req.headers, host: up.host },
          },
          (r) => {
            res.writeHead(r.statusCode!, r.headers);
            r.pipe(res);
            r.on('end', () => counts.answered++);
          },
        );
        out.on('error', () => res.destroy());
        out.end(Buffer.concat(body));
      };
      if (parkIt) parked.push(forward);
      else setTimeout(forward, delay.ms);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    counts,
    delay,
    holdAfter: (n) => void (parkBeyond = received + n),
    release: () => {
      parkBeyond = Infinity;
      for (const forward of parked.splice(0)) forward();
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

export interface EvalItem {
  id: string;
  correct: boolean;
  score: number;
  record?: unknown;
}

/** `mars-lab eval --preset P --set …` as a user runs it, in a home of its own: its items and metrics. */
export async function cliEval(
  preset: string,
  sets: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ items: EvalItem[]; metrics: Record<string, number> }> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-cli-eval-'));
  try {
    const r = await cli(
      ['eval', '--preset', preset, ...sets.flatMap((s) => ['--set', s]), '--json', '--home', home, '--backend', 'wasm'],
      env,
    );
    if (r.code !== 0) throw new Error(`mars-lab eval exited ${r.code}: ${r.stderr}`);
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      items: EvalItem[];
      metrics: Record<string, number>;
    };
    return out;
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

/**
 * `x` with every log-probability and entropy taken out (into `lps`, compared with a tolerance: the server batches rows
 * differently, which moves the last float bits) and the rest left to compare exactly.
 */
export function splitLogProbs(x: unknown): { rest: unknown; lps: number[] } {
  const lps: number[] = [];
  const walk = (v: unknown, key = ''): unknown => {
    if (Array.isArray(v)) return v.map((e) => walk(e, key));
    if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, e]) => [k, walk(e, k)]));
    if (typeof v === 'number' && /logprob|entropy/i.test(key)) return (lps.push(v), 'lp');
    return v;
  };
  return { rest: walk(x), lps };
}

/** The largest difference between two lists of log-probabilities of the same length (Infinity when they differ in length). */
export function worstDiff(a: number[], b: number[]): number {
  if (a.length !== b.length) return Infinity;
  return Math.max(0, ...a.map((x, i) => Math.abs(x - b[i]!)));
}
