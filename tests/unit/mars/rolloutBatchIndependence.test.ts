/**
 * Issue 17, fix 1: a MARS trajectory does not depend on what it is batched with. The rollout used to cap every row's
 * System 2 turn at the smallest remaining budget of all live trajectories, so one long episode cut other questions'
 * turns short (a cut turn parses as malformed and zeroes the reward); in evaluation that is the whole held-out set.
 *
 * Random streams: the sampler draws every row's tokens from one shared `tokens` stream, in row order (docs/algorithms.md
 * "one seeded PRNG per run, split into named streams for tokens, …"), so at temperature > 0 the numbers a row draws
 * depend on the rows before it by design; only its distribution is batch-free. So the episode comparison decodes
 * greedily (temperature 0), where a row's output is a function of its own tokens only. The sampled probe (temperature
 * 1, like the issue's 48-trajectory probe) checks instead that no turn is ever cut by another row's budget.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseLlamaConfig } from '../../../engine/model/config';
import { initHfTensors, modelFromHf } from '../../../engine/model/formats/hfWeights';
import type { ForwardInput, LlamaModel } from '../../../engine/model/llama';
import { MarsFormat, marsTokenizer } from '../../../engine/mars/format';
import {
  rolloutBatch,
  type MarsRolloutSettings,
  type RolloutQuestion,
  type Trajectory,
} from '../../../engine/mars/rollout';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';

const WORDS = ['alma', 'born', 'in', 'tessa', '.', 'city', 'x'];
const format = new MarsFormat(marsTokenizer(WORDS));
const id = (w: string) => format.encode(w)[0]!;
const I = format.ids;

/**
 * A scripted System 2 policy with the model's forward contract: the next token is a function of the row's real
 * tokens (its question, how many <info> blocks it has seen, how far into the current turn it is). Its "KV cache" holds
 * the token ids, so the rollout's one-cache-across-turns session drives it exactly as it drives a real model.
 */
function scriptedPolicy(script: (question: number[], turn: number) => number[]): LlamaModel {
  const V = format.tokenizer.vocabSize;
  const next = (seq: number[]): number => {
    const question = seq.slice(2, seq.indexOf(I.sep));
    const turn = seq.filter((t) => t === I.infoEnd).length;
    const start = turn === 0 ? seq.indexOf(I.sep) + 1 : seq.lastIndexOf(I.infoEnd) + 1;
    return script(question, turn)[seq.length - start] ?? I.eos;
  };
  return {
    config: { vocab_size: V, max_position_embeddings: 4096, num_attention_heads: 1, num_hidden_layers: 1 },
    forward(input: ForwardInput) {
      const B = input.batch;
      const tn = input.ids.length / B;
      const fresh = tf.tensor4d(Float32Array.from(input.ids), [B, 1, tn, 1]);
      const k = input.cache ? tf.concat<tf.Tensor4D>([input.cache[0]!.k, fresh], 2) : fresh;
      const T = k.shape[2];
      const all = k.dataSync();
      const logits = new Float32Array(B * V);
      for (let b = 0; b < B; b++) {
        const seq: number[] = [];
        for (let j = 0; j < T; j++) if (input.keyMask[b * T + j]) seq.push(all[b * T + j]!);
        logits[b * V + next(seq)] = 30;
      }
      return { logits: tf.tensor2d(logits, [B, V]), cache: [{ k, v: tf.clone(k) }] };
    },
  } as unknown as LlamaModel;
}

