/**
 * Every record a run folder holds has one schema (engine/records/): the recorded fixtures (tests/fixtures, written
 * before records had a version) read with them as version 1, and a fresh tiny run of each algorithm (seqgrpo, MARS,
 * MARTI) writes metrics, events, trajectories, MARTI's live trees and evaluation results that all fit, with `version: 1`
 * written on each new trajectory record, event, live.json and eval.json (not on metrics lines: engine/records/metrics.ts
 * says why). A malformed record is refused with the file, line and field named.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { MartiConfig } from '../../engine/marti/configSchema';
import { createMartiTrainer } from '../../engine/marti/trainer';
import {
  evalFileSchema,
  liveTrajectoriesSchema,
  marsEpisodeSchema,
  metricsLineSchema,
  readRecord,
  RECORD_VERSION,
  runEventSchema,
  trajectoryLineSchema,
  type TrajectoryKind,
} from '../../engine/records';
import { parseRunConfig, type RunConfigInput } from '../../engine/runs/config/configSchema';
import { evaluateCheckpoint } from '../../engine/runs/evaluation/evaluation';
import { readLiveTrajectories, writeLiveTrajectories } from '../../engine/runs/folder/liveTrajectories';
import { listCheckpoints, runFilePaths } from '../../engine/runs/folder/runFolder';
import { startRun } from '../../engine/runs/runLoop';
import { UserError } from '../../engine/base/userError';
import { useBackend } from '../helpers/backends';
import { quickConfig } from '../helpers/runFixtures';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-records-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

const lines = (file: string): unknown[] =>
  fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as unknown);

/** Reads every line of a JSONL file with `schema` (readRecord throws, naming the line, on the first that does not fit). */
function readAll<T>(file: string, read: (value: unknown, where: string) => T): T[] {
  return lines(file).map((v, i) => read(v, `${file}:${i + 1}`));
}

/**
 * A fresh run of `config` (its checkpoints every step): every line of metrics.jsonl, events.jsonl and
 * trajectories.jsonl read with its schema, and the last checkpoint's evaluation (eval.json) read with its own.
 * Returns the trajectory kinds written and the raw trajectory lines.
 */
async function checkRun(
  config: RunConfigInput,
): Promise<{ kinds: Set<TrajectoryKind>; raw: Record<string, unknown>[]; evalRecords: number; checkpoint: string }> {
  const outcome = await startRun(home, parseRunConfig(config));
  expect(outcome.status).toBe('finished');
  const files = runFilePaths(outcome.dir);

  const metrics = readAll(files.metrics, (v, w) => readRecord(metricsLineSchema, v, w));
  expect(metrics.length).toBeGreaterThan(0);
  expect(metrics.every((m) => m.version === 1 && typeof m.step === 'number')).toBe(true);

  const events = readAll(files.events, (v, w) => readRecord(runEventSchema, v, w));
  expect(events.map((e) => e.type)).toContain('status');
  expect(lines(files.events).every((e) => (e as { version?: unknown }).version === RECORD_VERSION)).toBe(true);

  const trajectories = readAll(files.trajectories, (v, w) => readRecord(trajectoryLineSchema, v, w));
  expect(trajectories.length).toBeGreaterThan(0);

  const [last] = listCheckpoints(outcome.dir).slice(-1);
  const result = await evaluateCheckpoint(home, last!.path);
  const evalJson = JSON.parse(fs.readFileSync(result.file, 'utf8')) as { version?: unknown };
  expect(evalJson.version).toBe(RECORD_VERSION);
  const stored = readRecord(evalFileSchema, evalJson, result.file);
  expect(stored.items.length).toBe(result.items.length);
  return {
    kinds: new Set(trajectories.map((t) => t.kind)),
    raw: lines(files.trajectories) as Record<string, unknown>[],
    evalRecords: stored.items.filter((it) => it.record !== undefined).length,
    checkpoint: last!.path,
  };
}

