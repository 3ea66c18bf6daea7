/**
 * `import verl`: rollout dumps generated to verl's format (trainerFormats.ts) and one hand-made damaged dump become a
 * run folder whose groups are rebuilt by identical prompt and whose advantages are verl's GRPO, recomputed; the run
 * opens through the run index the app uses, and its records are the ones the app's views read.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { importVerl } from '../../../engine/interop/import/verl';
import { trajectoryLineSchema, metricsLineSchema } from '../../../engine/records';
import { readJsonl } from '../../../engine/runs/folder/jsonl';
import { readRunMeta } from '../../../engine/runs/folder/runFolder';
import { openRunIndex } from '../../../engine/runs/summary/runIndex';
import { UserError } from '../../../engine/base/userError';
import { chatPrompt, PyFloat, writeVerlFileLogger, writeVerlStep, type VerlSample } from './trainerFormats';

let tmp: string;
let home: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-verl-'));
  home = path.join(tmp, 'home');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

type Line = Record<string, unknown> & {
  step: number;
  questionId: string;
  reward: number;
  advantage: number;
  question: string;
};
const lines = (dir: string) => readJsonl<Line>(path.join(dir, 'trajectories.jsonl')).records;

/** verl's GRPO advantage, written out: (r − mean) / (torch.std + 1e-6); a lone sample has mean 0 and std 1. */
function grpo(scores: number[]): number[] {
  if (scores.length === 1) return [scores[0]! / (1 + 1e-6)];
  const mean = scores.reduce((a, b) => a + b, 0) / scores.length;
  const std = Math.sqrt(scores.reduce((a, b) => a + (b - mean) ** 2, 0) / (scores.length - 1));
  return scores.map((s) => (std === 0 ? 0 : (s - mean) / (std + 1e-6)));
}

