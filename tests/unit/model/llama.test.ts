import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DecodeSession, generate } from '../../../engine/model/sampler';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { lastPositionLogits } from '../../../engine/model/inference';
import type { LlamaModel } from '../../../engine/model/llama';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { tinyModel } from '../../helpers/tinyModel';
import { useBackend } from '../../helpers/backends';

// Float32 through two layers: differences between equivalent evaluation orders stay around 1e-6; 1e-4 is the stated
// tolerance for "the same log-prob".
const TOL = 1e-4;

function maxAbsDiff(a: number[], b: number[]): number {
  expect(a.length).toBe(b.length);
  return Math.max(0, ...a.map((x, i) => Math.abs(x - b[i]!)));
}

describe.each(['cpu', 'wasm'] as const)('policy model on %s', (backend) => {
  let model: LlamaModel;
  beforeAll(async () => {
    await useBackend(backend);
    model = tinyModel(3);
  });
  afterAll(() => model.dispose());

  const prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9, 10, 11]];

  it('KV-cache sampling records the same log-probs as a full forward over the whole sequence', async () => {
    const gens = await generate(model, prompts, { maxNewTokens: 16, rng: new Rng(11), stopTokens: [0] });
    const rows = prompts.map((p, i) => [...p, ...gens[i]!.tokens]);
    const logp = tf.tidy(() => tokenLogProbs(model, padBatch(rows)).logp);
    const full = await logp.array();
    logp.dispose();
    gens.forEach((g, i) => {
      expect(g.tokens.length).toBeGreaterThan(0);
      const fromFull = g.tokens.map((_, j) => full[i]![prompts[i]!.length + j]!);
      expect(maxAbsDiff(g.logProbs, fromFull)).toBeLessThan(TOL);
    });
  });

  it('caching does not change what is sampled: cache and recompute give the same tokens and log-probs', async () => {
    const a = await generate(model, prompts, { maxNewTokens: 12, rng: new Rng(5), temperature: 1.3, topP: 0.9 });
    const b = await generate(model, prompts, {
      maxNewTokens: 12,
      rng: new Rng(5),
      temperature: 1.3,
      topP: 0.9,
      useCache: false,
    });
    a.forEach((g, i) => {
      expect(g.tokens).toEqual(b[i]!.tokens);
      expect(maxAbsDiff(g.logProbs, b[i]!.logProbs)).toBeLessThan(TOL);
    });
  });

  it('a row gives the same output alone as left-padded in a batch of longer prompts', async () => {
    const greedy = { maxNewTokens: 8, rng: new Rng(1), temperature: 0 };
    const batched = await generate(model, prompts, greedy);
    for (let i = 0; i < prompts.length; i++) {
      const [alone] = await generate(model, [prompts[i]!], greedy);
      expect(alone!.tokens).toEqual(batched[i]!.tokens);
      expect(maxAbsDiff(alone!.logProbs, batched[i]!.logProbs)).toBeLessThan(TOL);
    }
  });

  it('the same seed reproduces the same samples; another seed differs', async () => {
    const run = (seed: number) => generate(model, prompts, { maxNewTokens: 10, rng: new Rng(seed) });
    const [a, b, c] = [await run(9), await run(9), await run(10)];
    expect(a.map((g) => g.tokens)).toEqual(b.map((g) => g.tokens));
    expect(a.map((g) => g.tokens)).not.toEqual(c.map((g) => g.tokens));
  });

  it('stops at a stop token (kept in the output) and at max new tokens', async () => {
    const gens = await generate(model, [[1, 2]], { maxNewTokens: 30, rng: new Rng(2), temperature: 0 });
    const first = gens[0]!.tokens[3]!; // make the 4th greedy token a stop token
    const [g] = await generate(model, [[1, 2]], {
      maxNewTokens: 30,
      rng: new Rng(2),
      temperature: 0,
      stopTokens: [first],
    });
    expect(g!.finish).toBe('stop');
    expect(g!.tokens.at(-1)).toBe(first);
    expect(g!.tokens.indexOf(first)).toBe(g!.tokens.length - 1);
    const [h] = await generate(model, [[1, 2]], { maxNewTokens: 5, rng: new Rng(2) });
    expect(h!.tokens).toHaveLength(5);
    expect(h!.finish).toBe('length');
  });

  it('stop strings end a row once its decoded text ends with them', async () => {
    const decode = (ids: number[]) => ids.map((i) => `w${i}`).join(' ');
    const [g] = await generate(model, [[3]], { maxNewTokens: 20, rng: new Rng(4), temperature: 0 });
    const target = `w${g!.tokens[2]}`;
    const [s] = await generate(model, [[3]], {
      maxNewTokens: 20,
      rng: new Rng(4),
      temperature: 0,
      stopStrings: [target],
      decode,
    });
    expect(s!.finish).toBe('stop');
    expect(decode(s!.tokens).endsWith(target)).toBe(true);
    expect(s!.tokens.length).toBeLessThanOrEqual(3);
  });

  it('top-p keeps sampling inside the nucleus', async () => {
    const ids = [1, 2, 3];
    const logits = await lastPositionLogits(model, ids);
    const probs = Array.from(logits, (x) => Math.exp(x));
    const z = probs.reduce((a, b) => a + b, 0);
    const order = probs.map((p, i) => [p / z, i] as const).sort((a, b) => b[0] - a[0]);
    const nucleus = new Set<number>();
    let mass = 0;
    for (const [p, i] of order) {
      if (mass >= 0.5) break;
      nucleus.add(i);
      mass += p;
    }
    const gens = await generate(
      model,
      Array.from({ length: 64 }, () => ids),
      { maxNewTokens: 1, rng: new Rng(8), topP: 0.5 },
    );
    for (const g of gens) expect(nucleus.has(g.tokens[0]!)).toBe(true);
  });

  it('a decode session continued over turns (ragged inserted tokens, stopped rows kept) equals generating from scratch', async () => {
    const stop = [0, 1];
    const inserted = [[7, 8, 9], [10], [11, 12]];
    const session = new DecodeSession(model);
    const rngA = new Rng(21);
    const rngB = new Rng(21);
    await session.extend(prompts);
    const turn1 = await session.sample({ maxNewTokens: 6, rng: rngA, stopTokens: stop, temperature: 1.2 });
    const ref1 = await generate(model, prompts, { maxNewTokens: 6, rng: rngB, stopTokens: stop, temperature: 1.2 });
    expect(turn1.map((g) => g.tokens)).toEqual(ref1.map((g) => g.tokens));
    await session.extend(inserted);
    const turn2 = await session.sample({ maxNewTokens: 6, rng: rngA, temperature: 1.2 });
    const contexts = prompts.map((p, i) => [...p, ...turn1[i]!.tokens, ...inserted[i]!]);
    const ref2 = await generate(model, contexts, { maxNewTokens: 6, rng: rngB, temperature: 1.2 });
    turn2.forEach((g, i) => {
      expect(g.tokens).toEqual(ref2[i]!.tokens);
      expect(maxAbsDiff(g.logProbs, ref2[i]!.logProbs)).toBeLessThan(TOL);
      expect(session.tokens(i)).toEqual([...contexts[i]!, ...g.tokens]);
    });
    // dropping a row keeps the others' state
    session.keep([2, 0]);
    await session.extend([[5], [6]]);
    const turn3 = await session.sample({ maxNewTokens: 3, rng: new Rng(1), temperature: 0 });
    const ref3 = await generate(
      model,
      [[...session.tokens(0)], [...session.tokens(1)]].map((t) => t.slice(0, -3)),
      { maxNewTokens: 3, rng: new Rng(1), temperature: 0 },
    );
    expect(turn3.map((g) => g.tokens)).toEqual(ref3.map((g) => g.tokens));
    session.dispose();
  });

  it('a session whose forwards run in row chunks (bounded attention memory) samples exactly what one forward does', async () => {
    const run = async (maxScores?: number) => {
      const session = new DecodeSession(model, maxScores);
      const rng = new Rng(5);
      await session.extend(prompts);
      const a = await session.sample({ maxNewTokens: 5, rng, temperature: 1.1 });
      await session.extend([[7, 8], [], [9]]);
      const b = await session.sample({ maxNewTokens: 5, rng, temperature: 1.1, final: true });
      session.dispose();
      return [...a, ...b];
    };
    const before = tf.memory().numTensors;
    const whole = await run();
    // 1 score per forward: every forward (prefill, each decoded token, the second extend) runs one row at a time
    const chunked = await run(1);
    expect(tf.memory().numTensors).toBe(before);
    expect(chunked.map((g) => g.tokens)).toEqual(whole.map((g) => g.tokens));
    chunked.forEach((g, i) => expect(maxAbsDiff(g.logProbs, whole[i]!.logProbs)).toBeLessThan(TOL));
    expect(whole.some((g) => g.tokens.length > 1)).toBe(true);
  });

  it('the sampler frees every tensor it creates', async () => {
    await generate(model, prompts, { maxNewTokens: 4, rng: new Rng(1) });
    const before = tf.memory().numTensors;
    await generate(model, prompts, { maxNewTokens: 12, rng: new Rng(1), stopTokens: [0, 1, 2] });
    expect(tf.memory().numTensors).toBe(before);
  });
});
