/**
 * Compare for runs imported from verl (issue 18): they have no checkpoints, so compareCheckpoints cannot evaluate
 * them; compareRollouts pairs what they logged by prompt. On rollout dumps generated to verl's format
 * (tests/unit/interop/trainerFormats.ts) and imported with `import verl`, through callApi as a window calls it: the
 * shared prompts and each side's per-prompt mean score (checked by hand), McNemar's exact test when every paired score
 * is 0/1 and the paired bootstrap otherwise (engine/scoring/pairedStats.ts, the same numbers computed here), two steps of
 * one run, every step pooled, and one-line refusals (a step the run lacks, a run of another kind, a run with no
 * rollouts).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse } from '../../engine/api/contract/contract';
import { callApi } from '../../engine/api/host/dispatch';
import { createHost, type Host } from '../../engine/api/host/host';
import { nodeRunLauncher } from '../../engine/api/workers/runLauncher';
import { importMarti } from '../../engine/interop/import/marti';
import { importVerl } from '../../engine/interop/import/verl';
import { binomialHalfCdf, pairedBootstrap } from '../../engine/scoring/pairedStats';
import { Rng } from '../../engine/random/prng';
import {
  chatPrompt,
  martiCodePrompt,
  PyFloat,
  writeMartiCall,
  writeMartiScores,
  writeVerlStep,
  type VerlSample,
} from '../unit/interop/trainerFormats';

type Compared = ApiResponse<'compareRollouts'>;

let tmp: string;
let host: Host;
const api = <T>(method: string, params: unknown) => callApi(host.handlers, method, params) as Promise<T>;
const refusal = (method: string, params: unknown) =>
  api(method, params).then(
    () => 'answered',
    (e: unknown) => (e as Error).message,
  );

const Q = ['What is 6 × 7?', 'What is 2 + 3?', 'What is 10 − 4?', 'What is 9 / 3?', 'What is 5 × 5?'].map(chatPrompt);

/** One step's dump: for each [prompt index, scores], rollout.n samples of that prompt, interleaved as balance_batch leaves them. */
function step(groups: [number, number[]][]): VerlSample[] {
  const out: VerlSample[] = [];
  const n = Math.max(...groups.map(([, s]) => s.length));
  for (let k = 0; k < n; k++) {
    for (const [p, scores] of groups) {
      if (k >= scores.length) continue;
      out.push({
        input: Q[p]!,
        output: `sample ${k} #### ${scores[k]}`,
        gts: '42',
        score: new PyFloat(scores[k]!),
        extra: { acc: scores[k] === 1, data_source: 'openai/gsm8k' },
      });
    }
  }
  return out;
}

