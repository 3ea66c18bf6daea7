/**
 * `mars-lab export RUN --to verl --submit --ray URL` against a real single-node Ray head (tests/ray/rayHead.ts; no
 * fake of the Jobs API): the job Ray holds has the launch script's entrypoint, runtime_env and metadata, and Ray runs
 * exactly that command (this machine has no verl, so the job fails importing it: the log says so); a submission id
 * Ray has seen, and a missing launch variable, are one line and exit code 2.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RayJobsClient } from '../../engine/cluster/ray/jobsClient';
import { TERMINAL_STATUSES } from '../../engine/cluster/ray/jobsSchemas';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { createRunFolder } from '../../engine/runs/folder/runFolder';
import { CLI, expectRay, rayMissing, startRayHead, type RayHead } from '../ray/rayHead';

const missing = rayMissing();
if (missing && !expectRay) console.warn(`interopSubmit skipped: ${missing}`);
const run = promisify(execFile);

async function cli(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const r = await run(process.execPath, [CLI, ...args], { timeout: 120_000, env: { ...process.env, ...env } });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe.runIf(expectRay || !missing)('export --submit on a real Ray head', () => {
  let head: RayHead;
  let client: RayJobsClient;
  let tmp: string;
  let home: string;

  beforeAll(async () => {
    if (missing) throw new Error(`MARS_LAB_EXPECT_RAY=1 but ${missing}`);
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-submit-'));
    home = path.join(tmp, 'home');
    const config = resolvePresetConfig('seqgrpo-copy');
    createRunFolder(
      home,
      {
        algorithm: config.algorithm,
        preset: 'seqgrpo-copy',
        config,
        engineVersion: 'test',
        seed: 0,
        tags: [],
        notes: '',
      },
      { id: 'to-submit' },
    );
    head = await startRayHead();
    client = new RayJobsClient({ url: head.url });
  }, 150_000);

  afterAll(async () => {
    await head?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  }, 60_000);

  it('submits the launch command; Ray runs it; a seen submission id and a missing variable are one line', async () => {
    const id = `export-submit-${process.pid}`;
    const env = { TRAIN_FILES: '/data/gsm8k/train.parquet', OUT_DIR: '/shared/verl-out', SUBMISSION_ID: id };
    const args = [
      'export',
      'to-submit',
      '--to',
      'verl',
      '--model',
      'Qwen/Qwen2.5-0.5B-Instruct',
      '--submit',
      '--ray',
      head.url,
      '--out',
      path.join(tmp, 'out'),
      '--home',
      home,
    ];
    const r = await cli(args, env);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`submitted job ${id} to`);
    expect(r.stdout).toContain('mars-lab import verl /shared/verl-out');

    const job = await client.job(id);
    expect(
      job.entrypoint?.startsWith(
        'python3 -m verl.trainer.main_ppo actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct ',
      ),
    ).toBe(true);
    expect(job.entrypoint).toContain('trainer.rollout_data_dir=/shared/verl-out/rollouts');
    expect(job.entrypoint).toContain('data.train_files=/data/gsm8k/train.parquet');
    expect(job.metadata).toMatchObject({ mars_lab_run: 'to-submit', mars_lab_export: 'verl' });
    expect((job.runtime_env as { env_vars?: Record<string, string> } | null | undefined)?.env_vars).toEqual({
      VERL_FILE_LOGGER_PATH: '/shared/verl-out/metrics.jsonl',
    });

    // Ray runs that command: with no verl on this machine, python3 fails to import it
    const deadline = Date.now() + 90_000;
    let status = job.status;
    while (!TERMINAL_STATUSES.has(status) && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 1000));
      status = (await client.job(id)).status;
    }
    expect(status).toBe('FAILED');
    expect(await client.logs(id)).toMatch(/No module named .?verl/);

    const again = await cli(args, env);
    expect(again.code).toBe(2);
    expect(again.stderr.trim().split('\n')).toHaveLength(1);
    expect(again.stderr).toContain(id);

    const noData = await cli([...args.slice(0, -4), '--out', path.join(tmp, 'out2'), '--home', home], {
      OUT_DIR: '/shared/x',
      SUBMISSION_ID: `${id}-2`,
      TRAIN_FILES: '',
    });
    expect(noData.code).toBe(2);
    expect(noData.stderr).toMatch(/^mars-lab: export --submit: set TRAIN_FILES: /);
    expect(fs.existsSync(path.join(tmp, 'out2'))).toBe(false);
  }, 200_000);
});
