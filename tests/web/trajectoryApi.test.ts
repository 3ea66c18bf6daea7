/**
 * getTrajectories over a run folder (issue 19 "Finding the bad trajectory"), through the contract's validation
 * (callApi) with a fake launcher so nothing trains: any step opens directly however many steps the file holds, filters
 * narrow and continue newest first, MARS episodes come with their pages' text and capacities, the index follows a growing file and
 * a file a resume cut back, and a malformed filter is refused naming its field.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiSchemas } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import type { RunLauncher } from '../../engine/api/workers/runLauncher';
import { createRunFolder } from '../../engine/runs/folder/runFolder';

const fixture = (name: string): Record<string, unknown>[] =>
  fs
    .readFileSync(path.resolve('tests/fixtures', name), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>);
const episodes = fixture('mars-episodes.jsonl');
const config = JSON.parse(fs.readFileSync(path.resolve('tests/fixtures/mars-episodes.config.json'), 'utf8')) as Record<
  string,
  unknown
>;

const noLaunches: RunLauncher = {
  launch() {
    throw new Error('this test launches nothing');
  },
};

let home: string;
let host: Host;
let runId: string;
let file: string;
const STEPS = 300;

/** The fixture's 12 episodes at every step 1…n (their own step replaced), as a long run would have written them. */
const linesFor = (from: number, to: number): string => {
  let out = '';
  for (let s = from; s <= to; s++) for (const e of episodes) out += `${JSON.stringify({ ...e, step: s })}\n`;
  return out;
};

type Answer = ReturnType<(typeof apiSchemas)['getTrajectories']['response']['parse']>;
const get = async (request: Record<string, unknown>): Promise<Answer> =>
  apiSchemas.getTrajectories.response.parse(await callApi(host.handlers, 'getTrajectories', { runId, ...request }));

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-traj-api-'));
  host = await createHost({ home, launcher: noLaunches, transport: 'web' });
  const run = createRunFolder(home, { algorithm: 'mars', config, engineVersion: '0', seed: 0, tags: [], notes: '' });
  runId = run.id;
  file = path.join(run.dir, 'trajectories.jsonl');
  fs.writeFileSync(file, linesFor(1, STEPS));
});

afterAll(async () => {
  await host?.close();
  fs.rmSync(home, { recursive: true, force: true });
});

describe('getTrajectories', () => {
  it('opens any step directly: that step’s episodes, its positions, and the span of steps', async () => {
    const a = await get({ step: 7, limit: 500 });
    expect(a.total).toBe(STEPS * episodes.length);
    expect(a.step).toBe(7);
    expect(a.offset).toBe(6 * episodes.length);
    expect(a.stepEnd).toBe(7 * episodes.length);
    expect(a.records.length).toBe(episodes.length);
    expect(a.records.every((r) => (r as { step: number }).step === 7)).toBe(true);
    expect(a.steps).toEqual({ first: 1, last: STEPS, count: STEPS });
    // step 1 of a long run, in one request (paging from the newest 256 lines would take 14 requests here)
    const first = await get({ step: 1, limit: 500 });
    expect(first.records.map((r) => (r as { questionId: string }).questionId)).toEqual(
      episodes.map((e) => e['questionId']),
    );
  });

  it('sends the text of the pages the episodes found, keyed by world and page', async () => {
    const a = await get({ step: 2, limit: 500 });
    const wanted = new Set(
      episodes.flatMap((e) =>
        (e['turns'] as { results: { id: string }[] }[]).flatMap((t) =>
          t.results.map((p) => `${String(e['questionId']).split(':')[0]}:${p.id}`),
        ),
      ),
    );
    expect(wanted.size).toBeGreaterThan(0);
    expect(Object.keys(a.pages ?? {}).sort()).toEqual([...wanted].sort());
    for (const p of Object.values(a.pages!)) expect(p.text.length).toBeGreaterThan(0);
    // and, for these records written before capacities were recorded, each search's System 1 capacity
    const turns = a.records
      .flatMap((r) => (r as { turns: { query: string | null; capacity?: number }[] }).turns)
      .filter((t) => t.query !== null);
    expect(turns.length).toBeGreaterThan(0);
    expect(turns.every((t) => typeof t.capacity === 'number')).toBe(true);
  });

  it('filters narrow the list, newest first, and `next` continues the search', async () => {
    const solved = await get({ filter: { outcome: 'solved', stepMin: 290 }, limit: 500 });
    const solvedPerStep = episodes.filter((e) => e['reward'] === 1).length;
    expect(solved.records.length).toBe(solvedPerStep * 11);
    expect(
      solved.records.every(
        (r) => (r as { reward: number; step: number }).reward === 1 && (r as { step: number }).step >= 290,
      ),
    ).toBe(true);
    const family = await get({ filter: { family: 'direct', stepMin: 10, stepMax: 12 }, limit: 500 });
    expect(family.records.length).toBe(3 * episodes.filter((e) => e['family'] === 'direct').length);
    const text = await get({ filter: { text: 'TAIDEKRI' }, limit: 5 });
    expect(text.records.length).toBe(5);
    expect(text.records.every((r) => JSON.stringify(r).includes('taidekri'))).toBe(true);
    expect((text.records.at(-1) as { step: number }).step).toBe(STEPS);
    expect(text.next).not.toBeNull();
    const more = await get({ filter: { text: 'taidekri' }, limit: 5, before: text.next });
    expect(Math.max(...more.positions!)).toBeLessThan(Math.min(...text.positions!));
    const none = await get({ filter: { family: 'threeHop', stepMin: 1, stepMax: 3 } });
    expect(none.records).toEqual([]);
    expect(none.next).toBeNull();
  });

  it('refuses a malformed filter, naming the field', async () => {
    await expect(callApi(host.handlers, 'getTrajectories', { runId, filter: { outcome: 'maybe' } })).rejects.toThrow(
      /filter\.outcome/,
    );
    await expect(callApi(host.handlers, 'getTrajectories', { runId, filter: { colour: 'red' } })).rejects.toThrow(
      /filter/,
    );
    await expect(callApi(host.handlers, 'getTrajectories', { runId, step: -1 })).rejects.toThrow(/step/);
  });

  it('follows the file as it grows, and indexes it again when a resume cut it back', async () => {
    fs.appendFileSync(file, linesFor(STEPS + 1, STEPS + 1) + '{"step":999,"kind":"mars.ep');
    const grown = await get({ step: STEPS + 1, limit: 500 });
    expect(grown.records.length).toBe(episodes.length);
    expect(grown.total).toBe((STEPS + 1) * episodes.length);
    // the torn last line is not a step yet
    expect((await get({ step: 999 })).step).toBeNull();
    // a resume to step 5, then steps 6… of another content
    const keep = Buffer.byteLength(linesFor(1, 5));
    fs.truncateSync(file, keep);
    fs.appendFileSync(file, linesFor(6, 6).replaceAll('"reward":0', '"reward":0.5'));
    const after = await get({ step: 6, limit: 500 });
    expect(after.total).toBe(6 * episodes.length);
    expect(after.records.filter((r) => (r as { reward: number }).reward === 0.5).length).toBe(
      episodes.filter((e) => e['reward'] === 0).length,
    );
    expect(after.steps).toEqual({ first: 1, last: 6, count: 6 });
  });
});
