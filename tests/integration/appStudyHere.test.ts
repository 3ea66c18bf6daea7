/**
 * A study on "this machine" started from the app (issue 18): startStudy without a Ray cluster, through callApi as a
 * window calls it, on a host in this process. Its runs must start through the host's RunLauncher (in Electron a
 * utility process; process.execPath there is the Electron binary), within the host's worker limit, and write the
 * same study record as `mars-lab study` here, which `mars-lab study status` reads. A stop from the Runs view's study
 * rows stops the running run at a checkpoint and never starts the one waiting for a slot.
 *
 * mars-ablations is the preset with variants (seqgrpo-copy has none), cut to one step and four held-out items.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { ApiEvent, ApiStudyView } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher, type RunLauncher } from '../../engine/api/workers/runLauncher';
import { readStudy, writeStudy } from '../../engine/cluster/studies/studyRecord';
import { planStudy } from '../../engine/cluster/studies/studyPlan';
import { cli, spawnCli } from '../helpers/cli';

const FINAL = new Set(['finished', 'failed', 'stopped']);

/** nodeRunLauncher, with every launch and the most processes alive at once written down. */
function recordingLauncher(): RunLauncher & { launches: string[][]; mostAlive: () => number } {
  const inner = nodeRunLauncher();
  const launches: string[][] = [];
  let alive = 0;
  let most = 0;
  return {
    launches,
    mostAlive: () => most,
    launch(args, handlers) {
      launches.push([...args]);
      alive++;
      most = Math.max(most, alive);
      return inner.launch(args, {
        ...handlers,
        onExit(code) {
          alive--;
          handlers.onExit(code);
        },
      });
    },
  };
}

let home: string | undefined;
let host: Host | undefined;
afterEach(async () => {
  await host?.close();
  if (home) fs.rmSync(home, { recursive: true, force: true });
  host = undefined;
  home = undefined;
});

async function start(maxWorkers: number) {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-appstudy-'));
  const launcher = recordingLauncher();
  host = await createHost({ home, launcher, transport: 'web', maxWorkers });
  const events: ApiEvent[] = [];
  host.subscribe((e) => events.push(e));
  const api = <T>(method: string, params: unknown) => callApi(host!.handlers, method, params) as Promise<T>;
  /** The study's view once `until` holds for it (from its studyChanged events). */
  const studyWhen = (id: string, until: (s: ApiStudyView) => boolean, ms = 240_000) =>
    new Promise<ApiStudyView>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`study ${id}: not there in ${ms / 1000} s`)), ms);
      const look = () => {
        const last = events.findLast(
          (e): e is Extract<ApiEvent, { type: 'studyChanged' }> => e.type === 'studyChanged' && e.study.id === id,
        );
        if (last && until(last.study)) {
          clearTimeout(timer);
          resolve(last.study);
        } else setTimeout(look, 100);
      };
      look();
    });
  return { launcher, api, events, studyWhen, home };
}

