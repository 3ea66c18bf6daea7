/**
 * The host refuses what a window or the web must not do (issue 15), with a fake launcher so nothing trains:
 * stopRun never signals a process that is not the run's writer (crafted pids, reused pids), a run whose writer is gone
 * is not shown running, paths from a request stay inside the home / resources/ / the allow-list (symlinks followed),
 * configs too big or too large for memory are refused before any work, and workers started from the app are capped.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { defaultMaxWorkers } from '../../engine/api/host/hostGuards';
import type { RunLauncher, RunProcessHandlers } from '../../engine/api/workers/runLauncher';
import { createRunFolder, readRunMeta, writeRunMeta } from '../../engine/runs/folder/runFolder';
import { currentBootId, procStartTicks } from '../../engine/runs/folder/writerProcess';

interface FakeLaunch {
  args: readonly string[];
  handlers: RunProcessHandlers;
  terminated: boolean;
}

/** Answers every launch with a `created` line (a fresh run id) a moment later; exits only when a test says so. */
function fakeLauncher(): RunLauncher & { launches: FakeLaunch[] } {
  const launches: FakeLaunch[] = [];
  return {
    launches,
    launch(args, handlers) {
      const entry: FakeLaunch = { args, handlers, terminated: false };
      launches.push(entry);
      setTimeout(() => handlers.onStdoutLine(JSON.stringify({ type: 'created', runId: `fake-${launches.length}` })), 1);
      return {
        pid: undefined,
        terminate() {
          entry.terminated = true;
        },
      };
    },
  };
}

let home: string;
let outside: string;
let host: Host;
let launcher: ReturnType<typeof fakeLauncher>;
let sleeper: ChildProcess;

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-hardening-'));
  outside = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-outside-'));
  launcher = fakeLauncher();
  host = await createHost({ home, launcher, transport: 'web', maxWorkers: 2 });
  sleeper = spawn('sleep', ['30'], { stdio: 'ignore' });
  await new Promise((r) => sleeper.once('spawn', r));
});

afterAll(async () => {
  sleeper?.kill('SIGKILL');
  await host?.close();
  fs.rmSync(home, { recursive: true, force: true });
  fs.rmSync(outside, { recursive: true, force: true });
});

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** A run whose run.json says running with `pid`, and a lock naming it (as a crash, or a crafted folder, leaves). */
function crashedRun(pid: number, lockExtra: Record<string, unknown> = {}): string {
  const { id, dir } = createRunFolder(home, {
    algorithm: 'seqgrpo',
    config: {},
    engineVersion: '0',
    seed: 1,
    tags: [],
    notes: '',
  });
  writeRunMeta(dir, { ...readRunMeta(dir), status: 'running', pid, statusAt: '2026-01-01T00:00:00.000Z' });
  fs.writeFileSync(
    path.join(dir, 'lock'),
    JSON.stringify({ pid, host: os.hostname(), since: '2026-01-01T00:00:00.000Z', ...lockExtra }),
  );
  return id;
}

