/**
 * `npm run bench:copy-in`: what copying a run with a large backlog into a served home does to every other client
 * (issue 34: a run with 77 MiB of logs stalled each client's ping for 4.7 s). Figures, never test assertions: through
 * a real `serve` (host + web server + socket), a client pings every 20 ms while a run folder with MiB of metrics and
 * trajectories lines is renamed into the home's runs/, then lists the runs; the slowest ping, the median, and the time
 * until the backlog's last metrics event arrived. tests/web/copyInBacklog.test.ts asserts the behaviour (pings are
 * answered between the backlog's events).
 *
 *   npm run bench:copy-in -- [--mib 77] [--repeats 3]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import WebSocket from 'ws';
import { createHost } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { frameText, startWebServer } from '../../engine/api/web/webServer';
import { createRunFolder, runFilePaths } from '../../engine/runs/folder/runFolder';
import { quantile } from './stats';

/** A run folder outside the home with about `mib` MiB of logs: two thirds metrics lines, one third trajectories. */
export function backlogRun(where: string, mib: number): { id: string; dir: string } {
  const made = createRunFolder(where, {
    algorithm: 'seqgrpo',
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  const files = runFilePaths(made.dir);
  const write = (file: string, bytes: number, line: (i: number) => string): void => {
    const fd = fs.openSync(file, 'w');
    let chunk = '';
    for (let i = 0, n = 0; n < bytes; i++) {
      const l = line(i) + '\n';
      chunk += l;
      n += l.length;
      if (chunk.length > 1 << 20) {
        fs.writeSync(fd, chunk);
        chunk = '';
      }
    }
    fs.writeSync(fd, chunk);
    fs.closeSync(fd);
  };
  const metric = (i: number) =>
    JSON.stringify({ step: i, time: 1_700_000_000 + i, reward: Math.sin(i), loss: 1 / (i + 1), kl: i % 7 });
  write(files.metrics, (mib * (1 << 20) * 2) / 3, metric);
  const text = 'a'.repeat(400);
  write(files.trajectories, (mib * (1 << 20)) / 3, (i) => JSON.stringify({ step: i, index: 0, text, reward: 0 }));
  return made;
}

export interface CopyInFigures {
  mib: number;
  /** The longest time between two ping answers. */
  maxGapMs: number;
  maxPingMs: number;
  medianPingMs: number;
  pings: number;
  lastMetricsMs: number;
}

/** One copy-in: the slowest and median ping while the backlog is read and sent, and when its last event came. */
export async function measureCopyIn(mib: number): Promise<CopyInFigures> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-copyin-'));
  const outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-copyin-src-'));
  const host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  const renderer = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-copyin-page-'));
  fs.writeFileSync(path.join(renderer, 'index.html'), '<!doctype html><title>stand-in</title>');
  const server = await startWebServer({ host, port: 0, rendererDir: renderer });
  try {
    const run = backlogRun(outside, mib);
    const lines = fs.readFileSync(runFilePaths(run.dir).metrics, 'utf8').split('\n').length - 1;
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api`, { origin: `http://127.0.0.1:${server.port}` });
    await new Promise((r) => ws.once('open', r));
    const pending = new Map<number, (m: Record<string, unknown>) => void>();
    let metricPoints = 0;
    let lastMetricsAt = 0;
    let ready: () => void;
    const authed = new Promise<void>((r) => (ready = r));
    ws.on('message', (data) => {
      const m = JSON.parse(frameText(data)) as Record<string, unknown>;
      const ev = m['event'] as { type?: string; runId?: string; points?: unknown[] } | undefined;
      if (ev?.type === 'host-ready') ready();
      if (ev?.type === 'metrics' && ev.runId === run.id) {
        metricPoints += ev.points!.length;
        lastMetricsAt = performance.now();
      }
      if (typeof m['id'] === 'number') pending.get(m['id'])?.(m);
    });
    ws.send(JSON.stringify({ token: server.token }));
    await authed;
    let id = 0;
    const call = (method: string, params?: unknown) =>
      new Promise<Record<string, unknown>>((resolve) => {
        const n = ++id;
        pending.set(n, resolve);
        ws.send(JSON.stringify({ id: n, method, params }));
      });
    const pings: number[] = [];
    // Client and server share this process's event loop: a stall also delays the pinger's own timer, so the longest
    // gap between two answers (20 ms of sleep included) is the figure; a ping's own round trip understates it.
    const gaps: number[] = [];
    let answeredAt = 0;
    let stop = false;
    const pinger = (async () => {
      while (!stop) {
        const t = performance.now();
        await call('ping');
        const now = performance.now();
        pings.push(now - t);
        if (answeredAt > 0) gaps.push(now - answeredAt);
        answeredAt = now;
        await new Promise((r) => setTimeout(r, 20));
      }
    })();
    await new Promise((r) => setTimeout(r, 300));
    const start = performance.now();
    fs.renameSync(run.dir, path.join(home, 'runs', run.id));
    await call('listRuns', {});
    for (let i = 0; i < 3000 && metricPoints < lines; i++) await new Promise((r) => setTimeout(r, 20));
    stop = true;
    await pinger;
    ws.close();
    if (metricPoints < lines) throw new Error(`only ${metricPoints} of ${lines} metrics points arrived`);
    return {
      mib,
      maxGapMs: Math.max(...gaps),
      maxPingMs: Math.max(...pings),
      medianPingMs: quantile(pings, 0.5),
      pings: pings.length,
      lastMetricsMs: lastMetricsAt - start,
    };
  } finally {
    await server.close();
    await host.close();
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(outside, { recursive: true, force: true });
    fs.rmSync(renderer, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const { values } = parseArgs({ options: { mib: { type: 'string' }, repeats: { type: 'string' } } });
  const mib = Number(values.mib ?? 77);
  const figures: CopyInFigures[] = [];
  for (let r = 0; r < Number(values.repeats ?? 3); r++) figures.push(await measureCopyIn(mib));
  const med = (k: keyof CopyInFigures) =>
    quantile(
      figures.map((f) => f[k]),
      0.5,
    ).toFixed(0);
  console.log(JSON.stringify(figures));
  console.log(
    `${mib} MiB copied in, median of ${figures.length}: longest gap between ping answers ${med('maxGapMs')} ms, ` +
      `slowest ping ${med('maxPingMs')} ms, median ping ${med('medianPingMs')} ms, last metrics event ` +
      `${med('lastMetricsMs')} ms after the copy`,
  );
}

// Run as a script, not when a test imports backlogRun.
if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) await main();
