/**
 * A run copied into a served home with a large backlog does not stall the other requests (issue 34, Low: a run with
 * 77 MiB of logs held every client's ping for 4.7 s). Behaviour, not time: the backlog is read a slice at a time with
 * the event loop turning in between, so a ping sent when the backlog's first metrics event arrives is answered before
 * its last one; and a consumer that cannot take more (a socket with megabytes still to send) holds the reading back.
 * The figures (the longest gap between ping answers) are `npm run bench:copy-in` (tests/bench/copyInBench.ts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { frameText, startWebServer, type WebServer } from '../../engine/api/web/webServer';
import { runFilePaths } from '../../engine/runs/folder/runFolder';
import { TAIL_SLICE_BYTES } from '../../engine/runs/watch/logTail';
import { watchHome, type RunEvent } from '../../engine/runs/watch/watcher';
import { backlogRun } from '../bench/copyInBench';

let home: string;
let outside: string;
let renderer: string;
let host: Host;
let server: WebServer;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-copyin-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-copyin-src-'));
  renderer = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-copyin-page-'));
  fs.writeFileSync(path.join(renderer, 'index.html'), '<!doctype html><title>stand-in</title>');
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  server = await startWebServer({ host, port: 0, rendererDir: renderer });
});

afterAll(async () => {
  await server?.close();
  await host?.close();
  for (const d of [home, outside, renderer]) fs.rmSync(d, { recursive: true, force: true });
});

const metricLines = (dir: string): number => fs.readFileSync(runFilePaths(dir).metrics, 'utf8').split('\n').length - 1;

describe('a copied-in backlog', () => {
  it('is sent a slice at a time: a ping sent at its first metrics event is answered before its last', async () => {
    const run = backlogRun(outside, 36); // 24 MiB of metrics: a dozen slices
    const lines = metricLines(run.dir);
    const ws = new WebSocket(`ws://127.0.0.1:${server.port}/api`, { origin: `http://127.0.0.1:${server.port}` });
    await new Promise((r) => ws.once('open', r));
    const order: string[] = [];
    let points = 0;
    let pinged = false;
    const done = new Promise<void>((resolve) => {
      ws.on('message', (data) => {
        const m = JSON.parse(frameText(data)) as { id?: number; event?: RunEvent | { type: string } };
        if (m.event?.type === 'host-ready') return;
        if (m.id === 1) order.push('pong');
        const ev = m.event as RunEvent | undefined;
        if (ev?.type === 'metrics' && ev.runId === run.id) {
          points += ev.points.length;
          order.push('metrics');
          if (!pinged) {
            pinged = true;
            ws.send(JSON.stringify({ id: 1, method: 'ping' }));
          }
          if (points >= lines) resolve();
        }
      });
    });
    ws.send(JSON.stringify({ token: server.token }));
    await new Promise((r) => setTimeout(r, 200));
    fs.renameSync(run.dir, path.join(home, 'runs', run.id));
    await done;
    ws.close();
    expect(points).toBe(lines);
    // On the previous code the whole log was read and sent in one go: the answer came after every metrics event.
    expect(order.indexOf('pong')).toBeGreaterThan(0);
    expect(order.indexOf('pong')).toBeLessThan(order.lastIndexOf('metrics'));
  }, 120_000);

  it('is read no faster than its consumers take it: nothing past the first slices while they cannot, all after', async () => {
    const watched = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-copyin-paced-'));
    let open = false;
    const events: RunEvent[] = [];
    const watcher = await watchHome(watched, (e) => events.push(e), { canTake: () => open });
    try {
      const run = backlogRun(outside, 12);
      const lines = metricLines(run.dir);
      const bytes = fs.statSync(runFilePaths(run.dir).metrics).size;
      expect(bytes).toBeGreaterThan(3 * TAIL_SLICE_BYTES);
      fs.renameSync(run.dir, path.join(watched, 'runs', run.id));
      const count = () =>
        events.reduce((n, e) => n + (e.type === 'metrics' && e.runId === run.id ? e.points.length : 0), 0);
      for (let i = 0; i < 100 && count() === 0; i++) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 500));
      const held = count();
      expect(held).toBeGreaterThan(0);
      expect(held).toBeLessThan(lines / 2); // one slice (and the follow-up check's), not the log
      open = true;
      for (let i = 0; i < 400 && count() < lines; i++) await new Promise((r) => setTimeout(r, 50));
      expect(count()).toBe(lines);
      const seen = events.flatMap((e) => (e.type === 'metrics' && e.runId === run.id ? e.points : []));
      expect(seen.map((p) => p.step)).toEqual(Array.from({ length: lines }, (_, i) => i));
    } finally {
      await watcher.close();
      fs.rmSync(watched, { recursive: true, force: true });
    }
  }, 120_000);
});
