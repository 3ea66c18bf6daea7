/**
 * policyUpdate: a minibatch cut into length-sorted chunks (bounded memory per pass) makes the same update as one
 * pass over the whole batch, with the same statistics, and leaks no tensors.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { sizedConfig } from '../../../engine/model/config';
import { initHfTensors, modelFromHf, modelToHf } from '../../../engine/model/formats/hfWeights';
import { Adam } from '../../../engine/rl/adam';
import {
  adamVariables,
  defaultTokensPerPass,
  policyUpdate,
  type PolicyUpdateOptions,
} from '../../../engine/rl/policyUpdate';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';
import { fixedSamples } from '../../helpers/fixedSamples';
import { tinyModel } from '../../helpers/tinyModel';

beforeAll(() => useBackend('wasm'));

const STEPS = 3;

async function run(opts: Partial<PolicyUpdateOptions>) {
  const model = tinyModel(8, {}, 0.1);
  // eps = 1 makes Adam's step nearly linear in the gradient: with the default eps, coordinates whose gradient is ~1e-9
  // move by ±lr on the sign of float noise, which would hide the comparison.
  const opt = new Adam(adamVariables(model), { lr: 1e-2, eps: 1 });
  const samples = fixedSamples(model.config.vocab_size, 3, 8);
  const stats = [];
  for (let s = 0; s < STEPS; s++) {
    stats.push(await policyUpdate(model, opt, samples, { loss: { kind: 'ppoToken', klCoef: 0 }, ...opts }));
  }
  const weights = await modelToHf(model);
  const tensors = tf.memory().numTensors;
  model.dispose();
  opt.dispose();
  return { stats, weights, tensors };
}

describe('policyUpdate in chunks', () => {
  it('gives the same update and statistics as one pass', async () => {
    const whole = await run({});
    const chunked = await run({ maxTokensPerPass: 20 }); // samples are 5–11 tokens: several chunks per batch
    for (let s = 0; s < STEPS; s++) {
      expect(chunked.stats[s]!.total).toBeCloseTo(whole.stats[s]!.total, 5);
      expect(chunked.stats[s]!.gradNorm).toBeCloseTo(whole.stats[s]!.gradNorm, 4);
      expect(chunked.stats[s]!.tokens).toBe(whole.stats[s]!.tokens);
    }
    let worst = 0;
    for (const [name, t] of Object.entries(whole.weights)) {
      const other = chunked.weights[name]!.data;
      t.data.forEach((x, i) => (worst = Math.max(worst, Math.abs(x - other[i]!))));
    }
    expect(worst).toBeLessThan(1e-7);
    expect(whole.stats.at(-1)!.gradNorm).toBeGreaterThan(0); // it trained
  });

  it('leaks no tensors when it chunks', async () => {
    const a = await run({ maxTokensPerPass: 20 });
    const b = await run({ maxTokensPerPass: 20 });
    expect(b.tensors).toBe(a.tensors);
  });
});

describe('tokens per pass by default', () => {
  const model = (size: 'tiny' | 'medium') => {
    const c = sizedConfig(size);
    return modelFromHf(
      c,
      initHfTensors(c, () => 0),
    );
  };

  it('keeps 4096 for small models and cuts passes for a 50M model so its activations fit the wasm heap', async () => {
    const tiny = model('tiny');
    const medium = model('medium');
    expect(defaultTokensPerPass(tiny)).toBe(4096);
    // 16 × 64 tokens of the medium model ran the 4 GiB heap out in one pass (1.9 GB live when it failed)
    expect(defaultTokensPerPass(medium)).toBeLessThan(16 * 64);
    expect(defaultTokensPerPass(medium)).toBeGreaterThanOrEqual(64);
    await useBackend('cpu'); // no such heap: the plain default
    expect(defaultTokensPerPass(medium)).toBe(4096);
    await useBackend('wasm');
    tiny.dispose();
    medium.dispose();
  });
});
