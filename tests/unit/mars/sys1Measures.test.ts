/**
 * What System 1 does, measured (engine/mars/sys1Measures.ts, issue 17): support sentences are the sentences that state a
 * question's hops; the shares of System 1 outputs and <info> blocks holding the gold answer or a support sentence; the
 * purpose-stripped ablation (System 1 prompted without System 2's purpose); and that evaluation logs these figures,
 * equal to what its own episode records show.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint } from '../../../engine/model/formats/checkpoint';
import type { LlamaModel } from '../../../engine/model/llama';
import type { MarsConfig } from '../../../engine/mars/configSchema';
import { MarsFormat, marsTokenizer } from '../../../engine/mars/format';
import { readFact } from '../../../engine/mars/questions';
import {
  rolloutBatch,
  type MarsRolloutSettings,
  type RolloutQuestion,
  type Trajectory,
} from '../../../engine/mars/rollout';
import { containsTokens, supportSentences, sys1Stats } from '../../../engine/mars/sys1Measures';
import { evaluateMars } from '../../../engine/mars/evaluate';
import { marsFormat } from '../../../engine/mars/questionSets';
import { mars } from '../../../engine/mars/trainer';
import { generateWorld } from '../../../engine/mars/world';
import type { MarsEpisodeRecord } from '../../../engine/records/mars';
import { Rng } from '../../../engine/random/prng';
import { resolvePresetConfig } from '../../../engine/runs/presets/presets';
import { useBackend } from '../../helpers/backends';
import { tinyModel } from '../../helpers/tinyModel';

describe('support sentences', () => {
  it('one per hop, a sentence of the hop’s page that states the hop’s fact with the value the chain reaches', () => {
    const w = generateWorld(2);
    const pagesById = new Map(w.pages.map((p) => [p.id, p]));
    const names = new Map(w.entities.map((e) => [e.id, e.name]));
    let hops = 0;
    for (const q of w.questions) {
      const ss = supportSentences(q, pagesById, names);
      expect(ss.length).toBe(q.chain.length);
      ss.forEach((s, i) => {
        expect(s).not.toBeNull();
        const page = pagesById.get(q.support[i]!)!;
        expect(containsTokens(page.text, s!)).toBe(true);
        expect(s!.endsWith(' .')).toBe(true);
        const f = q.chain[i]!;
        const forward = q.compare !== undefined || f.subject === page.entityId;
        expect(readFact(s!, f.relation, forward ? 'forward' : 'inverse', page.title).length).toBe(1);
        hops++;
      });
    }
    expect(hops).toBeGreaterThan(100);
  });

  it('containment is of whole tokens', () => {
    expect(containsTokens('vorana was born in tessel .', 'born in tessel')).toBe(true);
    expect(containsTokens('vorana was born in tesselby .', 'born in tessel')).toBe(false);
    expect(containsTokens('anything', '')).toBe(false);
  });
});

describe('System 1 stats over trajectories', () => {
  const WORDS = ['alma', 'born', 'in', 'tessa', 'was', '.', 'city', 'oslo'];
  const format = new MarsFormat(marsTokenizer(WORDS));
  const enc = (t: string) => format.encode(t);
  const q: RolloutQuestion = {
    id: 'q',
    family: 'direct',
    text: 'alma born',
    answers: ['tessa'],
    env: { search: () => [] },
    supportSentences: ['alma was born in tessa .'],
  };
  const call = (text: string) => ({
    pages: [],
    used: 0,
    prompt: [],
    output: [...enc(text), format.ids.eos],
    logProbs: [],
  });
  const turn = (outputs: string[], info: string) => ({
    tokens: [],
    logProbs: [],
    query: 'alma',
    purpose: null,
    answer: null,
    results: [{ id: 'p', length: 10 }],
    sys1: outputs.map(call),
    capacity: 20,
    info: [format.ids.info, ...enc(info), format.ids.infoEnd],
  });
  const traj = (turns: ReturnType<typeof turn>[], question = q) =>
    ({ question, turns, tokens: [], lossMask: [], behaviourLogProbs: [] }) as unknown as Trajectory;

  it('counts outputs holding the answer, a support sentence, their length, and <info> blocks holding them', () => {
    const st = sys1Stats(
      [
        traj([turn(['alma was born in tessa .', 'tessa city .'], 'alma was born in tessa .')]),
        traj([turn(['oslo city .', 'alma was born'], 'oslo city .')]),
        // a question without support sentences (a user's corpus) is left out
        traj([turn(['tessa'], 'tessa')], { ...q, supportSentences: undefined }),
      ],
      (id) => format.decode([id]),
    );
    expect(st.outputs).toBe(4);
    expect(st.goldAnswerShare).toBe(2 / 4);
    expect(st.supportShare).toBe(1 / 4);
    expect(st.outputTokens).toBe((7 + 4 + 4 + 4) / 4);
    expect(st.searches).toBe(2);
    expect(st.infoGoldAnswerShare).toBe(1 / 2);
    expect(st.infoSupportShare).toBe(1 / 2);
  });
});

describe('the purpose-stripped ablation', () => {
  const WORDS = ['alma', 'born', 'in', 'tessa', '.', 'city'];
  const format = new MarsFormat(marsTokenizer(WORDS));
  const PAGES = [
    { id: 'p1', text: 'alma born in tessa . alma born in tessa .' },
    { id: 'p2', text: 'tessa city . tessa city .' },
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
    topK: 2,
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
  beforeAll(async () => {
    await useBackend('wasm');
    model = tinyModel(4, { vocab_size: format.tokenizer.vocabSize, max_position_embeddings: 512 }, 0.02);
  });

  it('System 1 sees its template and the pages only; without the switch it sees the purpose', async () => {
    const run = (stripPurpose: boolean) =>
      rolloutBatch(
        { sys2: model, sys1: model },
        format,
        Array.from({ length: 32 }, () => question),
        { ...settings, stripPurpose },
        new Rng(11),
      );
    const calls = (ts: Trajectory[]) => ts.flatMap((t) => t.turns.flatMap((u) => u.sys1));
    const given = calls(await run(false));
    const stripped = calls(await run(true));
    expect(given.length).toBeGreaterThan(0);
    expect(stripped.length).toBeGreaterThan(0);
    // missingPurpose 'query': every search has a non-empty query, so every System 1 prompt carries a purpose
    expect(given.every((c) => c.prompt[2] !== format.ids.sep)).toBe(true);
    for (const c of stripped) expect(c.prompt.slice(0, 3)).toEqual(format.sys1Head([]));
  });
});

describe('evaluation logs System 1 measures, and the purpose-stripped figures when asked', () => {
  it('its figures are those of its own episode records', async () => {
    await useBackend('wasm');
    const cfg = resolvePresetConfig('mars-ablations', [
      'eval.items=14',
      'task.evalWorlds=1',
      'mars.evalPurposeStripped=true',
    ]) as MarsConfig;
    const { model } = await loadCheckpoint('resources/mars/base-tiny');
    try {
      const ev = await evaluateMars(cfg, model, model);
      const m = ev.metrics;
      for (const k of [
        'sys1GoldAnswerShare',
        'sys1SupportShare',
        'sys1OutputTokens',
        'infoSupportShare',
        'purposeStripped.exactMatch',
        'purposeStripped.sys1GoldAnswerShare',
        'purposeStripped.sys1OutputTokens',
      ]) {
        expect(Number.isFinite(m[k]), k).toBe(true);
      }
      // recount from the records: each bin's output (decoded) holds the gold answer as whole tokens
      const recs = ev.items.map((i) => i.record as MarsEpisodeRecord);
      const outs = recs.flatMap((r) =>
        r.turns.flatMap((u) => u.bins.map((b) => ({ out: b.outputTokens.join(' '), gold: r.gold[0]! }))),
      );
      expect(outs.length).toBeGreaterThan(0);
      expect(m.sys1GoldAnswerShare).toBeCloseTo(
        outs.filter((o) => containsTokens(o.out, o.gold)).length / outs.length,
        12,
      );
      expect(m.sys1OutputTokens).toBeCloseTo(
        recs.flatMap((r) => r.turns.flatMap((u) => u.bins.map((b) => b.outputTokens.length))).reduce((a, b) => a + b) /
          outs.length,
        12,
      );
      expect(marsFormat().tokenizer.vocabSize).toBe(model.config.vocab_size);
    } finally {
      model.dispose();
    }
  }, 300_000);
});

describe('the purpose-stripped ablation in the evaluation identity', () => {
  it('a cached evaluation without its figures does not answer for one with them; off, the identity is as before', () => {
    const cfg = resolvePresetConfig('mars-overflow') as MarsConfig;
    const off = mars.evalIdentity({ ...cfg, mars: { ...cfg.mars, evalPurposeStripped: false } });
    const on = mars.evalIdentity({ ...cfg, mars: { ...cfg.mars, evalPurposeStripped: true } });
    expect(on).not.toEqual(off);
    expect(Object.keys(off)).not.toContain('purposeStripped');
  });
});
