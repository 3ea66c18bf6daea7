/**
 * stopRun signals only a process proven to be the run's writer (issue 34, finding 3): a start time and a boot id can be
 * copied from /proc/<pid>/stat of any process, so a crafted folder naming a live victim (a `sleep 300` this test
 * starts) with its real start time and boot id, or with no start time and a future statusAt, or with a lock that is a
 * link to a file the victim holds open (/dev/null), must be refused and the victim left alive. The proof the host asks
 * for is the writer holding this run folder's lock file open (engine/runs/folder/writerProcess.ts holdsRunLock), which a
 * real `mars-lab train` does: that one is still stopped from the app, checkpointing first.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { createRunFolder, readRunMeta, writeRunMeta } from '../../engine/runs/folder/runFolder';
import { currentBootId, procStartTicks } from '../../engine/runs/folder/writerProcess';
import { spawnCli } from '../helpers/cli';
import { quickConfig } from '../helpers/runFixtures';

const idle: RunLauncher = {
  launch() {
    throw new Error('nothing is launched in these tests');
  },
};

let home: string;
let host: Host;
let victim: ChildProcess;

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A run folder that says it is running in `pid`, with run.json's statusAt and a lock as a crafted folder has them. */
function craftedRun(pid: number, lock: Record<string, unknown> | 'link-to-dev-null', statusAt: string): string {
  const { id, dir } = createRunFolder(home, {
    algorithm: 'seqgrpo',
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  writeRunMeta(dir, { ...readRunMeta(dir), status: 'running', pid, statusAt });
  if (lock === 'link-to-dev-null') fs.symlinkSync('/dev/null', path.join(dir, 'lock'));
  else fs.writeFileSync(path.join(dir, 'lock'), JSON.stringify({ pid, host: os.hostname(), ...lock }));
  return id;
}

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-stop-proof-'));
  // stdio 'ignore': the victim holds /dev/null open, which a lock linked there must not pass for
  victim = spawn('sleep', ['300'], { stdio: 'ignore' });
  await new Promise((r) => victim.once('spawn', r));
  host = await createHost({ home, launcher: idle, transport: 'web' });
});

afterAll(async () => {
  victim?.kill('SIGKILL');
  await host?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
});

describe.skipIf(process.platform !== 'linux')('stopRun asks for a proof a crafted folder cannot give', () => {
  it("refuses a lock forged with the victim's real start time and boot id, and the victim lives", async () => {
    const pid = victim.pid!;
    const ticks = procStartTicks(pid);
    expect(typeof ticks).toBe('number');
    const since = new Date().toISOString();
    const stamp = { since, procStart: ticks, bootId: currentBootId() };
    const future = new Date(Date.now() + 3_600_000).toISOString();
    const runs = [
      craftedRun(pid, stamp, since), // the victim's own start and boot: the old check passed it
      craftedRun(pid, { since: future }, future), // no start time, a future moment: the old check passed it too
      craftedRun(pid, 'link-to-dev-null', future), // a lock that is a file the victim holds open
    ];
    for (const runId of runs) {
      let message = '';
      try {
        await callApi(host.handlers, 'stopRun', { runId });
      } catch (err) {
        message = (err as Error).message;
      }
      expect(message, runId).toMatch(new RegExp(`^run ${runId}: cannot tell whether its writer is alive here \\(`));
      expect(message, runId).toMatch(/not proven to be the run's writer.*; stop it where it runs$/);
      expect(message.split('\n')).toHaveLength(1);
    }
    await new Promise((r) => setTimeout(r, 100));
    expect(alive(pid)).toBe(true);
    expect(victim.exitCode).toBe(null);
    expect(victim.signalCode).toBe(null);
  });

  it('still stops a real writer started from a terminal: it checkpoints and says stopped', async () => {
    const cfg = path.join(home, 'c.json');
    fs.writeFileSync(cfg, JSON.stringify(quickConfig({ steps: 5000, checkpointEvery: 1000 })));
    const lines: { type: string; runId?: string; dir?: string; status?: string }[] = [];
    const { child, exited } = spawnCli(['train', '--config', cfg, '--home', home, '--json'], {}, (l) => {
      lines.push(JSON.parse(l) as (typeof lines)[number]);
    });
    try {
      for (let i = 0; i < 1200 && !lines.some((l) => l.type === 'progress'); i++) {
        await new Promise((r) => setTimeout(r, 50));
      }
      const runId = lines.find((l) => l.type === 'progress')?.runId;
      expect(runId).toBeDefined();
      const dir = path.join(home, 'runs', runId!);
      const answer = (await callApi(host.handlers, 'stopRun', { runId: runId! })) as {
        stopping: boolean;
        message: string;
      };
      expect(answer).toEqual({ stopping: true, message: `asked process ${child.pid} to stop after its current step` });
      expect(await exited).toBe(0);
      expect(lines.at(-1)).toMatchObject({ type: 'done', status: 'stopped' });
      expect(readRunMeta(dir).status).toBe('stopped');
    } finally {
      child.kill('SIGKILL');
    }
  }, 120_000);
});
