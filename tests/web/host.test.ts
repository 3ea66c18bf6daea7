/**
 * The host over a real home folder with real run-worker processes: start a run, see its events pushed, stop it (it
 * checkpoints and says 'stopped'), resume it in a new process, stop it again; read its series and trajectories.
 */
import type { z } from 'zod';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiEventSchema, apiSchemas, type ApiEvent } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { createRunFolder, readRunMeta, updateStatus, writeRunMeta } from '../../engine/runs/folder/runFolder';

let home: string;
let host: Host;
const events: ApiEvent[] = [];

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-host-'));
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
  host.subscribe((event) => events.push(event));
});

afterAll(async () => {
  await host?.close();
  fs.rmSync(home, { recursive: true, force: true });
});

async function until(what: string, predicate: () => boolean): Promise<void> {
  for (let i = 0; i < 1200 && !predicate(); i++) await new Promise((r) => setTimeout(r, 100));
  if (!predicate()) throw new Error(`gave up waiting for ${what}`);
}

const statusesOf = (runId: string): string[] =>
  events.flatMap((e) => (e.type === 'runStatus' && e.runId === runId ? [e.status] : []));

describe('host', () => {
  it('starts, stops, resumes and stops a run in worker processes, pushing what happens', async () => {
    const call = async <M extends keyof typeof apiSchemas>(
      method: M,
      params: unknown,
    ): Promise<z.output<(typeof apiSchemas)[M]['response']>> =>
      apiSchemas[method].response.parse(await callApi(host.handlers, method, params)) as z.output<
        (typeof apiSchemas)[M]['response']
      >;
    const { runId } = await call('startRun', {
      preset: 'seqgrpo-copy',
      sets: ['budget.steps=5000', 'checkpoint.every=1000'],
    });
    await until('a first metrics event', () => events.some((e) => e.type === 'metrics' && e.runId === runId));
    const stop = await call('stopRun', { runId });
    expect(stop.stopping).toBe(true);
    await until("status 'stopped'", () => statusesOf(runId).includes('stopped'));
    await until('the worker to exit', () => events.some((e) => e.type === 'runProcessExit' && e.runId === runId));
    const stopped = await call('getRun', { runId });
    expect(stopped.meta.status).toBe('stopped');
    expect(stopped.hostProcess).toBe(false);
    const step = stopped.lastStep!;
    expect(stopped.checkpoints.at(-1)?.step).toBe(step);

    await expect(callApi(host.handlers, 'stopRun', { runId })).resolves.toMatchObject({ stopping: false });
    await call('resumeRun', { runId });
    await until('steps after the resume', () =>
      events.some((e) => e.type === 'metrics' && e.runId === runId && e.points.some((p) => p.step > step)),
    );
    expect(events.some((e) => e.type === 'event' && e.runId === runId && e.record['type'] === 'resumed')).toBe(true);
    await call('stopRun', { runId });
    await until("a second 'stopped'", () => statusesOf(runId).filter((s) => s === 'stopped').length === 2);

    const series = await call('getMetricSeries', { runId, names: ['reward'], width: 4 });
    expect(series.series['reward']!.x.length).toBeLessThanOrEqual(4);
    expect(series.lastStep).toBeGreaterThan(step);
    const page = await call('getTrajectories', { runId, offset: 1, limit: 2 });
    expect(page.records).toHaveLength(2);
    expect(page.total).toBeGreaterThan(2);
    const labels = await call('setRunLabels', { runId, tags: ['a', 'a', 'b'], notes: 'kept' });
    expect(labels.meta).toMatchObject({ tags: ['a', 'b'], notes: 'kept' });
    const listed = await call('listRuns', {});
    expect(listed.runs.map((r) => r.id)).toEqual([runId]);
    expect(listed.runs[0]).toMatchObject({ tags: ['a', 'b'], notes: 'kept' });

    // Everything pushed fits the contract's event schema (so the page can rely on it).
    for (const event of events) expect(() => apiEventSchema.parse(event)).not.toThrow();
  }, 180_000);

  it('saving tags and notes never rewrites run.json, so it cannot undo (or be undone by) the run writing it meanwhile', async () => {
    const { id, dir } = createRunFolder(home, {
      algorithm: 'seqgrpo',
      config: {},
      engineVersion: '0',
      seed: 1,
      tags: ['launched'],
      notes: '',
    });
    updateStatus(dir, 'running', { pid: 99_999 });
    const runJson = path.join(dir, 'run.json');
    const before = { text: fs.readFileSync(runJson, 'utf8'), ino: fs.statSync(runJson).ino };
    const saved = (await callApi(host.handlers, 'setRunLabels', {
      runId: id,
      tags: ['edited'],
      notes: 'from a window',
    })) as { meta: { tags: string[] } };
    expect(saved.meta).toMatchObject({ tags: ['edited'], notes: 'from a window', status: 'running' });
    // run.json is the run's: the same file, the same bytes (a read-modify-write here could put back a status the run
    // had just changed, e.g. 'running' over 'finished')
    expect(fs.statSync(runJson).ino).toBe(before.ino);
    expect(fs.readFileSync(runJson, 'utf8')).toBe(before.text);

    // The run's own read-modify-write around an edit (it read run.json, the window saved, it writes run.json back):
    // the edit survives.
    const read = readRunMeta(dir);
    await callApi(host.handlers, 'setRunLabels', { runId: id, notes: 'edited again' });
    writeRunMeta(dir, { ...read, status: 'finished', lastCheckpointStep: 3 });
    expect(readRunMeta(dir)).toMatchObject({
      status: 'finished',
      lastCheckpointStep: 3,
      tags: ['edited'],
      notes: 'edited again',
    });
    const got = (await callApi(host.handlers, 'getRun', { runId: id })) as { meta: { tags: string[]; notes: string } };
    expect(got.meta).toMatchObject({ tags: ['edited'], notes: 'edited again', status: 'finished' });
    const row = (
      (await callApi(host.handlers, 'listRuns', {})) as { runs: { id: string; tags: string[]; notes: string }[] }
    ).runs.find((r) => r.id === id);
    expect(row).toMatchObject({ tags: ['edited'], notes: 'edited again' });
  });

  it('refuses launches the config schema refuses, naming the field', async () => {
    const answer = await callApi(host.handlers, 'validateConfig', {
      preset: 'seqgrpo-copy',
      sets: ['task.groupSize=1'],
    });
    expect(answer).toMatchObject({ ok: false, issues: [{ path: 'task.groupSize' }] });
    await expect(callApi(host.handlers, 'startRun', { preset: 'no-such-preset' })).rejects.toThrow(
      /unknown preset 'no-such-preset'/,
    );
  });
});
