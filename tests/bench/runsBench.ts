/**
 * `npm run bench:runs`: run-folder figures (never test assertions): metrics and trajectory lines appended per second,
 * and the watcher's append → event latency (median, p99, max) over many appends.
 *
 *   npm run bench:runs -- [--appends 20000] [--events 300] [--json out.json]
 *
 * `npm run bench` runs the same measurement as its run-folder part.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { JsonlAppender } from '../../engine/runs/folder/jsonl';
import { createRunFolder, runFilePaths } from '../../engine/runs/folder/runFolder';
import { watchHome, type RunEvent } from '../../engine/runs/watch/watcher';
import { quantile } from './stats';

export interface RunFolderBench {
  metricsLinesPerSec: number;
  trajectoryLinesPerSec: number;
  trajectoryLineBytes: number;
  watcher: { events: number; of: number; medianMs: number; p99Ms: number; maxMs: number };
}

/** Appends `appends` lines to each file of a fresh run folder, then times `events` single appends through the watcher. */
export async function benchRunFolders(appends = 20000, events = 300): Promise<RunFolderBench> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-runsbench-'));
  try {
    const { dir } = createRunFolder(home, {
      algorithm: 'bench',
      config: {},
      engineVersion: '0',
      seed: 0,
      tags: [],
      notes: '',
    });
    const files = runFilePaths(dir);
    const n = appends;
    const rate = (file: string, make: (i: number) => object) => {
      const log = new JsonlAppender(file);
      const t0 = performance.now();
      for (let i = 0; i < n; i++) log.append(make(i));
      const s = (performance.now() - t0) / 1000;
      log.close();
      return { linesPerSec: n / s, bytes: fs.statSync(file).size };
    };
    const metrics = rate(files.metrics, (i) => ({
      step: i + 1,
      time: Date.now() / 1000,
      reward: Math.sin(i),
      loss: Math.cos(i),
      gradNorm: 1 + i / n,
    }));
    const text = 'lorem ipsum '.repeat(40);
    const trajectories = rate(files.trajectories, (i) => ({
      step: i + 1,
      question: text,
      turns: [{ text, info: text }],
      reward: i % 2,
    }));

    // latency: a second run folder, appended one line at a time while a watcher tails it
    const live = createRunFolder(home, {
      algorithm: 'bench',
      config: {},
      engineVersion: '0',
      seed: 0,
      tags: [],
      notes: '',
    });
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
    const m = events;
    for (let i = 1; i <= m; i++) {
      pending.set(i, performance.now());
      log.append({ step: i, time: Date.now() / 1000, reward: i });
      // spacing like training steps of a few ms to ~50 ms, with bursts
      await new Promise((r) => setTimeout(r, i % 10 === 0 ? 0 : 5 + (i % 7) * 7));
    }
    for (let i = 0; i < 100 && latencies.length < m; i++) await new Promise((r) => setTimeout(r, 20));
    log.close();
    await watcher.close();
    return {
      metricsLinesPerSec: metrics.linesPerSec,
      trajectoryLinesPerSec: trajectories.linesPerSec,
      trajectoryLineBytes: trajectories.bytes / n,
      watcher: {
        events: latencies.length,
        of: m,
        medianMs: quantile(latencies, 0.5),
        p99Ms: quantile(latencies, 0.99),
        maxMs: Math.max(...latencies),
      },
    };
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}

export function describeRunFolderBench(r: RunFolderBench): string[] {
  return [
    `appends: metrics ${Math.round(r.metricsLinesPerSec).toLocaleString('en-US')} lines/s; trajectories ${Math.round(r.trajectoryLinesPerSec).toLocaleString('en-US')} lines/s (${Math.round(r.trajectoryLineBytes)} B/line)`,
    `watcher append → event: median ${r.watcher.medianMs.toFixed(1)} ms, p99 ${r.watcher.p99Ms.toFixed(1)} ms, max ${r.watcher.maxMs.toFixed(1)} ms (${r.watcher.events}/${r.watcher.of} appends)`,
  ];
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const { values: args } = parseArgs({
    options: {
      appends: { type: 'string', default: '20000' },
      events: { type: 'string', default: '300' },
      json: { type: 'string' },
    },
  });
  const r = await benchRunFolders(Number(args.appends), Number(args.events));
  const machine = { cpu: os.cpus()[0]?.model, cores: os.cpus().length, node: process.versions.node };
  console.log(
    `run-folder bench on ${machine.cpu} ×${machine.cores}, Node ${machine.node}; ${args.appends} lines per file`,
  );
  for (const line of describeRunFolderBench(r)) console.log(line);
  if (args.json) fs.writeFileSync(args.json, JSON.stringify({ machine, ...r }, null, 2));
  process.exit(0);
}
