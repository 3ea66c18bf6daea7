/**
 * What lies in a home is untrusted (issue 34): a crafted run folder neither ends `serve` nor freezes it nor makes it
 * read outside the home. Homes built by the tests: records nested 6,000 deep (run.json's config, live.json,
 * trajectories.jsonl and events.jsonl lines), lines past the answer bounds, FIFOs (each with a "rescuer" process that
 * would open its other end a few seconds later: a reader that blocked in open() is let go by it, so the old code's
 * hang shows up as the rescuer having had to open the FIFO, never as a frozen test), and symbolic links out of the
 * home. Everything goes through a real web server and socket, as a browser's page would.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHost, type Host } from '../../engine/api/host/host';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { frameText, startWebServer, type WebServer } from '../../engine/api/web/webServer';
import { createRunFolder, readRunMeta } from '../../engine/runs/folder/runFolder';

const idle: RunLauncher = {
  launch() {
    throw new Error('nothing is launched in these tests');
  },
};

const DEPTH = 6000;
const deep = (marker = 'SECRET-IN-FILE'): string => `${'['.repeat(DEPTH)}"${marker}"${']'.repeat(DEPTH)}`;

let home: string;
let outside: string;
let renderer: string;
let host: Host;
let server: WebServer;
const children: ChildProcess[] = [];

function newRun(label: string): { id: string; dir: string } {
  const { id, dir } = createRunFolder(home, {
    algorithm: 'seqgrpo',
    preset: label,
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  return { id, dir };
}

/** run.json's text with `config` replaced by JSON nested DEPTH levels deep (JSON.stringify cannot write it). */
function deepRunJson(dir: string, extra: Record<string, unknown> = {}): string {
  const { config, ...rest } = readRunMeta(dir);
  void config;
  return JSON.stringify({ ...rest, ...extra }).replace(/}$/, `,"config":${deep()}}`);
}

/**
 * A FIFO at `file` and a process that opens its writing end after a few seconds: a reader blocked in open() is let
 * go then. `rescued()` says whether the rescuer got to open it (only a reader blocked in open() lets it through at
 * once; a reader that refused the FIFO has long closed it, and the rescuer waits until it is killed).
 */
function fifoWithRescuer(file: string): { rescued: () => boolean } {
  fs.rmSync(file, { force: true });
  expect(spawnSync('mkfifo', [file]).status).toBe(0);
  const rescuer = spawn('sh', ['-c', 'sleep 3; exec 3>"$0"; echo opened', file], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  children.push(rescuer);
  let out = '';
  rescuer.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  return { rescued: () => out.includes('opened') };
}

interface Client {
  socket: WebSocket;
  events: Record<string, unknown>[];
  call(method: string, params?: unknown): Promise<{ ok: boolean; result?: unknown; error?: { message: string } }>;
}

async function connect(to: WebServer): Promise<Client> {
  const socket = new WebSocket(`ws://127.0.0.1:${to.port}/api`, { origin: `http://127.0.0.1:${to.port}` });
  const events: Record<string, unknown>[] = [];
  const waiting = new Map<number, (m: never) => void>();
  socket.on('message', (data) => {
    const m = JSON.parse(frameText(data)) as { id?: number; event?: Record<string, unknown> };
    if (m.event) events.push(m.event);
    else if (typeof m.id === 'number') waiting.get(m.id)?.(m as never);
  });
  await new Promise((r) => socket.once('open', r));
  socket.send(JSON.stringify({ token: to.token }));
  await until(() => events.some((e) => e['type'] === 'host-ready'));
  let next = 1;
  return {
    socket,
    events,
    call(method, params) {
      const id = next++;
      return new Promise((resolve) => {
        waiting.set(id, resolve);
        socket.send(JSON.stringify({ id, method, params }));
      });
    },
  };
}

async function until(cond: () => boolean, tries = 200): Promise<void> {
  for (let i = 0; i < tries && !cond(); i++) await new Promise((r) => setTimeout(r, 50));
  expect(cond()).toBe(true);
}

let client: Client;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-home-hardening-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-home-outside-'));
  renderer = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-renderer-'));
  fs.writeFileSync(path.join(renderer, 'index.html'), '<!doctype html><title>stand-in</title>');
  host = await createHost({ home, launcher: idle, transport: 'web' });
  server = await startWebServer({ host, port: 0, rendererDir: renderer });
  client = await connect(server);
});

afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  client?.socket.close();
  await server?.close();
  await host?.close();
  for (const d of [home, outside, renderer]) if (d) fs.rmSync(d, { recursive: true, force: true });
});