// "city" questions think long and search into long pages: after one turn they have little budget left.
// "alma born in" searches once, reads a short page, then thinks a little and answers in 11 tokens.
const LONG_PAGE = { id: 'long', text: Array.from({ length: 30 }, () => 'city').join(' ') };
const SHORT_PAGE = { id: 'short', text: 'alma born in tessa .' };
const longQ: RolloutQuestion = {
  id: 'long',
  family: 'direct',
  text: 'city',
  answers: ['city'],
  env: { search: (_q, k) => [LONG_PAGE].slice(0, k) },
};
const target: RolloutQuestion = {
  id: 'target',
  family: 'direct',
  text: 'alma born in',
  answers: ['tessa'],
  env: { search: (_q, k) => [SHORT_PAGE].slice(0, k) },
};
const policy = scriptedPolicy((question, turn) => {
  if (question[0] === id('city')) {
    return [I.think, ...Array(11).fill(id('city')), I.thinkEnd, I.search, id('city'), I.searchEnd];
  }
  if (turn === 0) return [I.search, id('alma'), I.searchEnd];
  return [I.think, ...Array(5).fill(id('x')), I.thinkEnd, I.answer, id('tessa'), I.answerEnd];
});
// Budgets: a "city" row uses 16 turn tokens + a 22-token <info> = 38 of 45, leaving 7; the target's answer turn needs 11.
const tight: MarsRolloutSettings = {
  maxTurns: 3,
  topK: 1,
  sys1PromptMax: 24,
  sys1ResponseMax: 6,
  sys2PromptMax: 16,
  sys2ResponseMax: 45,
  sys2TurnMax: 16,
  purposeMax: 4,
  sepCost: 1,
  rawInfoBudget: 20,
  packing: 'ffd',
  sys1: 'off',
  missingPurpose: 'query',
  temperature: 0,
  topP: 1,
};

const episode = (t: Trajectory) => ({
  tokens: t.tokens,
  lossMask: t.lossMask,
  turns: t.turns.map((u) => u.tokens),
  answer: t.answer,
  end: t.end,
  reward: t.reward,
});

beforeAll(async () => {
  await useBackend('wasm');
});

describe('a MARS trajectory does not depend on its batch (issue 17, fix 1)', () => {
  it('greedy: the same question gives the same episode alone and batched with long episodes at tight budgets', async () => {
    const [alone] = await rolloutBatch({ sys2: policy, sys1: null }, format, [target], tight, new Rng(1));
    expect(alone!.end).toBe('answer');
    expect(alone!.reward).toBe(1);
    const batch = await rolloutBatch(
      { sys2: policy, sys1: null },
      format,
      [longQ, target, longQ, longQ, target],
      tight,
      new Rng(1),
    );
    // the long rows really are near their budget (else the test would not test anything)
    expect(batch[0]!.end).toBe('overflow');
    expect(batch[0]!.turns[1]!.tokens.length).toBe(7);
    for (const i of [1, 4]) expect(episode(batch[i]!)).toEqual(episode(alone!));
  });

  it('sampled probe: at tight budgets no System 2 turn is cut by another row’s budget', async () => {
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
    const model = modelFromHf(
      cfg,
      initHfTensors(cfg, () => rng.normal(), 0.02),
    );
    const PAGES = [
      { id: 'p1', text: 'alma born in tessa . alma born in tessa .' },
      { id: 'p2', text: 'tessa city . tessa city . tessa city . tessa city .' },
    ];
    const q: RolloutQuestion = { ...target, env: { search: (_q, k) => PAGES.slice(0, k) } };
    const s: MarsRolloutSettings = {
      ...tight,
      topK: 2,
      sys1: 'on',
      sys2ResponseMax: 30,
      sys2TurnMax: 12,
      temperature: 1,
    };
    const trajs = await rolloutBatch(
      { sys2: model, sys1: model },
      format,
      Array.from({ length: 48 }, () => q),
      s,
      new Rng(11),
    );
    let turns = 0;
    let ownBudget = 0;
    let cutByOthers = 0;
    for (const t of trajs) {
      let used = 0;
      for (const u of t.turns) {
        turns++;
        const own = Math.min(s.sys2TurnMax, s.sys2ResponseMax - used);
        const stopped = format.sys2Stops.includes(u.tokens.at(-1)!);
        if (!stopped && u.tokens.length < own) cutByOthers++;
        if (!stopped && u.tokens.length === own && own < s.sys2TurnMax) ownBudget++;
        expect(u.tokens.length).toBeLessThanOrEqual(own);
        used += u.tokens.length + u.info.length;
      }
    }
    expect(turns).toBeGreaterThan(48);
    expect(ownBudget).toBeGreaterThan(0); // the budgets are tight enough that some turns end at their own limit
    expect(cutByOthers / turns).toBe(0);
  });
});
