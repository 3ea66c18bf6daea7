/**
 * Real training runs killed with SIGKILL at random moments — and deliberately in the middle of a checkpoint write and
 * of a metrics append — then resumed. After every kill: every checkpoint loads, metric steps strictly increase with
 * no duplicates, only the last line may be torn, and nothing before the last checkpoint was lost. At the end the run
 * equals one that was never interrupted.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../../engine/model/formats/checkpoint';
import { Rng } from '../../engine/random/prng';
import { listCheckpoints, runFilePaths } from '../../engine/runs/folder/runFolder';
import { cli, spawnCli } from '../helpers/cli';
import { useBackend } from '../helpers/backends';
import { metricLines, quickConfig } from '../helpers/runFixtures';

const STEPS = 60;
let home: string;
let configFile: string;
beforeAll(async () => {
  await useBackend('cpu'); // only loads checkpoints here; the runs themselves use the config's backend
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-crash-'));
  configFile = path.join(home, 'config.json');
  fs.writeFileSync(configFile, JSON.stringify(quickConfig({ steps: STEPS, checkpointEvery: 3, evalEvery: 10 })));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

type Kill =
  { kind: 'afterSteps'; steps: number } | { kind: 'fault'; point: 'checkpoint-write' | 'append'; hit: number };

/** Start train (first) or resume (later) and SIGKILL it at the chosen moment. Returns the run id. */
async function runUntilKilled(runId: string | null, kill: Kill): Promise<string> {
  const marker = path.join(home, `fault-${Date.now()}`);
  const env: NodeJS.ProcessEnv =
    kill.kind === 'fault'
      ? { MARS_LAB_FAULT_POINT: kill.point, MARS_LAB_FAULT_HIT: String(kill.hit), MARS_LAB_FAULT_MARKER: marker }
      : {};
  const args = runId
    ? ['resume', runId, '--home', home, '--json']
    : ['train', '--config', configFile, '--home', home, '--json'];
  let id = runId;
  let seen = 0;
  let resolveKilled!: () => void;
  const killed = new Promise<void>((r) => (resolveKilled = r));
  const { child, exited } = spawnCli(args, env, (line) => {
    const msg = JSON.parse(line) as { type: string; runId: string };
    id ??= msg.runId;
    if (msg.type === 'progress' && kill.kind === 'afterSteps' && ++seen === kill.steps) {
      child.kill('SIGKILL');
      resolveKilled();
    }
  });
  if (kill.kind === 'fault') {
    const poll = setInterval(() => {
      if (fs.existsSync(marker)) {
        clearInterval(poll);
        child.kill('SIGKILL');
        resolveKilled();
      }
    }, 5);
    void exited.then(() => clearInterval(poll)); // exited only resolves (the exit code)
  }
  const code = await Promise.race([exited, killed.then(() => exited)]);
  expect(code, 'the run ended before it could be killed').toBeNull();
  if (!id) {
    // killed before the first progress line: find the run folder it created
    const runs = fs.readdirSync(path.join(home, 'runs')).filter((n) => !n.startsWith('.'));
    id = runs[0]!;
  }
  return id;
}

async function checkInvariants(dir: string): Promise<void> {
  const files = runFilePaths(dir);
  const text = fs.readFileSync(files.metrics, 'utf8');
  const lines = text.split('\n');
  const last = lines.pop()!; // '' when the file ends with a newline, else a torn tail
  const steps = lines.map((l) => (JSON.parse(l) as { step: number }).step); // every complete line parses
  if (last !== '') expect(() => JSON.parse(last)).toThrow(); // a tail without newline is a torn write, nothing else
  for (let i = 1; i < steps.length; i++) expect(steps[i]).toBe(steps[i - 1]! + 1);
  if (steps.length) expect(steps[0]).toBe(1);
  const checkpoints = listCheckpoints(dir);
  for (const c of checkpoints) (await loadCheckpoint(c.path)).model.dispose();
  const lastCk = checkpoints.at(-1)?.step ?? 0;
  expect(steps.length).toBeGreaterThanOrEqual(lastCk); // nothing before the last checkpoint was lost
}

describe('SIGKILL at random moments, then resume', () => {
  it('survives at least 10 kills, including mid-checkpoint and mid-append, and ends equal to an uninterrupted run', async () => {
    const rng = new Rng(2026);
    const kills: Kill[] = [
      { kind: 'afterSteps', steps: 2 },
      { kind: 'fault', point: 'checkpoint-write', hit: 2 },
      ...Array.from({ length: 4 }, () => ({ kind: 'afterSteps' as const, steps: 1 + rng.int(4) })),
      { kind: 'fault', point: 'append', hit: 2 },
      ...Array.from({ length: 3 }, () => ({ kind: 'afterSteps' as const, steps: 1 + rng.int(4) })),
      { kind: 'fault', point: 'checkpoint-write', hit: 1 },
      { kind: 'fault', point: 'append', hit: 1 },
    ];
    let runId: string | null = null;
    let tornSeen = 0;
    for (const k of kills) {
      runId = await runUntilKilled(runId, k);
      const dir = path.join(home, 'runs', runId);
      if (
        !fs.readFileSync(runFilePaths(dir).metrics, 'utf8').endsWith('\n') &&
        fs.statSync(runFilePaths(dir).metrics).size > 0
      ) {
        tornSeen++;
      }
      await checkInvariants(dir);
    }
    expect(kills.length).toBeGreaterThanOrEqual(10);
    expect(tornSeen).toBeGreaterThanOrEqual(1); // the append faults really left torn lines behind

    const done = await cli(['resume', runId!, '--home', home, '--json']);
    expect(done.code).toBe(0);
    const dir = path.join(home, 'runs', runId!);
    await checkInvariants(dir);

    const ref = await cli(['train', '--config', configFile, '--home', path.join(home, 'ref'), '--json']);
    expect(ref.code).toBe(0);
    const refDir = JSON.parse(ref.stdout.trim().split('\n').at(-1)!).dir as string;
    const got = metricLines(runFilePaths(dir).metrics);
    expect(got.map((l) => l.step)).toEqual([...Array(STEPS).keys()].map((i) => i + 1));
    expect(got).toEqual(metricLines(runFilePaths(refDir).metrics));
  }, 240_000);
});
