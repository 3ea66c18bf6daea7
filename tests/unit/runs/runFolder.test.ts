import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RUN_FILES, runsDir } from '../../../engine/runs/folder/home';
import { readJsonl } from '../../../engine/runs/folder/jsonl';
import {
  createRunFolder,
  listCheckpoints,
  listRuns,
  newRunId,
  readRunMeta,
  updateStatus,
  writeRunMeta,
  type NewRunMeta,
} from '../../../engine/runs/folder/runFolder';
import { acquireRunLock } from '../../../engine/runs/folder/runLock';
import { UserError } from '../../../engine/base/userError';

const META: NewRunMeta = {
  algorithm: 'marti',
  preset: 'Toy Copy',
  config: { lr: 1e-3 },
  engineVersion: '0.1.0',
  seed: 7,
  tags: ['a'],
  notes: '',
};

let home: string;
beforeAll(() => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-runs-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

function newRun(): string {
  return createRunFolder(home, META).dir;
}

describe('createRunFolder', () => {
  it('makes the layout with a sortable id and a valid run.json, leaving no staging folder', () => {
    const now = new Date(Date.UTC(2026, 10, 30, 2, 45, 12));
    const { id, dir, meta } = createRunFolder(home, META, { now });
    expect(id).toMatch(/^20261130-024512-toy-copy-[0-9a-f]{4}$/);
    expect(dir).toBe(path.join(runsDir(home), id));
    for (const f of [RUN_FILES.metrics, RUN_FILES.trajectories, RUN_FILES.events]) {
      expect(fs.statSync(path.join(dir, f)).size >= 0).toBe(true);
    }
    expect(fs.statSync(path.join(dir, RUN_FILES.checkpoints)).isDirectory()).toBe(true);
    expect(readRunMeta(dir)).toEqual(meta);
    expect(meta).toMatchObject({ id, status: 'created', createdAt: now.toISOString(), config: { lr: 1e-3 } });
    expect(readJsonl(path.join(dir, RUN_FILES.events)).records).toMatchObject([{ type: 'status', status: 'created' }]);
    expect(fs.readdirSync(runsDir(home)).filter((n) => n.startsWith('.'))).toEqual([]);
  });

  it('refuses an explicit id that exists', () => {
    const { id } = createRunFolder(home, META);
    expect(() => createRunFolder(home, META, { id })).toThrow(/already exists/);
  });

  it('makes ids from the algorithm when there is no preset', () => {
    expect(newRunId('marti', new Date(0))).toMatch(/^19700101-000000-marti-[0-9a-f]{4}$/);
  });
});

describe('readRunMeta', () => {
  it('says a missing run.json means the folder is not a run', () => {
    const dir = path.join(runsDir(home), 'not-a-run');
    fs.mkdirSync(dir, { recursive: true });
    expect(() => readRunMeta(dir)).toThrow(UserError);
    expect(() => readRunMeta(dir)).toThrow(
      `${path.join(dir, 'run.json')} is missing: this folder is not a mars-lab run (or it was deleted)`,
    );
  });

  it('names the file when run.json is not JSON', () => {
    const dir = newRun();
    fs.writeFileSync(path.join(dir, 'run.json'), '{"id": "x", "stat');
    expect(() => readRunMeta(dir)).toThrow(UserError);
    expect(() => readRunMeta(dir)).toThrow(
      new RegExp(`${path.join(dir, 'run.json').replaceAll('/', '\\/')} is not valid JSON`),
    );
  });

  it('names the missing and wrong fields', () => {
    const dir = newRun();
    const meta = JSON.parse(fs.readFileSync(path.join(dir, 'run.json'), 'utf8'));
    delete meta.algorithm;
    meta.status = 'sleeping';
    fs.writeFileSync(path.join(dir, 'run.json'), JSON.stringify(meta));
    let message = '';
    try {
      readRunMeta(dir);
    } catch (err) {
      expect(err).toBeInstanceOf(UserError);
      message = (err as Error).message;
    }
    expect(message).toContain(path.join(dir, 'run.json'));
    expect(message).toContain('"algorithm"');
    expect(message).toContain('"status"');
  });

  it('keeps fields it does not know through a read and a write', () => {
    const dir = newRun();
    const raw = JSON.parse(fs.readFileSync(path.join(dir, 'run.json'), 'utf8'));
    fs.writeFileSync(path.join(dir, 'run.json'), JSON.stringify({ ...raw, future: 1 }));
    writeRunMeta(dir, readRunMeta(dir));
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'run.json'), 'utf8')).future).toBe(1);
  });
});

describe('updateStatus', () => {
  it('changes run.json and appends a status event with the extra fields', () => {
    const dir = newRun();
    const running = updateStatus(dir, 'running', { step: 0 });
    expect(running.pid).toBe(process.pid);
    const failed = updateStatus(dir, 'failed', { message: 'boom', step: 3 });
    expect(failed.pid).toBeUndefined();
    expect(readRunMeta(dir)).toMatchObject({ status: 'failed' });
    const events = readJsonl<Record<string, unknown>>(path.join(dir, RUN_FILES.events)).records;
    expect(events.map((e) => e.status)).toEqual(['created', 'running', 'failed']);
    expect(events[2]).toMatchObject({ type: 'status', message: 'boom', step: 3 });
    expect(typeof events[2]!.time).toBe('number');
    expect(fs.readdirSync(dir).filter((n) => n.includes('.tmp-'))).toEqual([]);
  });
});

