/**
 * A run's writer is verified before the run is called live or its process is signalled (engine/runs/folder/writerProcess.ts):
 * crafted pids (-1, 0, 1, non-integers) and pids reused by unrelated processes are not the writer, and a run whose
 * writer is gone is listed `interrupted` without run.json being rewritten.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createRunFolder,
  updateStatus,
  writeRunMeta,
  readRunMeta,
  type NewRunMeta,
} from '../../../engine/runs/folder/runFolder';
import { acquireRunLock } from '../../../engine/runs/folder/runLock';
import { openRunIndex } from '../../../engine/runs/summary/runIndex';
import { checkWriter, currentBootId, procStartTicks, runWriter } from '../../../engine/runs/folder/writerProcess';

const META: NewRunMeta = { algorithm: 'seqgrpo', config: {}, engineVersion: '0', seed: 1, tags: [], notes: '' };
const hasProc = fs.existsSync('/proc/self/stat');

let home: string;
let sleeper: ChildProcess;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-writer-'));
  sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  await new Promise((r) => sleeper.once('spawn', r));
});

afterAll(() => {
  sleeper.kill('SIGKILL');
  fs.rmSync(home, { recursive: true, force: true });
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A run whose run.json says running, written by `pid`, with the given lock (or none). */
function runningRun(pid: number, lock?: Record<string, unknown>): string {
  const { dir } = createRunFolder(home, META);
  const meta = readRunMeta(dir);
  writeRunMeta(dir, { ...meta, status: 'running', pid, statusAt: '2026-01-01T00:00:00.000Z' });
  if (lock) fs.writeFileSync(path.join(dir, 'lock'), JSON.stringify(lock));
  return dir;
}

describe('checkWriter', () => {
  it('refuses pids that would signal a group, every process, or init, and non-integers', () => {
    for (const pid of [-1, 0, 1, 2.5, '123', null, 2 ** 40]) {
      expect(checkWriter({ pid, host: os.hostname(), since: new Date().toISOString() }).state).toBe('gone');
    }
  });

  it('a live process that started after the writer took the run is not the writer (pid reused)', () => {
    const claim = { pid: sleeper.pid!, host: os.hostname(), since: '2026-01-01T00:00:00.000Z' };
    expect(checkWriter(claim)).toMatchObject({ state: 'gone', reason: expect.stringContaining('another process') });
    expect(alive(sleeper.pid!)).toBe(true);
  });

  it.skipIf(!hasProc)(
    'a lock naming the pid with another start time is another process; the exact start is the writer',
    () => {
      const ticks = procStartTicks(sleeper.pid!) as number;
      const bootId = currentBootId()!;
      expect(
        checkWriter({
          pid: sleeper.pid,
          host: os.hostname(),
          since: new Date().toISOString(),
          procStart: ticks + 7,
          bootId,
        }).state,
      ).toBe('gone');
      expect(
        checkWriter({
          pid: sleeper.pid,
          host: os.hostname(),
          since: '2026-01-01T00:00:00.000Z',
          procStart: ticks,
          bootId,
        }),
      ).toEqual({ state: 'alive', pid: sleeper.pid });
    },
  );

  it('a dead pid is gone; this process, holding a lock it took, is alive', () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    expect(checkWriter({ pid: dead, host: os.hostname(), since: new Date().toISOString() }).state).toBe('gone');
    const { dir } = createRunFolder(home, META);
    const release = acquireRunLock(dir);
    try {
      const meta = updateStatus(dir, 'running');
      expect(runWriter(dir, meta)).toEqual({ state: 'alive', pid: process.pid });
    } finally {
      release();
    }
  });
});

describe('listing a run whose writer is gone', () => {
  it('shows interrupted (not running forever), without rewriting run.json', () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const deadRun = runningRun(dead, { pid: dead, host: os.hostname(), since: '2026-01-01T00:00:00.000Z' });
    const reused = runningRun(sleeper.pid!, {
      pid: sleeper.pid,
      host: os.hostname(),
      since: '2026-01-01T00:00:00.000Z',
    });
    const crafted = runningRun(0, { pid: 0, host: os.hostname(), since: '2026-01-01T00:00:00.000Z' });
    const before = fs.readFileSync(path.join(deadRun, 'run.json'), 'utf8');
    const { dir: live } = createRunFolder(home, META);
    const release = acquireRunLock(live);
    try {
      updateStatus(live, 'running');
      const byId = new Map(
        openRunIndex(home)
          .list()
          .map((s) => [s.id, s.status]),
      );
      expect(byId.get(path.basename(deadRun))).toBe('interrupted');
      expect(byId.get(path.basename(reused))).toBe('interrupted');
      expect(byId.get(path.basename(crafted))).toBe('interrupted');
      expect(byId.get(path.basename(live))).toBe('running');
    } finally {
      release();
    }
    expect(fs.readFileSync(path.join(deadRun, 'run.json'), 'utf8')).toBe(before);
  });
});