const ids: Record<string, string> = {};

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-cmpimp-'));
  const home = path.join(tmp, 'home');
  // Two verl runs of rollout.n = 4 on overlapping prompts (A: 0–3, B: 1–4), two steps each.
  writeVerlStep(
    path.join(tmp, 'a'),
    1,
    step([
      [0, [1, 0, 0, 0]],
      [1, [1, 1, 0, 0]],
      [2, [0, 0, 0, 0]],
      [3, [1, 1, 1, 1]],
    ]),
  );
  writeVerlStep(
    path.join(tmp, 'a'),
    2,
    step([
      [0, [1, 1, 0, 0]],
      [1, [1, 1, 1, 0]],
      [2, [0, 0, 0, 1]],
      [3, [1, 1, 1, 1]],
    ]),
  );
  writeVerlStep(
    path.join(tmp, 'b'),
    1,
    step([
      [1, [1, 1, 1, 1]],
      [2, [1, 0, 0, 0]],
      [3, [1, 1, 0, 1]],
      [4, [0, 0, 0, 0]],
    ]),
  );
  writeVerlStep(
    path.join(tmp, 'b'),
    2,
    step([
      [1, [1, 1, 1, 1]],
      [2, [1, 1, 0, 0]],
      [3, [1, 1, 1, 1]],
      [4, [1, 0, 0, 0]],
    ]),
  );
  // Two runs of one 0/1 sample per prompt (rollout.n = 1), for McNemar.
  writeVerlStep(
    path.join(tmp, 'c'),
    5,
    step([
      [0, [1]],
      [1, [0]],
      [2, [0]],
      [3, [1]],
      [4, [0]],
    ]),
  );
  writeVerlStep(
    path.join(tmp, 'd'),
    5,
    step([
      [0, [1]],
      [1, [1]],
      [2, [1]],
      [3, [0]],
      [4, [1]],
    ]),
  );
  for (const name of ['a', 'b', 'c', 'd']) {
    ids[name] = (await importVerl({ home, dir: path.join(tmp, name), id: `verl-${name}` })).id;
  }
  // two folders of another kind: seqgrpo groups, and a run that logged no rollouts
  for (const [name, lines] of [
    ['seq', [{ step: 1, kind: 'seqgrpo.group', input: 's1 s2', target: 's1 s2', rollouts: [{ reward: 1 }] }]],
    ['none', []],
  ] as const) {
    const dir = path.join(home, 'runs', name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'run.json'), '{}');
    fs.writeFileSync(path.join(dir, 'trajectories.jsonl'), lines.map((l) => JSON.stringify(l) + '\n').join(''));
  }
  // Two MARTI save_paths of one search per problem (3 calls: 3 nodes), the same two problems; one with the evaluation's
  // score CSVs, one without (a training log: no scores).
  for (const [name, scored] of [
    ['m1', [0, 1, 1, 0, 0, 0]],
    ['m2', [1, 1, 1, 0, 1, 0]],
    ['m3', null],
  ] as const) {
    const save = path.join(tmp, name);
    ['Add one to x.', 'Double x.'].forEach((problem, p) => {
      for (let k = 0; k < 3; k++) {
        writeMartiCall(save, p, {
          agentId: String(k % 2),
          messages: martiCodePrompt(problem),
          actionText: `\`\`\`python\ndef f(x):\n    return x + ${k}\n\`\`\``,
          actionTokens: [1, 2],
          actionLogProbs: null,
          stamp: `20261201_1200${p}${k}_000`,
        });
      }
    });
    if (scored) {
      writeMartiScores(
        save,
        'public',
        scored.map((v, i) => [Math.floor(i / 3), i % 3, v]),
      );
    }
    ids[name] = (await importMarti({ home, dir: save, id: `marti-${name}` })).id;
  }
  host = await createHost({ home, launcher: nodeRunLauncher(), transport: 'web' });
});
afterAll(async () => {
  await host?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const bootstrap = (a: number[], b: number[]) => {
  const rng = new Rng(0);
  return pairedBootstrap(a, b, { rng: () => rng.next() });
};

describe('compare imported runs on their logged rollouts', () => {
  it('lists the steps and kind an imported run can be compared on (it has no checkpoints)', async () => {
    const run = await api<{ checkpoints: unknown[] }>('getRun', { runId: ids.a, eventsLimit: 0 });
    expect(run.checkpoints).toEqual([]);
    expect(await api('rolloutSteps', { runId: ids.a })).toEqual({
      kind: 'mars.episode',
      steps: [1, 2],
      records: 32,
      skipped: 0,
    });
  });

  it('pairs two runs by shared prompt: per-prompt means, the paired bootstrap (not McNemar: means of 4 samples)', async () => {
    const r = await api<Compared>('compareRollouts', { a: { runId: ids.a, step: 1 }, b: { runId: ids.b, step: 1 } });
    // shared prompts 1, 2, 3: A 0.5, 0, 1; B 1, 0.25, 0.75
    const a = [0.5, 0, 1];
    const b = [1, 0.25, 0.75];
    expect(r).toMatchObject({
      kind: 'mars.episode',
      a: { runId: ids.a, step: 1, prompts: 4, samples: 16 },
      b: { runId: ids.b, step: 1, prompts: 4, samples: 16 },
      shared: 3,
      onlyA: 1,
      onlyB: 1,
      outcome: 'real',
      mcnemar: null,
    });
    expect(r.meanA).toBeCloseTo(0.5, 12);
    expect(r.meanB).toBeCloseTo(2 / 3, 12);
    expect(r.scoreDiff).toEqual(bootstrap(a, b));
    expect(r.scoreDiff!.meanDiff).toBeCloseTo(1 / 6, 12);
    // largest difference first: prompt 1 (+0.5), then 2 and 3 (±0.25)
    expect(r.prompts[0]).toMatchObject({ text: Q[1], a: { mean: 0.5, n: 4 }, b: { mean: 1, n: 4 } });
    const rest = new Map(r.prompts.slice(1).map((p) => [p.text, [p.a.mean, p.b.mean]]));
    expect(rest).toEqual(
      new Map([
        [Q[2], [0, 0.25]],
        [Q[3], [1, 0.75]],
      ]),
    );
  });

  it('compares two steps of one run, and every step pooled', async () => {
    const steps = await api<Compared>('compareRollouts', {
      a: { runId: ids.a, step: 1 },
      b: { runId: ids.a, step: 2 },
    });
    expect(steps).toMatchObject({ shared: 4, onlyA: 0, onlyB: 0, outcome: 'real' });
    // prompt 0: 0.25 → 0.5, 1: 0.5 → 0.75, 2: 0 → 0.25, 3: 1 → 1
    expect(steps.scoreDiff).toEqual(bootstrap([0.25, 0.5, 0, 1], [0.5, 0.75, 0.25, 1]));
    const pooled = await api<Compared>('compareRollouts', { a: { runId: ids.a }, b: { runId: ids.b } });
    expect(pooled).toMatchObject({
      a: { step: null, prompts: 4, samples: 32 },
      b: { step: null, prompts: 4, samples: 32 },
      shared: 3,
    });
    // prompt 1: A 5/8, B 8/8; 2: A 1/8, B 3/8; 3: A 8/8, B 7/8
    expect(pooled.scoreDiff).toEqual(bootstrap([5 / 8, 1 / 8, 1], [1, 3 / 8, 7 / 8]));
  });

  it('uses McNemar when every paired score is 0 or 1', async () => {
    const r = await api<Compared>('compareRollouts', { a: { runId: ids.c }, b: { runId: ids.d } });
    // c: 1 0 0 1 0, d: 1 1 1 0 1 → wrong→right 3 (n01), right→wrong 1 (n10)
    expect(r).toMatchObject({ shared: 5, outcome: 'binary', mcnemar: { n01: 3, n10: 1 } });
    expect(r.mcnemar!.pValue).toBeCloseTo(Math.min(1, 2 * binomialHalfCdf(1, 4)), 12);
    expect(r.mcnemar!.pValue).toBeCloseTo(0.625, 12);
    expect(r.scoreDiff).toEqual(bootstrap([1, 0, 0, 1, 0], [1, 1, 1, 0, 1]));
  });

  it('pairs imported MARTI search trees by task: the mean score of each tree’s nodes', async () => {
    const r = await api<Compared>('compareRollouts', { a: { runId: ids.m1 }, b: { runId: ids.m2 } });
    // task 0: m1 nodes 0 1 1, m2 1 1 1; task 1: m1 0 0 0, m2 0 1 0
    expect(r).toMatchObject({ kind: 'marti.tree', shared: 2, onlyA: 0, onlyB: 0, outcome: 'real', mcnemar: null });
    expect(r.a).toMatchObject({ prompts: 2, samples: 6 });
    expect(r.scoreDiff).toEqual(bootstrap([2 / 3, 0], [1, 1 / 3]));
    // task 1 moved most (+1/3 for both: then by key); each listed with its problem statement
    expect(r.prompts.map((p) => [/Add one to x\.|Double x\./.exec(p.text)?.[0], p.a.n, p.b.n]).sort()).toEqual([
      ['Add one to x.', 3, 3],
      ['Double x.', 3, 3],
    ]);
    expect(await refusal('compareRollouts', { a: { runId: ids.m1 }, b: { runId: ids.m3 } })).toBe(
      `run ${ids.m3}: none of its 2 marti.tree records has a score to pair (MARTI writes node scores only when it evaluates: import a save_path with all_public_scores.csv)`,
    );
  });

  it('refuses in one line what it cannot pair', async () => {
    const cases: [unknown, RegExp][] = [
      [
        { a: { runId: ids.a, step: 3 }, b: { runId: ids.b } },
        new RegExp(`^run ${ids.a} has no rollouts at step 3 \\(it has steps 1, 2\\)$`),
      ],
      [{ a: { runId: 'no-such-run' }, b: { runId: ids.b } }, /^no run 'no-such-run' in /],
      [
        { a: { runId: ids.a }, b: { runId: 'seq' } },
        new RegExp(
          `^run ${ids.a} logged mars\\.episode records and run seq seqgrpo\\.group: rollouts pair only within one kind$`,
        ),
      ],
      [{ a: { runId: 'none' }, b: { runId: ids.b } }, /^run none logged no rollouts this view reads/],
      [{ a: { runId: '../x' }, b: { runId: ids.b } }, /^compareRollouts: invalid request \(a\.runId: /],
    ];
    for (const [request, want] of cases) {
      const message = await refusal('compareRollouts', request);
      expect(message, JSON.stringify(request)).toMatch(want);
      expect(message.split('\n')).toHaveLength(1);
    }
  });
});