describe('listCheckpoints', () => {
  it('lists complete step folders in ascending order, ignoring temporary, old and incomplete ones', () => {
    const dir = newRun();
    const ck = path.join(dir, RUN_FILES.checkpoints);
    const make = (name: string, files: string[]) => {
      fs.mkdirSync(path.join(ck, name));
      for (const f of files) fs.writeFileSync(path.join(ck, name, f), 'x');
    };
    const full = ['config.json', 'model.safetensors'];
    make('100', full);
    make('20', [...full, 'optimizer.safetensors']);
    make('3', full);
    make('40.tmp-123-abcd', full);
    make('30.old-123-abcd', full);
    make('50', ['config.json']);
    make('latest', full);
    fs.writeFileSync(path.join(ck, '60'), 'a file, not a folder');
    expect(listCheckpoints(dir)).toEqual([
      { step: 3, path: path.join(ck, '3') },
      { step: 20, path: path.join(ck, '20') },
      { step: 100, path: path.join(ck, '100') },
    ]);
  });
});

describe('listRuns', () => {
  it('lists runs oldest first, a damaged one with its reason, and skips folders being created', () => {
    const own = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-list-'));
    try {
      const a = createRunFolder(own, META, { now: new Date(Date.UTC(2026, 0, 2)) });
      const b = createRunFolder(own, META, { now: new Date(Date.UTC(2026, 0, 1)) });
      fs.rmSync(path.join(a.dir, 'run.json'));
      fs.mkdirSync(path.join(runsDir(own), '.20260103-000000-x-0000.tmp-1-ab'));
      const runs = listRuns(own);
      expect(runs.map((r) => r.id)).toEqual([b.id, a.id]);
      expect(runs[0]).toMatchObject({ ok: true, meta: { id: b.id } });
      expect(runs[1]).toMatchObject({ ok: false });
      expect(runs[1]!.ok === false && runs[1]!.error).toContain('is missing');
    } finally {
      fs.rmSync(own, { recursive: true, force: true });
    }
  });
});

describe('acquireRunLock', () => {
  it('writes the lock, refuses a second writer naming the pid, and releases', () => {
    const dir = newRun();
    const release = acquireRunLock(dir);
    const lock = JSON.parse(fs.readFileSync(path.join(dir, 'lock'), 'utf8'));
    expect(lock).toMatchObject({ pid: process.pid, host: os.hostname() });
    expect(() => acquireRunLock(dir)).toThrow(UserError);
    expect(() => acquireRunLock(dir)).toThrow(
      new RegExp(
        `run ${path.basename(dir)} is already being written by process ${process.pid} \\(since .*\\); stop it first, or wait for it to finish`,
      ),
    );
    release();
    expect(fs.existsSync(path.join(dir, 'lock'))).toBe(false);
    acquireRunLock(dir)();
  });

  it('refuses while another live process holds it', async () => {
    const dir = newRun();
    const child = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 30000)'], { stdio: 'ignore' });
    try {
      await new Promise((r) => child.once('spawn', r));
      fs.writeFileSync(
        path.join(dir, 'lock'),
        JSON.stringify({ pid: child.pid, host: os.hostname(), since: '2026-01-01T00:00:00.000Z' }),
      );
      expect(() => acquireRunLock(dir)).toThrow(
        `is already being written by process ${child.pid} (since 2026-01-01T00:00:00.000Z)`,
      );
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('takes over a lock whose process is gone, and notes it in events.jsonl', () => {
    const dir = newRun();
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    fs.writeFileSync(
      path.join(dir, 'lock'),
      JSON.stringify({ pid: dead, host: os.hostname(), since: '2026-01-01T00:00:00.000Z' }),
    );
    const release = acquireRunLock(dir);
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'lock'), 'utf8')).pid).toBe(process.pid);
    const events = readJsonl<Record<string, unknown>>(path.join(dir, RUN_FILES.events)).records;
    expect(events.at(-1)).toMatchObject({ type: 'warning', previousLock: { pid: dead } });
    expect(String(events.at(-1)!.message)).toContain(`process ${dead}`);
    release();
  });

  it('refuses a lock from another host, telling how to clear it', () => {
    const dir = newRun();
    fs.writeFileSync(
      path.join(dir, 'lock'),
      JSON.stringify({ pid: 1, host: 'elsewhere', since: '2026-01-01T00:00:00.000Z' }),
    );
    expect(() => acquireRunLock(dir)).toThrow(/on host elsewhere .* delete .*lock/);
  });

  it('does not remove a lock that another process took over', () => {
    const dir = newRun();
    const release = acquireRunLock(dir);
    fs.writeFileSync(path.join(dir, 'lock'), JSON.stringify({ pid: 999999, host: os.hostname(), since: 'later' }));
    release();
    expect(fs.existsSync(path.join(dir, 'lock'))).toBe(true);
  });
});
