/**
 * The dual-system rollout (docs/algorithms.md §2.2) with a random tiny policy over a tiny vocabulary, so that System 2's
 * random turns often open and close a search: masks (§7.4), the <info> splice, bins and System 1 calls, and that a
 * System 2 sample's loss has exactly zero gradient on System 1's tokens (§7.5).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseLlamaConfig } from '../../../engine/model/config';
import { initHfTensors, modelFromHf } from '../../../engine/model/formats/hfWeights';
import type { LlamaModel } from '../../../engine/model/llama';
import { MarsFormat, marsTokenizer } from '../../../engine/mars/format';
import {
  rolloutBatch,
  type MarsRolloutSettings,
  type RolloutQuestion,
  type Trajectory,
} from '../../../engine/mars/rollout';
import { episodeStats } from '../../../engine/mars/episodes';
import { Rng } from '../../../engine/random/prng';
import { policyLoss } from '../../../engine/rl/losses';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';

const WORDS = ['alma', 'born', 'in', 'tessa', '.', 'city'];
const format = new MarsFormat(marsTokenizer(WORDS));
const PAGES = [
  { id: 'p1', text: 'alma born in tessa . alma born in tessa .' },
  { id: 'p2', text: 'tessa city . tessa city . tessa city . tessa city .' },
  { id: 'p3', text: 'city .' },
];
const question: RolloutQuestion = {
  id: 'q1',
  family: 'direct',
  text: 'alma born in',
  answers: ['tessa'],
  env: { search: (_q, k) => PAGES.slice(0, k) },
};
const settings: MarsRolloutSettings = {
  maxTurns: 3,
  topK: 3,
  sys1PromptMax: 24,
  sys1ResponseMax: 6,
  sys2PromptMax: 16,
  sys2ResponseMax: 200,
  sys2TurnMax: 12,
  purposeMax: 4,
  sepCost: 1,
  rawInfoBudget: 10,
  packing: 'ffd',
  sys1: 'on',
  missingPurpose: 'query',
  temperature: 1,
  topP: 1,
};

let model: LlamaModel;
let trajs: Trajectory[];
beforeAll(async () => {
  await useBackend('wasm');
  const cfg = parseLlamaConfig({
    vocab_size: format.tokenizer.vocabSize,
    hidden_size: 16,
    intermediate_size: 32,
    num_hidden_layers: 1,
    num_attention_heads: 2,
    num_key_value_heads: 1,
    max_position_embeddings: 512,
  });
  const rng = new Rng(4);
  model = modelFromHf(
    cfg,
    initHfTensors(cfg, () => rng.normal(), 0.02),
  );
  trajs = await rolloutBatch(
    { sys2: model, sys1: model },
    format,
    Array.from({ length: 48 }, () => question),
    settings,
    new Rng(11),
  );
});

/** Spans of inserted <info>…</info> blocks in a System 2 sequence (environment tokens). */
function infoSpans(t: Trajectory): [number, number][] {
  const spans: [number, number][] = [];
  let pos = t.promptLength;
  for (const turn of t.turns) {
    pos += turn.tokens.length;
    if (turn.info.length) spans.push([pos, pos + turn.info.length]);
    pos += turn.info.length;
  }
  return spans;
}