describe('records nested thousands deep', () => {
  it('a run.json config 6,000 deep: getRun is refused in one line quoting nothing, listRuns and ping still answer', async () => {
    const { id, dir } = newRun('deep-config');
    fs.writeFileSync(path.join(dir, 'run.json'), deepRunJson(dir));
    const got = await client.call('getRun', { runId: id });
    expect(got.ok).toBe(false);
    expect(got.error!.message).toMatch(/nested more than 64 levels deep/);
    expect(got.error!.message).not.toContain('SECRET-IN-FILE');
    expect((await client.call('getTrajectories', { runId: id })).ok).toBe(false);
    expect((await client.call('listRuns')).ok).toBe(true);
    expect(await client.call('ping')).toMatchObject({ ok: true });
  });

  it('when such a run.json changes status on disk, the watcher warns (quoting nothing) and the server keeps serving', async () => {
    const { id, dir } = newRun('deep-status');
    await until(() => client.events.some((e) => e['type'] === 'runCreated' && e['runId'] === id));
    const tmp = path.join(dir, 'run.json.tmp-test');
    fs.writeFileSync(tmp, deepRunJson(dir, { status: 'finished', statusAt: new Date().toISOString() }));
    fs.renameSync(tmp, path.join(dir, 'run.json'));
    await until(() => client.events.some((e) => e['type'] === 'warning' && e['runId'] === id));
    // past the watcher's follow-up read (settleMs), which compared the run's descriptions as JSON
    await new Promise((r) => setTimeout(r, 300));
    const warnings = client.events.filter((e) => e['type'] === 'warning' && e['runId'] === id);
    for (const w of warnings) expect(String(w['message'])).not.toContain('SECRET-IN-FILE');
    expect(await client.call('ping')).toMatchObject({ ok: true });
  });

  it('live.json with one record 6,000 deep beside 600 valid ones: the 600 arrive', async () => {
    const { id, dir } = newRun('deep-live');
    const valid = Array.from({ length: 600 }, (_, i) => JSON.stringify({ kind: 'x', step: 3, i }));
    fs.writeFileSync(
      path.join(dir, 'live.json'),
      `{"version":1,"step":3,"time":1,"records":[${valid.slice(0, 300).join(',')},${deep()},${valid.slice(300).join(',')}]}`,
    );
    const got = await client.call('getLiveTrajectories', { runId: id });
    expect(got.ok).toBe(true);
    const result = got.result as { step: number; records: { i: number }[] };
    expect(result.step).toBe(3);
    expect(result.records.map((r) => r.i)).toEqual(valid.map((_, i) => i));
  });

  it('a trajectories.jsonl line 6,000 deep is answered as unreadable, the lines beside it whole', async () => {
    const { id, dir } = newRun('deep-trajectories');
    const lines = [
      JSON.stringify({ step: 1, kind: 'seqgrpo.group', n: 0 }),
      `{"step":1,"kind":"seqgrpo.group","x":${deep()}}`,
      JSON.stringify({ step: 1, kind: 'seqgrpo.group', n: 2 }),
    ];
    fs.writeFileSync(path.join(dir, 'trajectories.jsonl'), lines.join('\n') + '\n');
    const got = await client.call('getTrajectories', { runId: id, offset: 0, limit: 10 });
    expect(got.ok).toBe(true);
    const records = (got.result as { records: Record<string, unknown>[] }).records;
    expect(records).toHaveLength(3);
    expect(records[0]).toMatchObject({ n: 0 });
    expect(records[1]).toEqual({ unreadable: true, line: 2 });
    expect(records[2]).toMatchObject({ n: 2 });
  });

  it('an events.jsonl line 6,000 deep is skipped; getRun answers with the other events', async () => {
    const { id, dir } = newRun('deep-events');
    fs.appendFileSync(path.join(dir, 'events.jsonl'), `{"type":"x","deep":${deep()}}\n{"type":"after"}\n`);
    const got = await client.call('getRun', { runId: id });
    expect(got.ok).toBe(true);
    const events = (got.result as { events: { type: string }[] }).events;
    expect(events.map((e) => e.type)).toEqual(['status', 'after']);
  });

  it('a live append of 600 valid trajectory lines and one 6,000 deep: the 600 reach the window, the bad one is a warning quoting nothing', async () => {
    const { id, dir } = newRun('deep-append');
    await until(() => client.events.some((e) => e['type'] === 'runCreated' && e['runId'] === id));
    const lines = Array.from({ length: 600 }, (_, i) => JSON.stringify({ step: 1, kind: 'k', i }));
    lines.splice(300, 0, `{"step":1,"kind":"k","x":${deep()}}`);
    fs.appendFileSync(path.join(dir, 'trajectories.jsonl'), lines.join('\n') + '\n');
    const received = (): number =>
      client.events
        .filter((e) => e['type'] === 'trajectories' && e['runId'] === id)
        .reduce((n, e) => n + (e['records'] as unknown[]).length, 0);
    await until(() => received() >= 600);
    expect(received()).toBe(600);
    await until(() => client.events.some((e) => e['type'] === 'warning' && e['runId'] === id));
    const warning = client.events.find((e) => e['type'] === 'warning' && e['runId'] === id)!;
    expect(String(warning['message'])).toMatch(/line 301 is nested more than 64 levels deep/);
    expect(String(warning['message'])).not.toContain('SECRET-IN-FILE');
  });

  it('a line that is not JSON is a warning that quotes none of its bytes', async () => {
    const { id, dir } = newRun('not-json');
    await until(() => client.events.some((e) => e['type'] === 'runCreated' && e['runId'] === id));
    fs.appendFileSync(path.join(dir, 'events.jsonl'), 'root:x:0:0:SECRET-IN-FILE:/root:/bin/bash\n');
    await until(() => client.events.some((e) => e['type'] === 'warning' && e['runId'] === id));
    const warning = client.events.find((e) => e['type'] === 'warning' && e['runId'] === id)!;
    expect(String(warning['message'])).toMatch(/is not valid JSON \(an unexpected character\)|is not valid JSON \(at /);
    expect(String(warning['message'])).not.toMatch(/root|SECRET/);
  });
});

describe('answers have a byte bound and say where to continue', () => {
  it('getTrajectories over 40 MiB of lines answers at most 16 MiB, truncated, and the rest from where it stopped', async () => {
    const { id, dir } = newRun('big-trajectories');
    const pad = 'x'.repeat(1 << 20);
    const lines = Array.from({ length: 40 }, (_, i) => JSON.stringify({ step: 1, kind: 'k', i, pad }));
    fs.writeFileSync(path.join(dir, 'trajectories.jsonl'), lines.join('\n') + '\n');
    const seen: number[] = [];
    let offset = 0;
    for (let page = 0; page < 10 && offset < 40; page++) {
      const got = await client.call('getTrajectories', { runId: id, offset, limit: 40 });
      expect(got.ok).toBe(true);
      const r = got.result as { records: { i: number }[]; truncated?: boolean; offset: number };
      expect(r.records.length).toBeLessThanOrEqual(16);
      expect(r.records.length).toBeGreaterThan(0);
      if (offset + r.records.length < 40) expect(r.truncated).toBe(true);
      seen.push(...r.records.map((x) => x.i));
      offset = r.offset + r.records.length;
    }
    expect(seen).toEqual(lines.map((_, i) => i));
  });

  it('getRun sends at most 4 MiB of events, and eventsFrom / eventsBefore page through the rest', async () => {
    const { id, dir } = newRun('big-events');
    const pad = 'e'.repeat(4000);
    const text = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ type: 'note', i, pad })).join('\n') + '\n';
    fs.appendFileSync(path.join(dir, 'events.jsonl'), text);
    const got = await client.call('getRun', { runId: id, eventsLimit: 5000 });
    expect(got.ok).toBe(true);
    const r = got.result as { events: { i?: number }[]; eventsTotal: number; eventsFrom: number };
    expect(r.eventsTotal).toBe(3001);
    expect(JSON.stringify(r.events).length).toBeLessThanOrEqual(4 << 20);
    expect(r.events.at(-1)!.i).toBe(2999);
    expect(r.eventsFrom).toBe(r.eventsTotal - r.events.length);
    const before = await client.call('getRun', { runId: id, eventsLimit: 5000, eventsBefore: r.eventsFrom });
    const older = (before.result as { events: { i?: number }[] }).events;
    expect(older.at(-1)!.i).toBe(r.events[0]!.i! - 1);
  });
});

