/**
 * Every malformed input gets a clear message (naming the thing and the fix) and a non-zero exit, never a stack trace.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli, spawnCli } from '../helpers/cli';
import { quickConfig } from '../helpers/runFixtures';

let home: string;
let cfg: string;
let runDir: string;

function expectCleanFailure(r: { code: number; stderr: string }, message: RegExp): void {
  expect(r.code).not.toBe(0);
  expect(r.stderr).toMatch(message);
  expect(r.stderr).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m); // no stack trace
}

beforeAll(async () => {
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-bad-'));
  cfg = path.join(home, 'config.json');
  fs.writeFileSync(cfg, JSON.stringify(quickConfig({ steps: 4, checkpointEvery: 2, evalEvery: 0 })));
  const r = await cli(['train', '--config', cfg, '--home', home, '--json']);
  expect(r.code).toBe(0);
  runDir = JSON.parse(r.stdout.trim().split('\n').at(-1)!).dir;
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

describe('bad input', () => {
  it('an unknown preset lists the available ones', async () => {
    expectCleanFailure(
      await cli(['train', '--preset', 'nope', '--home', home]),
      /unknown preset 'nope'; available: .*seqgrpo-copy/,
    );
  });

  it('an invalid --set names the flag, the field, what is allowed and what was given', async () => {
    expectCleanFailure(
      await cli(['train', '--preset', 'seqgrpo-copy', '--set', 'rl.loss=ppo', '--home', home]),
      /rl\.loss: expected one of "ppoToken" \| "gspo" — received "ppo"/,
    );
    expectCleanFailure(
      await cli(['train', '--preset', 'seqgrpo-copy', '--set', 'rl.lr', '--home', home]),
      /--set rl\.lr: expected path=value/,
    );
    expectCleanFailure(
      await cli(['train', '--preset', 'seqgrpo-copy', '--set', 'task.groupSize=1', '--home', home]),
      /task\.groupSize: must be ≥ 2/,
    );
  });

  it('a config file that is not JSON is named', async () => {
    const bad = path.join(home, 'bad.json');
    fs.writeFileSync(bad, '{ "algorithm": "seqgrpo", ');
    expectCleanFailure(await cli(['train', '--config', bad, '--home', home]), new RegExp(`${bad}.*not valid JSON`));
  });

  it('requests that would freeze or exhaust the machine are one line, at once (issue 15)', async () => {
    expectCleanFailure(
      await cli(['train', '--preset', 'seqgrpo-copy', '--set', 'tags.4294967294=x', '--home', home]),
      /--set tags\.4294967294=x: tags is a list of \d+ items?, so the index must be from 0 to \d+/,
    );
    const mars = await cli([
      'train',
      '--preset',
      'mars-small',
      '--set',
      'model.size=medium',
      '--set',
      'task.groupSize=1024',
      '--home',
      home,
    ]);
    expectCleanFailure(
      mars,
      /task\.groupSize: task\.questionsPerStep × task\.groupSize .*≈ \d+ GB.*this machine has .*budget\.ignoreMemoryCheck/,
    );
    expect(mars.code).toBe(2);
    const huge = path.join(home, 'huge-llama.json');
    fs.writeFileSync(
      huge,
      JSON.stringify({
        vocab_size: 512,
        hidden_size: 8192,
        intermediate_size: 32768,
        num_hidden_layers: 64,
        num_attention_heads: 128,
        num_key_value_heads: 128,
        max_position_embeddings: 1024,
      }),
    );
    const init = await cli(['model', 'init', '--config', huge, '--out', path.join(home, 'huge-ckpt')]);
    expectCleanFailure(
      init,
      /68\.7e9 parameters need ≈ 1\.\d TB to initialise; this machine has .*--ignore-memory-check/,
    );
    expect(init.code).toBe(2);
    const wide = path.join(home, 'wide-llama.json');
    fs.writeFileSync(
      wide,
      JSON.stringify({
        vocab_size: 512,
        hidden_size: 1 << 20,
        intermediate_size: 64,
        num_hidden_layers: 1,
        num_attention_heads: 1,
        max_position_embeddings: 64,
      }),
    );
    expectCleanFailure(
      await cli(['model', 'init', '--config', wide, '--out', path.join(home, 'wide-ckpt')]),
      /field 'hidden_size' must be at most 8192, got 1048576/,
    );
  }, 120_000);

  it("errors about a file that is not JSON never quote the file's content", async () => {
    const secret = path.join(home, 'secret.txt');
    fs.writeFileSync(secret, 'sekrit-token-4f2a: do not print me');
    const r = await cli(['model', 'init', '--config', secret, '--out', path.join(home, 'never')]);
    expectCleanFailure(r, new RegExp(`--config ${secret}: not valid JSON`));
    expect(r.stderr).not.toMatch(/sekrit/);
  });

  it('a checkpoint of another architecture is refused when evaluated against a task it does not fit', async () => {
    const other = path.join(home, 'other-ckpt');
    expect((await cli(['model', 'init', '--config', 'micro', '--out', other])).code).toBe(0); // vocab 512, no run config
    expectCleanFailure(await cli(['eval', '--checkpoint', other, '--home', home]), /trainer_state\.json is missing/);
    fs.cpSync(path.join(runDir, 'checkpoints', '4', 'trainer_state.json'), path.join(other, 'trainer_state.json'));
    expectCleanFailure(await cli(['eval', '--checkpoint', other, '--home', home]), /vocab_size is 512.*needs 10/);
    const fromOther = await cli([
      'train',
      '--config',
      cfg,
      '--set',
      `model.from={"kind":"checkpoint","path":"${other}"}`,
      '--home',
      home,
    ]);
    expectCleanFailure(fromOther, /model\.from\.path .*vocab_size 512 does not match/);
  });

  it('eval --config/--preset with --set evaluates under that config; --set alone is refused', async () => {
    const ck = path.join(runDir, 'checkpoints', '4');
    const r = await cli([
      'eval',
      '--checkpoint',
      ck,
      '--config',
      cfg,
      '--set',
      'eval.temperature=1',
      '--set',
      'eval.items=5',
      '--json',
      '--home',
      home,
    ]);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { identity: Record<string, unknown>; metrics: Record<string, number> };
    expect(out.identity).toMatchObject({ temperature: 1, items: 5 });
    expect(out.metrics.accuracy).toBeGreaterThanOrEqual(0);
    expectCleanFailure(
      await cli(['eval', '--checkpoint', ck, '--set', 'eval.items=5', '--home', home]),
      /--set changes a preset's or config file's fields; add --preset NAME or --config FILE/,
    );
  });

  it('a run folder with a missing or corrupted run.json is named', async () => {
    const broken = path.join(home, 'runs', '20260101-000000-broken-0000');
    fs.mkdirSync(broken, { recursive: true });
    expectCleanFailure(await cli(['show', broken, '--home', home]), /no run|run\.json/);
    fs.writeFileSync(path.join(broken, 'run.json'), '{"id": "x", ');
    expectCleanFailure(await cli(['show', broken, '--home', home]), /run\.json/);
    expectCleanFailure(await cli(['resume', broken, '--home', home]), /run\.json/);
    const ls = await cli(['ls', '--home', home]);
    expect(ls.code).toBe(0); // one damaged folder does not break the listing
    expect(ls.stdout).toMatch(/broken.*corrupt/);
  });

  it('a second writer into a running run is refused by the lock, naming the process', async () => {
    const marker = path.join(home, 'blocked');
    const env = { MARS_LAB_FAULT_POINT: 'append', MARS_LAB_FAULT_HIT: '2', MARS_LAB_FAULT_MARKER: marker };
    const long = path.join(home, 'long.json');
    fs.writeFileSync(long, JSON.stringify(quickConfig({ steps: 50 })));
    let runId = '';
    const { child, exited } = spawnCli(
      ['train', '--config', long, '--home', home, '--json'],
      env,
      (l) => (runId ||= JSON.parse(l).runId),
    );
    while (!fs.existsSync(marker)) await new Promise((r) => setTimeout(r, 20));
    try {
      expectCleanFailure(
        await cli(['resume', runId, '--home', home]),
        new RegExp(`already being written by process ${child.pid}`),
      );
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    // once the writer is gone (killed), its stale lock is taken over and the run continues
    const after = await cli(['resume', runId, '--home', home, '--json']);
    expect(after.code).toBe(0);
  }, 60_000);
});