describe('MARS rollout', () => {
  it('searches happen, their pages are packed into System 1 windows, and System 1 outputs are spliced as <info>', () => {
    const searched = trajs.flatMap((t) => t.turns.filter((u) => u.sys1.length > 0));
    expect(searched.length).toBeGreaterThan(0); // the fixed seed makes some random turns well-formed searches
    for (const turn of searched) {
      expect(turn.results.map((r) => r.id)).toEqual(['p1', 'p2', 'p3']);
      // every page is in exactly one bin, no bin exceeds the window
      const placed = turn.sys1.flatMap((c) => c.pages.map((p) => p.id)).sort();
      expect(placed).toEqual(['p1', 'p2', 'p3']);
      for (const c of turn.sys1) {
        expect(c.prompt.length).toBeLessThanOrEqual(settings.sys1PromptMax);
        expect(c.prompt[1]).toBe(format.ids.sys1);
        expect(c.output.length).toBeLessThanOrEqual(settings.sys1ResponseMax);
      }
      const expected = format.infoBlock(turn.sys1.map((c) => c.output.filter((id) => id !== format.ids.eos)));
      expect(turn.info).toEqual(expected);
    }
  });

  it('searchesPerQuestion counts the searches that ran: a <search> on the last turn runs none (issue 32, defect 1)', async () => {
    let calls = 0;
    const counting: RolloutQuestion = { ...question, env: { search: (q, k) => (calls++, question.env.search(q, k)) } };
    const rows = Array.from({ length: 48 }, () => counting);
    // maxTurns 0: the only turn is the last, in which only an answer counts
    const last = await rolloutBatch(
      { sys2: model, sys1: model },
      format,
      rows,
      { ...settings, maxTurns: 0 },
      new Rng(11),
    );
    const closed = last.flatMap((t) => t.turns).filter((u) => u.query !== null);
    expect(closed.length).toBeGreaterThan(0); // the same seed's first turns include closed searches (test above)
    expect(calls).toBe(0);
    expect(closed.every((u) => !u.searched && u.results.length === 0)).toBe(true);
    expect(episodeStats(last).searchesPerQuestion).toBe(0);
    // with tool turns, the count is the number of searches the environment ran
    calls = 0;
    const tools = await rolloutBatch({ sys2: model, sys1: model }, format, rows, settings, new Rng(11));
    expect(calls).toBeGreaterThan(0);
    expect(episodeStats(tools).searchesPerQuestion).toBeCloseTo(calls / rows.length, 12);
  });

  it('the oracle System 1 answers each window with the support sentences its pages hold, and nothing else (issue 32)', async () => {
    const support = 'alma born in tessa .';
    const known: RolloutQuestion = { ...question, supportSentences: [support, 'tessa city .'] };
    const rows = Array.from({ length: 48 }, () => known);
    const trajs = await rolloutBatch(
      { sys2: model, sys1: null },
      format,
      rows,
      { ...settings, sys1: 'oracle' },
      new Rng(11),
    );
    const windows = trajs.flatMap((t) => t.turns).flatMap((u) => u.sys1);
    expect(windows.length).toBeGreaterThan(0);
    let withP1 = 0;
    for (const w of windows) {
      const text = w.output
        .filter((id) => id !== format.ids.eos)
        .map((id) => format.decode([id]))
        .join(' '); // token form
      const ids = w.pages.map((p) => p.id);
      // p1 states the first sentence (twice: said once), p2 the second; p3 neither; a window's order is its pages'
      const want = ids.flatMap((id) => (id === 'p1' ? [support] : id === 'p2' ? ['tessa city .'] : []));
      expect(text).toBe(want.join(' '));
      expect(w.output.at(-1)).toBe(format.ids.eos);
      if (ids.includes('p1')) withP1++;
    }
    expect(withP1).toBeGreaterThan(0);
    for (const u of trajs.flatMap((t) => t.turns).filter((x) => x.sys1.length > 0)) {
      expect(u.info).toEqual(format.infoBlock(u.sys1.map((c) => c.output.filter((id) => id !== format.ids.eos))));
    }
  });

  it('System 2 mask: 0 on the prompt and on every <info> block (inclusive), 1 on every System 2 token (§7.4)', () => {
    for (const t of trajs) {
      expect(t.tokens.length).toBe(t.lossMask.length);
      expect(t.lossMask.slice(0, t.promptLength).every((m) => m === 0)).toBe(true);
      const env = new Set(infoSpans(t).flatMap(([a, b]) => [...Array(b - a).keys()].map((i) => a + i)));
      for (let i = t.promptLength; i < t.tokens.length; i++) expect(t.lossMask[i]).toBe(env.has(i) ? 0 : 1);
      for (const [a, b] of infoSpans(t)) {
        expect(t.tokens[a]).toBe(format.ids.info);
        expect(t.tokens[b - 1]).toBe(format.ids.infoEnd);
      }
    }
  });

  it("System 2's recorded log-probs (one KV cache across turns) equal a full forward over its whole sequence", async () => {
    const sample = trajs.filter((t) => t.turns.some((u) => u.info.length > 0)).slice(0, 6);
    const lp = tf.tidy(() => tokenLogProbs(model, padBatch(sample.map((t) => t.tokens))).logp);
    const full = await lp.array();
    lp.dispose();
    sample.forEach((t, b) => {
      for (let i = 0; i < t.tokens.length; i++) {
        if (t.lossMask[i]) expect(Math.abs(t.behaviourLogProbs[i]! - full[b]![i]!)).toBeLessThan(1e-4);
      }
    });
  });

  it('a malformed or unanswered trajectory gets reward 0; reward is exact match only on an answer', () => {
    for (const t of trajs) {
      if (t.end !== 'answer') expect(t.reward).toBe(0);
      else expect(t.reward).toBe(t.answer!.trim() === 'tessa' ? 1 : 0);
      expect(t.turns.length).toBeLessThanOrEqual(settings.maxTurns + 1);
    }
  });

  it('the System 2 loss has exactly zero gradient at System 1 and prompt positions (§7.5)', () => {
    const t = trajs.find((x) => x.turns.some((u) => u.sys1.length > 0))!;
    const T = t.tokens.length;
    const logp = tf.variable(tf.randomNormal([1, T], -1, 0.3));
    const { grads } = tf.variableGrads(() => {
      const pl = policyLoss(
        { logp, oldLogp: tf.sub(logp, 0.05), mask: tf.tensor2d([t.lossMask]), advantages: tf.tensor1d([1.3]) },
        { kind: 'ppoToken' },
      );
      pl.dispose();
      return pl.loss;
    }, [logp]);
    const g = grads[logp.name]!.dataSync();
    for (let i = 0; i < T; i++) {
      if (t.lossMask[i] === 0) expect(g[i]).toBe(0);
      else expect(g[i]).not.toBe(0);
    }
    tf.dispose([logp, ...Object.values(grads)]);
  });

  it('System 1 off: raw pages, truncated to rawInfoBudget, go straight into <info>', async () => {
    const off = await rolloutBatch(
      { sys2: model, sys1: null },
      format,
      Array.from({ length: 48 }, () => question),
      { ...settings, sys1: 'off' },
      new Rng(11),
    );
    const turns = off.flatMap((t) => t.turns.filter((u) => u.results.length > 0));
    expect(turns.length).toBeGreaterThan(0);
    for (const u of turns) {
      expect(u.sys1).toEqual([]);
      expect(u.info).toEqual([
        format.ids.info,
        ...PAGES.flatMap((p) => format.encode(p.text)).slice(0, settings.rawInfoBudget),
        format.ids.infoEnd,
      ]);
    }
  });
});