describe('run-folder records', () => {
  it('the recorded fixtures read with the schemas; a record without version reads as 1', () => {
    const dir = path.resolve('tests/fixtures');
    const jsonl = fs.readdirSync(dir).filter((f) => f.endsWith('.jsonl'));
    expect(jsonl.length).toBeGreaterThan(0);
    for (const f of jsonl) {
      const file = path.join(dir, f);
      expect(lines(file).every((r) => (r as { version?: unknown }).version === undefined)).toBe(true); // written before versions
      const records = readAll(file, (v, w) => readRecord(trajectoryLineSchema, v, w));
      expect(records.length).toBeGreaterThan(0);
      expect(records.every((r) => r.version === 1)).toBe(true);
    }
  });

  it('a fresh seqgrpo run: metrics, events, groups and evaluation fit; new records carry version 1', async () => {
    const run = await checkRun(quickConfig({ steps: 2, checkpointEvery: 1, evalEvery: 2 }));
    expect([...run.kinds]).toEqual(['seqgrpo.group']);
    expect(run.raw.every((r) => r['version'] === RECORD_VERSION)).toBe(true);

    // the evaluation cache is read with its schema: an entry that is not an evaluation record is recomputed, not served
    const first = await evaluateCheckpoint(home, run.checkpoint);
    expect(first.cached).toBe(true);
    const { items: _items, ...withoutItems } = JSON.parse(fs.readFileSync(first.file, 'utf8')) as Record<
      string,
      unknown
    >;
    fs.writeFileSync(first.file, JSON.stringify(withoutItems));
    const again = await evaluateCheckpoint(home, run.checkpoint);
    expect(again.cached).toBe(false);
    expect(again.items).toHaveLength(first.items.length);
  }, 120_000);

  it('a fresh MARS run: episodes (training and evaluation) fit', async () => {
    const run = await checkRun({
      algorithm: 'mars',
      seed: 5,
      backend: 'wasm',
      model: { size: 'micro' },
      task: { questionsPerStep: 2, groupSize: 2, trainWorlds: 2, evalWorlds: 1 },
      mars: { maxTurns: 2, sys2TurnMax: 12, sys1ResponseMax: 8 },
      budget: { steps: 1 },
      eval: { every: 0, items: 3 },
      checkpoint: { every: 1 },
    });
    expect([...run.kinds]).toEqual(['mars.episode']);
    expect(run.raw.every((r) => r['version'] === RECORD_VERSION)).toBe(true);
    expect(run.evalRecords).toBeGreaterThan(0);
  }, 180_000);

  it('a fresh MARTI run: trees (training and evaluation) fit, and so does live.json of a step in flight', async () => {
    const config = {
      algorithm: 'marti',
      seed: 7,
      backend: 'wasm',
      model: { size: 'micro' },
      task: { trainTasks: 6, maxProgramTokens: 8 },
      marti: {
        configuration: 'heterogeneous',
        problemsPerStep: 2,
        nodesPerTree: 3,
        trainBatch: 2,
        evalNodes: 2,
        tplus: { enabled: false },
      },
      budget: { steps: 1 },
      eval: { every: 0, items: 2 },
      checkpoint: { every: 1 },
    } as RunConfigInput;
    const run = await checkRun(config);
    expect([...run.kinds]).toEqual(['marti.tree']);
    expect(run.raw.every((r) => r['version'] === RECORD_VERSION)).toBe(true);
    expect(run.evalRecords).toBeGreaterThan(0);

    // live.json as the run loop writes it while a step is in flight: the trainer's live trees, each with the step
    const trainer = await createMartiTrainer(parseRunConfig(config) as MartiConfig);
    const file = path.join(home, 'live.json');
    let reports = 0;
    try {
      await trainer.trainStep({
        live: (records) => {
          writeLiveTrajectories(file, {
            step: 1,
            time: Date.now() / 1000,
            records: records.map((r) => ({ step: 1, ...r })),
          });
          const written = JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: unknown };
          expect(written.version).toBe(RECORD_VERSION);
          const live = readRecord(liveTrajectoriesSchema, written, file);
          expect(live.records.every((r) => r.kind === 'marti.tree' && r.live === true && r.budget === 3)).toBe(true);
          expect(readLiveTrajectories(file)?.records).toHaveLength(2);
          reports++;
        },
      });
    } finally {
      trainer.dispose();
    }
    expect(reports).toBe(3);
  }, 300_000);

  it('refuses a malformed record, naming the file, line and field; and a version it does not know', () => {
    const file = path.resolve('tests/fixtures/mars-episodes.jsonl');
    const episode = lines(file)[0] as Record<string, unknown>;
    expect(readRecord(marsEpisodeSchema, episode, `${file}:1`).version).toBe(1);

    const noTurns = { ...episode, turns: undefined };
    expect(() => readRecord(trajectoryLineSchema, noTurns, `${file}:1`)).toThrow(UserError);
    expect(() => readRecord(trajectoryLineSchema, noTurns, `${file}:1`)).toThrow(/mars-episodes\.jsonl:1: turns: /);

    const badReward = { ...episode, reward: 'high' };
    expect(() => readRecord(trajectoryLineSchema, badReward, 'trajectories.jsonl:7')).toThrow(
      /trajectories\.jsonl:7: reward: /,
    );

    expect(() => readRecord(trajectoryLineSchema, { ...episode, version: 2 }, 'trajectories.jsonl:1')).toThrow(
      /version/,
    );
    expect(() => readRecord(trajectoryLineSchema, { ...episode, kind: 'mars.turn' }, 'trajectories.jsonl:1')).toThrow(
      /kind/,
    );
    expect(() => readRecord(metricsLineSchema, { step: 1, time: 0, reward: 'x' }, 'metrics.jsonl:1')).toThrow(
      /metrics\.jsonl:1: reward: /,
    );
    expect(() => readRecord(runEventSchema, { time: 0, status: 'running' }, 'events.jsonl:1')).toThrow(
      /events\.jsonl:1: type: /,
    );
  });
});
