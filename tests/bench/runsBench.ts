/**
 * `npm run bench:runs`: run-folder figures (never test assertions): metrics and trajectory lines appended per second,
 * and the watcher's append → event latency (median, p99, max) over many appends.
 *
 *   npm run bench:runs -- [--appends 20000] [--events 300] [--json out.json]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { JsonlAppender } from '../../engine/runs/jsonl';
import { createRunFolder, runFilePaths } from '../../engine/runs/runFolder';
import { watchHome, type RunEvent } from '../../engine/runs/watcher';

const { values: args } = parseArgs({
  options: { appends: { type: 'string', default: '20000' }, events: { type: 'string', default: '300' }, json: { type: 'string' } },
});
const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-runsbench-'));
const pct = (xs: number[], q: number) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;

try {
  const { dir } = createRunFolder(home, { algorithm: 'bench', config: {}, engineVersion: '0', seed: 0, tags: [], notes: '' });
  const files = runFilePaths(dir);
  const n = Number(args.appends);
  const rate = (file: string, make: (i: number) => object) => {
    const log = new JsonlAppender(file);
    const t0 = performance.now();
    for (let i = 0; i < n; i++) log.append(make(i));
    const s = (performance.now() - t0) / 1000;
    log.close();
    return { linesPerSec: n / s, bytes: fs.statSync(file).size };
  };
  const metrics = rate(files.metrics, (i) => ({ step: i + 1, time: Date.now() / 1000, reward: Math.sin(i), loss: Math.cos(i), gradNorm: 1 + i / n }));
  const text = 'lorem ipsum '.repeat(40);
  const trajectories = rate(files.trajectories, (i) => ({ step: i + 1, question: text, turns: [{ text, info: text }], reward: i % 2 }));

  // latency: a second run folder, appended one line at a time while a watcher tails it
  const live = createRunFolder(home, { algorithm: 'bench', config: {}, engineVersion: '0', seed: 0, tags: [], notes: '' });
  const pending = new Map<number, number>();
  const latencies: number[] = [];
  const watcher = await watchHome(home, (e: RunEvent) => {
    if (e.type !== 'metrics' || e.runId !== live.id) return;
    const now = performance.now();
    for (const p of e.points) {
      const t = pending.get(p.step);
      if (t !== undefined) latencies.push(now - t);
    }
  });
  const log = new JsonlAppender(runFilePaths(live.dir).metrics);
  const m = Number(args.events);
  for (let i = 1; i <= m; i++) {
    pending.set(i, performance.now());
    log.append({ step: i, time: Date.now() / 1000, reward: i });
    // spacing like training steps of a few ms to ~50 ms, with bursts
    await new Promise((r) => setTimeout(r, i % 10 === 0 ? 0 : 5 + (i % 7) * 7));
  }
  for (let i = 0; i < 100 && latencies.length < m; i++) await new Promise((r) => setTimeout(r, 20));
  log.close();
  await watcher.close();
  const result = {
    machine: { cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.versions.node },
    metricsLinesPerSec: metrics.linesPerSec,
    trajectoryLinesPerSec: trajectories.linesPerSec,
    trajectoryLineBytes: trajectories.bytes / n,
    watcher: { events: latencies.length, of: m, medianMs: pct(latencies, 0.5), p99Ms: pct(latencies, 0.99), maxMs: Math.max(...latencies) },
  };
  console.log(`run-folder bench on ${result.machine.cpu} ×${result.machine.cores}, Node ${result.machine.node}`);
  console.log(`appends: metrics ${Math.round(result.metricsLinesPerSec).toLocaleString('en-US')} lines/s; trajectories ${Math.round(result.trajectoryLinesPerSec).toLocaleString('en-US')} lines/s (${Math.round(result.trajectoryLineBytes)} B/line); ${n} lines each`);
  console.log(`watcher append → event: median ${result.watcher.medianMs.toFixed(1)} ms, p99 ${result.watcher.p99Ms.toFixed(1)} ms, max ${result.watcher.maxMs.toFixed(1)} ms (${latencies.length}/${m} appends)`);
  if (args.json) fs.writeFileSync(args.json, JSON.stringify(result, null, 2));
} finally {
  fs.rmSync(home, { recursive: true, force: true });
}
process.exit(0);