describe('a study here from the app', () => {
  it('starts 2 variants × 2 seeds through the host launcher within its slots; the record reads as the CLI’s', async () => {
    const { launcher, api, events, studyWhen, home } = await start(2);
    const { study } = await api<{ study: ApiStudyView }>('startStudy', {
      preset: 'mars-ablations',
      variants: ['full', 'sys1-off'],
      seeds: [0, 1],
      sets: ['budget.steps=1', 'eval.items=4'],
    });
    expect(study).toMatchObject({ where: { kind: 'local' }, link: 'following' });
    expect(study.runs.map((r) => [r.variant, r.seed])).toEqual([
      ['full', 0],
      ['full', 1],
      ['sys1-off', 0],
      ['sys1-off', 1],
    ]);
    const ended = await studyWhen(study.id, (s) => s.runs.every((r) => FINAL.has(r.state)) && s.link === 'idle');
    expect(ended.runs.map((r) => r.state)).toEqual(['finished', 'finished', 'finished', 'finished']);

    // every run went through the launcher, as `train … --run-id <its id> --json`, never more at once than the slots
    const trains = launcher.launches.filter((a) => a[0] === 'train');
    expect(trains).toHaveLength(4);
    expect(trains.map((a) => a[a.indexOf('--run-id') + 1]).sort()).toEqual(study.runs.map((r) => r.runId).sort());
    for (const a of trains) expect(a).toContain('--json');
    expect(launcher.mostAlive()).toBeLessThanOrEqual(2);

    // the run folders are the runs, finished, with the variant's setting; each end told as for a single run
    for (const run of ended.runs) {
      const meta = JSON.parse(fs.readFileSync(path.join(home, 'runs', run.runId, 'run.json'), 'utf8'));
      expect(meta).toMatchObject({ id: run.runId, status: 'finished', seed: run.seed, preset: 'mars-ablations' });
      if (run.variant === 'sys1-off') expect(meta.config.mars.sys1Params).toBe('off');
      else expect(meta.config.mars.sys1Params).not.toBe('off');
      expect(meta.config.budget.steps).toBe(1);
      expect(events).toContainEqual({ type: 'runProcessExit', runId: run.runId, code: 0 });
    }
    const listed = (await api<{ runs: { id: string }[] }>('listRuns', {})).runs.map((r) => r.id);
    for (const run of ended.runs) expect(listed).toContain(run.runId);

    // the record is the CLI's: `mars-lab study status` reads it
    const record = readStudy(home, study.id);
    expect(record.where).toEqual({ kind: 'local', parallel: 2 });
    expect(record.sets).toEqual(['budget.steps=1', 'eval.items=4']);
    const status = await cli(['study', 'status', study.id, '--home', home]);
    expect(status.stderr).toBe('');
    expect(status.code).toBe(0);
    expect(status.stdout.match(/ finished /g)).toHaveLength(4);
  }, 300_000);

  it('stops from its study rows: the running run checkpoints, the one waiting for a slot never starts', async () => {
    const { launcher, api, studyWhen } = await start(1);
    const { study } = await api<{ study: ApiStudyView }>('startStudy', {
      preset: 'seqgrpo-copy',
      seeds: [0, 1],
      sets: ['budget.steps=2000'],
    });
    const first = study.runs[0]!.runId;
    await studyWhen(study.id, (s) => (s.runs[0]!.step ?? 0) >= 1, 120_000); // its first step's line
    // one slot: the second run waits for it
    expect(launcher.launches.filter((a) => a[0] === 'train')).toHaveLength(1);
    const answer = await api<{ stopping: boolean; message: string }>('stopClusterJob', { studyId: study.id });
    expect(answer).toEqual({
      stopping: true,
      message: 'stopping 1 run after the current step (each checkpoints first); 1 waiting will not start',
    });
    const ended = await studyWhen(study.id, (s) => s.runs.every((r) => FINAL.has(r.state)) && s.link === 'idle');
    expect(ended.runs.map((r) => r.state)).toEqual(['stopped', 'stopped']);
    expect(ended.runs[1]!.message).toBe('not started: the study was stopped');
    expect(launcher.launches.filter((a) => a[0] === 'train')).toHaveLength(1);
    const meta = JSON.parse(fs.readFileSync(path.join(home!, 'runs', first, 'run.json'), 'utf8'));
    expect(meta.status).toBe('stopped');
    expect(meta.lastCheckpointStep).toBeGreaterThanOrEqual(1);
    expect(meta.lastCheckpointStep).toBeLessThan(2000);
    expect(fs.existsSync(path.join(home!, 'runs', ended.runs[1]!.runId))).toBe(false);
  }, 180_000);

  it('takes up a study whose app closed before every run started: read on attach, the waiting runs started on request', async () => {
    const { launcher, api, studyWhen, home } = await start(2);
    // as a closing host leaves it: one run ended (its folder is not needed), one never started
    const record = planStudy({
      preset: 'seqgrpo-copy',
      variants: [null],
      seeds: [0, 1],
      sets: ['budget.steps=2'],
      where: { kind: 'local', parallel: 2 },
    });
    record.runs[0]!.state = 'stopped';
    writeStudy(home, record);
    const read = await api<{ study: ApiStudyView }>('attachStudy', { studyId: record.id });
    expect(read.study).toMatchObject({ link: 'idle', runs: [{ state: 'stopped' }, { state: 'pending' }] });
    expect(launcher.launches).toHaveLength(0); // attaching alone starts nothing
    const { study } = await api<{ study: ApiStudyView }>('attachStudy', { studyId: record.id, startWaiting: true });
    expect(study.link).toBe('following');
    const ended = await studyWhen(record.id, (s) => s.link === 'idle');
    expect(ended.runs.map((r) => r.state)).toEqual(['stopped', 'finished']);
    expect(launcher.launches.map((a) => a[a.indexOf('--run-id') + 1])).toEqual([record.runs[1]!.runId]);
    expect(readStudy(home, record.id).runs.map((r) => r.state)).toEqual(['stopped', 'finished']);
  }, 120_000);

  it('keeps the CLI path: `mars-lab study` here stops on Ctrl-C, the running run at a checkpoint, the waiting one unstarted', async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-clistudy-'));
    const { child, exited } = spawnCli(
      ['study', '--preset', 'seqgrpo-copy', '--seeds', '2', '--parallel', '1', '--set', 'budget.steps=2000'],
      { MARS_LAB_HOME: home },
      () => {}, // the table, at the end
    );
    child.stderr!.setEncoding('utf8');
    let stderr = '';
    const started = new Promise<void>((resolve) =>
      child.stderr!.on('data', (t: string) => {
        stderr += t;
        if (/: running step \d+\/2000/.test(stderr)) resolve();
      }),
    );
    await started;
    child.kill('SIGINT');
    expect(await exited).toBe(2); // not every run finished: one line, exit code 2
    expect(stderr).toMatch(/Ctrl-C: stopping the study's runs here/);
    const [id] = fs.readdirSync(path.join(home, 'studies')).filter((n) => n.endsWith('.json'));
    const record = readStudy(home, id!.slice(0, -5));
    expect(record.runs.map((r) => r.state)).toEqual(['stopped', 'stopped']);
    expect(record.runs[1]!.message).toBe('not started: the study was stopped');
    const meta = JSON.parse(fs.readFileSync(path.join(home, 'runs', record.runs[0]!.runId, 'run.json'), 'utf8'));
    expect(meta.status).toBe('stopped');
    expect(meta.lastCheckpointStep).toBeGreaterThanOrEqual(1);
  }, 120_000);
});