describe('import verl', () => {
  it('rebuilds groups by identical prompt (balance_batch interleaves them) and recomputes GRPO advantages', async () => {
    const dump = path.join(tmp, 'rollouts');
    const q = [
      chatPrompt('Natalia sold clips to 48 friends in April, and half as many in May. How many in all?'),
      chatPrompt('What is 6 × 7?'),
    ];
    const scores = [
      [1, 0, 0, 1],
      [0, 0, 0, 1],
    ];
    const make = (step: number): VerlSample[] => {
      const s: VerlSample[] = [];
      // interleaved, as balance_batch leaves them: rows of one group are not adjacent
      for (let k = 0; k < 4; k++) {
        for (let p = 0; p < 2; p++) {
          const score = step === 2 ? 1 : scores[p]![k]!;
          s.push({
            input: q[p]!,
            output: `answer ${k} to ${p} #### ${score ? (p ? 42 : 72) : 0} — done`,
            gts: p ? '42' : '72',
            score: new PyFloat(score),
            extra: { acc: score === 1, pred: String(k), data_source: 'openai/gsm8k' },
          });
        }
      }
      return s;
    };
    writeVerlStep(dump, 1, make(1));
    writeVerlStep(dump, 2, make(2));
    const r = await importVerl({ home, dir: dump });
    expect(r.records).toBe(16);
    expect(r.skipped).toBe(0);

    const recs = lines(r.dir);
    expect(recs).toHaveLength(16);
    for (const rec of recs) expect(trajectoryLineSchema.safeParse(rec).success).toBe(true);
    const step1 = recs.filter((x) => x.step === 1);
    const groups = new Map<string, Line[]>();
    for (const x of step1) groups.set(x.questionId, [...(groups.get(x.questionId) ?? []), x]);
    expect([...groups.values()].map((g) => g.length)).toEqual([4, 4]);
    for (const [p, g] of [...groups.values()].entries()) {
      expect(g[0]!.question).toBe(q[p]);
      expect(g.map((x) => x.reward)).toEqual(scores[p]);
      const want = grpo(scores[p]!);
      g.forEach((x, k) => expect(x.advantage).toBeCloseTo(want[k]!, 9));
      expect(g.every((x) => x['advantageRecomputed'] === true)).toBe(true);
    }
    // the same prompt at the next step is the same question (compare across steps), and all-equal groups get 0
    expect(new Set(recs.map((x) => x.questionId)).size).toBe(2);
    expect(recs.filter((x) => x.step === 2).every((x) => x.advantage === 0)).toBe(true);
    // the response is shown as text pieces that join back to it; gold and the answer come from gts and pred
    const first = recs[0]!;
    const turn = (first['turns'] as { text: string; tokens: string[] }[])[0]!;
    expect(turn.tokens.join('')).toBe(turn.text);
    expect(turn.text).toContain('—');
    expect(first['gold']).toEqual(['72']);
    expect(first['family']).toBe('openai/gsm8k');

    const meta = readRunMeta(r.dir) as ReturnType<typeof readRunMeta> & { imported: Record<string, unknown> };
    expect(meta.algorithm).toBe('verl');
    expect(meta.status).toBe('finished');
    expect(meta.imported['advantages']).toMatchObject({ recomputed: true, method: 'grpo', eps: 1e-6 });
    // the run layer the app uses lists it, with the per-step reward the charts draw
    const listed = openRunIndex(home)
      .list()
      .find((x) => x.id === r.id);
    expect(listed?.algorithm).toBe('verl');
    expect(listed?.steps).toBe(2);
    const metrics = readJsonl<Record<string, number>>(path.join(r.dir, 'metrics.jsonl')).records;
    expect(metrics.map((m) => m['reward'])).toEqual([0.375, 1]);
    for (const m of metrics) expect(metricsLineSchema.safeParse(m).success).toBe(true);
  });

  it("merges verl's file-logger metrics by step, including steps the dump lacks, in step order", async () => {
    const root = path.join(tmp, 'exp');
    writeVerlStep(path.join(root, 'rollouts'), 2, [{ input: 'p', output: 'a', gts: 'x', score: 1 }]);
    writeVerlFileLogger(path.join(root, 'metrics.jsonl'), [
      { step: 1, elapsed: 10, data: { 'critic/score/mean': new PyFloat(0.25), 'actor/pg_loss': -0.01 } },
      { step: 2, elapsed: 25, data: { 'critic/score/mean': new PyFloat(0.5), 'actor/pg_loss': 0.02 } },
    ]);
    const r = await importVerl({ home, dir: root });
    const metrics = readJsonl<Record<string, number>>(path.join(r.dir, 'metrics.jsonl')).records;
    expect(metrics.map((m) => m.step)).toEqual([1, 2]);
    expect(metrics[0]!['critic/score/mean']).toBe(0.25);
    expect(metrics[1]!['actor/pg_loss']).toBe(0.02);
    expect(metrics[1]!['reward']).toBe(1);
    // the logger-only step is placed 15 s before the file's last line
    expect(metrics[1]!.time! - metrics[0]!.time!).toBeGreaterThan(0);
    for (const m of metrics) expect(metricsLineSchema.safeParse(m).success).toBe(true);
  });

  it("reads verl main's orjson file logger (compact, no elapsed_seconds)", async () => {
    const root = path.join(tmp, 'exp2');
    writeVerlStep(path.join(root, 'rollouts'), 1, [{ input: 'p', output: 'a', gts: 'x', score: 0 }]);
    writeVerlFileLogger(path.join(root, 'logs', 'mars-lab', 'run.jsonl'), [
      { step: 1, data: { 'critic/score/mean': 0, 'perf/throughput': 1234.5 } },
    ]);
    expect(fs.readFileSync(path.join(root, 'logs', 'mars-lab', 'run.jsonl'), 'utf8')).toBe(
      '{"step":1,"data":{"critic/score/mean":0,"perf/throughput":1234.5}}\n',
    );
    const r = await importVerl({ home, dir: root });
    const metrics = readJsonl<Record<string, number>>(path.join(r.dir, 'metrics.jsonl')).records;
    expect(metrics[0]!['perf/throughput']).toBe(1234.5);
    expect(metrics[0]!['reward']).toBe(0);
  });

  it('a damaged dump: one warning per bad line naming file and line, the rest imported (hand-made file)', async () => {
    const warnings: string[] = [];
    const r = await importVerl({
      home,
      dir: path.resolve('tests/fixtures/interop/verl-damaged'),
      onWarning: (w) => warnings.push(w),
    });
    expect(warnings).toHaveLength(4);
    expect(warnings[0]).toMatch(/^7\.jsonl:2: not JSON/);
    expect(warnings[1]).toMatch(/^7\.jsonl:3: not JSON/);
    expect(warnings[2]).toMatch(/^7\.jsonl:4: "output"/);
    expect(warnings[3]).toMatch(/^7\.jsonl:6: "score" is NaN/);
    const recs = lines(r.dir);
    expect(recs.map((x) => x.reward)).toEqual([1, 0, 1]);
    // lines 1 and 5 share the prompt: a group of 2; the prime question is a group of one (verl: mean 0, std 1)
    expect(recs[0]!.advantage).toBeCloseTo(0.5 / (Math.SQRT1_2 + 1e-6), 9);
    expect(recs[1]!.advantage).toBeCloseTo(-0.5 / (Math.SQRT1_2 + 1e-6), 9);
    expect(recs[2]!.advantage).toBeCloseTo(1 / (1 + 1e-6), 9);
    expect(recs[2]!['gold']).toEqual(['2', '3', '5', '7']);
    // the warnings are in the run's events, where the app's run page lists them
    const events = readJsonl<Record<string, unknown>>(path.join(r.dir, 'events.jsonl')).records;
    expect(events.filter((e) => e['type'] === 'warning')).toHaveLength(4);
  });

  it('reads Python NaN in reward extras, and refuses a folder with no dumps in one line naming the setting', async () => {
    const dump = path.join(tmp, 'd');
    writeVerlStep(dump, 3, [{ input: 'q', output: 'o', gts: null, score: 0.5, extra: { acc: NaN } }]);
    const r = await importVerl({ home, dir: dump });
    expect(lines(r.dir)[0]!.reward).toBe(0.5);
    const empty = path.join(tmp, 'empty');
    fs.mkdirSync(empty);
    await expect(importVerl({ home, dir: empty })).rejects.toThrow(UserError);
    await expect(importVerl({ home, dir: empty })).rejects.toThrow(/trainer\.rollout_data_dir/);
    // nothing half-made is left in the home
    expect(fs.readdirSync(path.join(home, 'runs')).filter((n) => n.startsWith('.'))).toEqual([]);
  });
});