describe('an answer that cannot be sent', () => {
  it('is answered as an error on the same socket, and the server keeps serving (no unhandled rejection)', async () => {
    // A host whose ping answers a value JSON.stringify cannot write: whatever a handler returns, send must not throw.
    let value: unknown = 'leaf';
    for (let i = 0; i < 20_000; i++) value = [value];
    const fake: Host = {
      home,
      handlers: { ...host.handlers, ping: async () => value as never },
      subscribe: () => () => {},
      close: async () => {},
    };
    const other = await startWebServer({ host: fake, port: 0, rendererDir: renderer });
    try {
      const c = await connect(other);
      const got = await c.call('ping');
      expect(got.ok).toBe(false);
      expect(got.error!.message).toMatch(/too large or too deeply nested to send/);
      expect((await c.call('listRuns')).ok).toBe(true);
      c.socket.close();
    } finally {
      await other.close();
    }
  });
});

describe('FIFOs and other files that are not regular files', () => {
  it('events.jsonl, trajectories.jsonl, metrics.jsonl, lock, live.json and labels.json as FIFOs: getRun, getLiveTrajectories and listRuns answer without opening them', async () => {
    const { id, dir } = newRun('fifos');
    const rescuers = ['events.jsonl', 'trajectories.jsonl', 'lock', 'live.json', 'labels.json'].map((f) =>
      fifoWithRescuer(path.join(dir, f)),
    );
    const got = await client.call('getRun', { runId: id });
    expect(got.ok).toBe(true);
    expect((got.result as { events: unknown[] }).events).toEqual([]);
    expect(await client.call('getLiveTrajectories', { runId: id })).toMatchObject({ ok: true, result: { step: null } });
    expect((await client.call('listRuns')).ok).toBe(true);
    const traj = await client.call('getTrajectories', { runId: id });
    expect(traj.ok).toBe(false);
    expect(traj.error!.message).toMatch(/is a FIFO, not a regular file/);
    // None of the readers blocked in open() until its rescuer came.
    expect(rescuers.map((r) => r.rescued())).toEqual(rescuers.map(() => false));
  });

  it('a FIFO metrics.jsonl does not block the run index (listRuns)', async () => {
    const { dir } = newRun('fifo-metrics');
    const rescuer = fifoWithRescuer(path.join(dir, 'metrics.jsonl'));
    expect((await client.call('listRuns')).ok).toBe(true);
    expect(rescuer.rescued()).toBe(false);
  });

  it('a home with a FIFO events.jsonl at start: the host starts (the watcher’s start-up tail refuses it)', async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-home-fifo-'));
    try {
      const { dir } = createRunFolder(other, {
        algorithm: 'seqgrpo',
        config: {},
        engineVersion: '0',
        seed: 1,
        tags: [],
        notes: '',
      });
      const rescuer = fifoWithRescuer(path.join(dir, 'events.jsonl'));
      const started = await createHost({ home: other, launcher: idle, transport: 'web' });
      await started.close();
      expect(rescuer.rescued()).toBe(false);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});

describe('symbolic links that leave the home', () => {
  it('a labels.json linked to a file outside is not read into the run’s tags', async () => {
    const { id, dir } = newRun('linked-labels');
    const target = path.join(outside, 'labels.json');
    fs.writeFileSync(target, JSON.stringify({ tags: ['from-outside'], notes: 'outside' }));
    fs.symlinkSync(target, path.join(dir, 'labels.json'));
    const got = await client.call('getRun', { runId: id });
    expect((got.result as { meta: { tags: string[] } }).meta.tags).not.toContain('from-outside');
  });

  it('events.jsonl linked to a file outside is not read', async () => {
    const { id, dir } = newRun('linked-events');
    const target = path.join(outside, 'events.jsonl');
    fs.writeFileSync(target, JSON.stringify({ type: 'outside-secret' }) + '\n');
    fs.rmSync(path.join(dir, 'events.jsonl'));
    fs.symlinkSync(target, path.join(dir, 'events.jsonl'));
    const got = await client.call('getRun', { runId: id });
    expect(got.ok).toBe(true);
    expect(JSON.stringify(got.result)).not.toContain('outside-secret');
  });

  it('a run folder linked to a folder outside the home is neither read nor written (setRunLabels)', async () => {
    const other = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-home-other-'));
    try {
      const { dir } = createRunFolder(other, {
        algorithm: 'seqgrpo',
        config: {},
        engineVersion: '0',
        seed: 1,
        tags: ['outside-run'],
        notes: '',
      });
      fs.symlinkSync(dir, path.join(home, 'runs', 'linked-run'));
      const got = await client.call('getRun', { runId: 'linked-run' });
      expect(got.ok).toBe(false);
      expect(got.error!.message).toMatch(/symbolic link that leads outside/);
      const set = await client.call('setRunLabels', { runId: 'linked-run', tags: ['written'] });
      expect(set.ok).toBe(false);
      expect(fs.existsSync(path.join(dir, 'labels.json'))).toBe(false);
    } finally {
      fs.rmSync(other, { recursive: true, force: true });
    }
  });
});