describe('stopRun signals only the run’s own writer', () => {
  it('refuses crafted pids -1, 0 and 1', async () => {
    for (const pid of [-1, 0, 1]) {
      const runId = crashedRun(pid);
      await expect(callApi(host.handlers, 'stopRun', { runId })).rejects.toThrow(
        /no live process holds this run .*; resume it$/,
      );
    }
  });

  it('refuses a live unrelated process that got the pid, which stays alive', async () => {
    const reused = crashedRun(sleeper.pid!);
    await expect(callApi(host.handlers, 'stopRun', { runId: reused })).rejects.toThrow(
      /no live process holds this run \(process \d+ is another process.*\); resume it/,
    );
    const ticks = procStartTicks(sleeper.pid!);
    if (typeof ticks === 'number') {
      const otherStart = crashedRun(sleeper.pid!, {
        since: new Date().toISOString(),
        procStart: ticks + 100,
        bootId: currentBootId(),
      });
      await expect(callApi(host.handlers, 'stopRun', { runId: otherStart })).rejects.toThrow(
        /no live process holds this run/,
      );
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(alive(sleeper.pid!)).toBe(true);
    expect(sleeper.exitCode).toBe(null);
  });

  it('a run whose writer is dead is shown interrupted by listRuns and getRun, run.json untouched', async () => {
    const dead = spawnSync(process.execPath, ['-e', '']).pid;
    const runId = crashedRun(dead);
    const before = fs.readFileSync(path.join(home, 'runs', runId, 'run.json'), 'utf8');
    await expect(callApi(host.handlers, 'stopRun', { runId })).rejects.toThrow(
      /no live process holds this run \(process \d+ is no longer running\); resume it/,
    );
    const listed = (await callApi(host.handlers, 'listRuns', {})) as { runs: { id: string; status: string }[] };
    expect(listed.runs.find((r) => r.id === runId)?.status).toBe('interrupted');
    const got = (await callApi(host.handlers, 'getRun', { runId })) as { meta: { status: string } };
    expect(got.meta.status).toBe('interrupted');
    expect(fs.readFileSync(path.join(home, 'runs', runId, 'run.json'), 'utf8')).toBe(before);
  });
});

describe('paths from a request', () => {
  const fromPath = (p: string) => ({
    config: { algorithm: 'seqgrpo', model: { from: { kind: 'checkpoint', path: p } } },
  });

  it('model.from.path outside the home and resources/ is refused, naming the field, quoting no file', async () => {
    for (const p of ['/etc', '/etc/passwd', '../../../../etc']) {
      const answer = (await callApi(host.handlers, 'validateConfig', fromPath(p))) as {
        ok: boolean;
        issues: { path: string; message: string }[];
      };
      expect(answer.ok).toBe(false);
      expect(answer.issues).toEqual([
        { path: 'model.from.path', message: expect.stringMatching(/outside the folders a window may use/) },
      ]);
      expect(JSON.stringify(answer)).not.toMatch(/root:/);
    }
    await expect(callApi(host.handlers, 'startRun', fromPath('/etc'))).rejects.toThrow(
      /model\.from\.path: \/etc is outside/,
    );
    const agents = [{ id: 'alpha' }, { id: 'beta', from: { kind: 'checkpoint', path: '/etc' } }];
    const marti = (await callApi(host.handlers, 'validateConfig', {
      config: { algorithm: 'marti', marti: { configuration: 'heterogeneous', agents } },
    })) as { issues: { path: string }[] };
    expect(marti.issues).toEqual([{ path: 'marti.agents.1.from.path', message: expect.stringMatching(/outside/) }]);
    expect(launcher.launches).toHaveLength(0);
  });

  it('a symbolic link inside the home that leads out is refused; a checkpoint in the home or resources/ is not', async () => {
    fs.writeFileSync(path.join(outside, 'config.json'), '{}');
    const link = path.join(home, 'sneaky');
    fs.symlinkSync(outside, link);
    const answer = (await callApi(host.handlers, 'validateConfig', fromPath(link))) as {
      ok: boolean;
      issues: { path: string; message: string }[];
    };
    expect(answer).toMatchObject({
      ok: false,
      issues: [
        { path: 'model.from.path', message: expect.stringMatching(/leads \(through a symbolic link\) outside/) },
      ],
    });

    const inHome = path.join(home, 'base');
    fs.mkdirSync(inHome);
    expect(await callApi(host.handlers, 'validateConfig', fromPath(inHome))).toMatchObject({ ok: true });
    expect(await callApi(host.handlers, 'validateConfig', { preset: 'mars-tiny' })).toMatchObject({ ok: true }); // resources/mars/base-tiny
  });

  it('a task file or corpus outside the allowed folders is refused on its field, at start and at resume', async () => {
    const marti = (file: string) => ({ config: { algorithm: 'marti', task: { file } } });
    const mars = (folder: string, questions: string) => ({
      config: { algorithm: 'mars', task: { corpus: { folder, questions } } },
    });
    fs.writeFileSync(path.join(outside, 'questions.jsonl'), '{}\n');
    const launched = launcher.launches.length;
    expect(await callApi(host.handlers, 'validateConfig', marti('/etc/passwd'))).toMatchObject({
      ok: false,
      issues: [{ path: 'task.file', message: expect.stringMatching(/\/etc\/passwd is outside the folders/) }],
    });
    await expect(callApi(host.handlers, 'startRun', marti('/etc/passwd'))).rejects.toThrow(/task\.file: .* is outside/);
    const marsAnswer = (await callApi(
      host.handlers,
      'validateConfig',
      mars(outside, path.join(outside, 'questions.jsonl')),
    )) as { issues: { path: string }[] };
    expect(marsAnswer.issues.map((i) => i.path)).toEqual(['task.corpus.folder', 'task.corpus.questions']);
    expect(JSON.stringify(marsAnswer)).not.toContain('{}');

    // a run folder whose run.json was edited to read /etc/passwd is not resumed
    const { id, dir } = createRunFolder(home, {
      algorithm: 'marti',
      config: {},
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    const checked = (await callApi(host.handlers, 'validateConfig', { config: { algorithm: 'marti' } })) as {
      config: Record<string, unknown>;
    };
    const crafted = { ...checked.config, task: { ...(checked.config['task'] as object), file: '/etc/passwd' } };
    writeRunMeta(dir, { ...readRunMeta(dir), status: 'interrupted', config: crafted });
    await expect(callApi(host.handlers, 'resumeRun', { runId: id })).rejects.toThrow(/task\.file: .* is outside/);
    expect(launcher.launches.length).toBe(launched);

    const inHome = path.join(home, 'tasks.jsonl');
    fs.writeFileSync(inHome, '');
    const ok = (await callApi(host.handlers, 'validateConfig', marti(inHome))) as { issues?: { path: string }[] };
    expect((ok.issues ?? []).filter((i) => i.path === 'task.file')).toEqual([]);
  });

  it("a chatgrpo run's real model outside the allowed folders is refused on model.path; a name model fetch knows is not", async () => {
    const chat = (p: string) => ({ config: { algorithm: 'chatgrpo', model: { path: p } } });
    const launched = launcher.launches.length;
    expect(await callApi(host.handlers, 'validateConfig', chat('/etc/passwd'))).toMatchObject({
      ok: false,
      issues: [{ path: 'model.path', message: expect.stringMatching(/\/etc\/passwd is outside the folders/) }],
    });
    await expect(callApi(host.handlers, 'startRun', chat(outside))).rejects.toThrow(/model\.path: .* is outside/);
    expect(launcher.launches.length).toBe(launched);
    const named = (await callApi(host.handlers, 'validateConfig', chat('smollm2-135m-instruct'))) as {
      issues?: { path: string }[];
    };
    expect((named.issues ?? []).filter((i) => i.path === 'model.path')).toEqual([]);
  });

  it('MARS_LAB_ALLOW_PATHS adds folders', async () => {
    process.env.MARS_LAB_ALLOW_PATHS = outside;
    const allowing = await createHost({ home, launcher: fakeLauncher(), transport: 'web' });
    try {
      expect(await callApi(allowing.handlers, 'validateConfig', fromPath(outside))).toMatchObject({ ok: true });
    } finally {
      delete process.env.MARS_LAB_ALLOW_PATHS;
      await allowing.close();
    }
  });

  it('a checkpoint folder that is a symbolic link out of the home is not evaluated', async () => {
    const { id, dir } = createRunFolder(home, {
      algorithm: 'seqgrpo',
      config: {},
      engineVersion: '0',
      seed: 1,
      tags: [],
      notes: '',
    });
    for (const f of ['config.json', 'model.safetensors', 'trainer_state.json', 'optimizer.safetensors', 'rng.json']) {
      fs.writeFileSync(path.join(outside, f), '{}');
    }
    fs.symlinkSync(outside, path.join(dir, 'checkpoints', '5'));
    const launched = launcher.launches.length;
    await expect(callApi(host.handlers, 'evaluateCheckpoint', { runId: id, step: 5 })).rejects.toThrow(
      /run .* step 5: checkpoint folder .* leads \(through a symbolic link\) outside/,
    );
    expect(launcher.launches.length).toBe(launched);
  });
});

describe('requests that would freeze the host', () => {
  it('a 1.7 MB config is refused before any work, naming the limit', async () => {
    const answer = await host.handlers.validateConfig({
      config: { algorithm: 'seqgrpo', notes: 'n'.repeat(1_700_000) },
    });
    expect(answer).toEqual({
      ok: false,
      issues: [{ path: '', message: expect.stringMatching(/larger than 256 KiB/) }],
    });
  }, 5_000);

  it('--set tags.4294967294=x is refused naming the list and its length', async () => {
    const answer = (await callApi(host.handlers, 'validateConfig', {
      preset: 'seqgrpo-copy',
      sets: ['tags.4294967294=x'],
    })) as { ok: boolean; issues: { message: string }[] };
    expect(answer.ok).toBe(false);
    expect(answer.issues[0]!.message).toMatch(
      /tags is a list of \d+ items?, so the index must be from 0 to \d+ .*not 4294967294/,
    );
  }, 5_000);

  it('a config larger than memory is refused at launch, naming the fields, and nothing is started', async () => {
    const huge = {
      algorithm: 'seqgrpo',
      model: {
        hidden_size: 8192,
        intermediate_size: 32768,
        num_hidden_layers: 64,
        num_attention_heads: 128,
        num_key_value_heads: 128,
      },
    };
    const launched = launcher.launches.length;
    await expect(callApi(host.handlers, 'startRun', { config: huge })).rejects.toThrow(
      /model: .*68\.7e9 parameters .*this machine has/,
    );
    await expect(
      callApi(host.handlers, 'startRun', { preset: 'mars-small', sets: ['model.size=medium', 'task.groupSize=1024'] }),
    ).rejects.toThrow(/task\.groupSize: .*key\/value cache/);
    expect(launcher.launches.length).toBe(launched);
  });
});

describe('workers started from the app', () => {
  it('at most maxWorkers at once (default one per core); more are refused with a message until one exits', async () => {
    expect(defaultMaxWorkers()).toBeGreaterThanOrEqual(1);
    const start = () => callApi(host.handlers, 'startRun', { preset: 'seqgrpo-copy' }) as Promise<{ runId: string }>;
    const first = launcher.launches.length;
    await start();
    await start();
    await expect(start()).rejects.toThrow(
      /cannot start a run: 2 run or evaluation processes started from the app are already working.*\(one per core: 2\); stop one or wait/,
    );
    expect(launcher.launches.length).toBe(first + 2);
    launcher.launches[first]!.handlers.onExit(0);
    await expect(start()).resolves.toMatchObject({ runId: expect.any(String) });
    for (const l of launcher.launches.slice(first)) l.handlers.onExit(0);
  });
});
