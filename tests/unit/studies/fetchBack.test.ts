/**
 * The fetch-back of a run folder (engine/cluster/studies/fetchBack.ts) without Ray: the fetch job's entrypoint run here with
 * /bin/sh on a made-up cluster home, its output decoded, verified and unpacked into another home; and the faults of
 * the decoder (a damaged archive, missing markers, an archive over the cap, no run folder), each one line.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { decodeFetchLog, fetchEntrypoint, FetchError, unpackRun } from '../../../engine/cluster/studies/fetchBack';

const tmps: string[] = [];
function tmp(): string {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-fetch-'));
  tmps.push(d);
  return d;
}
afterEach(() => {
  for (const d of tmps.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

/** A cluster home with one run folder: run.json, metrics.jsonl and checkpoints 1, 5 and a leftover 5.tmp-9. */
function clusterRun(runId: string): string {
  const home = tmp();
  const dir = path.join(home, 'runs', runId);
  for (const c of ['1', '5', '5.tmp-9']) {
    fs.mkdirSync(path.join(dir, 'checkpoints', c), { recursive: true });
    fs.writeFileSync(path.join(dir, 'checkpoints', c, 'weights.bin'), Buffer.alloc(64, c.length));
  }
  fs.writeFileSync(path.join(dir, 'run.json'), JSON.stringify({ id: runId, status: 'finished' }));
  fs.writeFileSync(path.join(dir, 'metrics.jsonl'), '{"step":1,"loss":0.5}\n{"step":2,"loss":0.25}\n');
  return home;
}

/** What the fetch job prints, run here as Ray would run it (sh -c). */
function runJob(entry: string): { code: number; log: string } {
  const r = spawnSync('/bin/sh', ['-c', entry], { encoding: 'utf8', maxBuffer: 64 << 20 });
  return { code: r.status ?? -1, log: `some line Ray printed\n${r.stdout}` };
}

function decodeError(log: string, runId: string, opts = {}): string {
  try {
    decodeFetchLog(log, runId, opts);
  } catch (err) {
    expect(err).toBeInstanceOf(FetchError);
    return (err as Error).message;
  }
  throw new Error('decoded');
}

describe('fetch-back of a run folder', () => {
  it('packs the run folder (last checkpoint only), and decodes, verifies and unpacks it byte for byte', () => {
    const cluster = clusterRun('s-a-s0');
    const job = runJob(fetchEntrypoint(cluster, 's-a-s0', false));
    expect(job.code).toBe(0);
    const archive = decodeFetchLog(job.log, 's-a-s0');
    const home = tmp();
    const dir = unpackRun(home, 'study-1', 's-a-s0', archive);
    expect(dir).toBe(path.join(home, 'runs', 's-a-s0'));
    for (const f of ['run.json', 'metrics.jsonl', 'checkpoints/5/weights.bin']) {
      expect(fs.readFileSync(path.join(dir, f))).toEqual(fs.readFileSync(path.join(cluster, 'runs', 's-a-s0', f)));
    }
    expect(fs.readdirSync(path.join(dir, 'checkpoints'))).toEqual(['5']);
    expect(fs.readdirSync(path.join(home, 'studies', 'study-1'))).toEqual([]); // the temp folder is gone
    // --fetch-all keeps every checkpoint
    const all = decodeFetchLog(runJob(fetchEntrypoint(cluster, 's-a-s0', true)).log, 's-a-s0');
    const home2 = tmp();
    unpackRun(home2, 'study-1', 's-a-s0', all);
    expect(fs.readdirSync(path.join(home2, 'runs', 's-a-s0', 'checkpoints')).sort()).toEqual(['1', '5', '5.tmp-9']);
  });

  it('refuses a damaged archive, missing markers, an archive over the cap and a missing run folder, one line each', () => {
    const cluster = clusterRun('r1');
    const { log } = runJob(fetchEntrypoint(cluster, 'r1', false));
    const lines = log.split('\n');
    const i = lines.findIndex((l) => l.startsWith('MARS_LAB_FETCH_BEGIN')) + 1;
    const b64 = lines[i]!;
    const k = Math.floor(b64.length / 2);
    lines[i] = `${b64.slice(0, k)}${b64[k] === 'A' ? 'B' : 'A'}${b64.slice(k + 1)}`; // same size, other bytes
    expect(decodeError(lines.join('\n'), 'r1')).toMatch(/^the archive's sha256 [0-9a-f]{12}… is not the job's/);
    expect(decodeError(log.replace(/MARS_LAB_FETCH_END.*/, ''), 'r1')).toMatch(/no MARS_LAB_FETCH_END line/);
    expect(decodeError(log, 'other-run')).toMatch(/no MARS_LAB_FETCH_BEGIN line/);

    const big = runJob(fetchEntrypoint(cluster, 'r1', true, 100));
    expect(big.code).toBe(4);
    const tooLarge = decodeError(big.log, 'r1', { rayHome: cluster, all: true });
    expect(tooLarge).toMatch(/over the 0\.0 MiB fetch cap \(256\.0 MiB of log\); fetch without --fetch-all/);
    expect(tooLarge.split('\n')).toHaveLength(1);

    const none = runJob(fetchEntrypoint(cluster, 'no-such-run', false));
    expect(none.code).toBe(3);
    expect(decodeError(none.log, 'no-such-run')).toBe(
      `the cluster has no run folder ${path.join(cluster, 'runs', 'no-such-run')}`,
    );
  });

  it('unpacks only an archive that is the run folder itself', () => {
    const cluster = clusterRun('r2');
    const archive = decodeFetchLog(runJob(fetchEntrypoint(cluster, 'r2', false)).log, 'r2');
    const home = tmp();
    expect(() => unpackRun(home, 's', 'r3', archive)).toThrow(/the archive is not the run folder r3 \(it holds r2\)/);
    expect(fs.existsSync(path.join(home, 'runs', 'r3'))).toBe(false);
    expect(() => unpackRun(home, 's', 'r2', Buffer.from('not gzip'))).toThrow(/tar could not unpack/);
  });
});
