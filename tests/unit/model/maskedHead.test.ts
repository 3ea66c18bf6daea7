/**
 * Computing the vocabulary head only at trained positions (tokenLogProbs `only`) gives the same log-probs there, zeros
 * elsewhere, and the same gradients of a masked loss as the full head — on cpu and wasm (whose gather has no gradient
 * kernel: the row gather/scatter pair stands in).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';
import { fixedSamples } from '../../helpers/fixedSamples';
import { tinyModel } from '../../helpers/tinyModel';

describe.each(['cpu', 'wasm'] as const)('masked head on %s', (backend) => {
  beforeAll(() => useBackend(backend));

  it('equals the full head where the mask is 1 and in the gradients of a masked loss', async () => {
    const model = tinyModel(6, {}, 0.3);
    const samples = fixedSamples(model.config.vocab_size, 4, 5);
    const batch = padBatch(samples.map((s) => s.tokens));
    const maskArr = samples.flatMap((s) => [...s.lossMask, ...Array(batch.width - s.tokens.length).fill(0)]);
    const mask = tf.tensor2d(maskArr, [samples.length, batch.width]);
    const weights = tf.randomNormal([samples.length, batch.width], 0, 1, 'float32', 3);
    const run = (only: boolean) =>
      tf.variableGrads(() => {
        const { logp, entropy } = tokenLogProbs(model, batch, { entropy: true, only: only ? maskArr : undefined });
        return tf.sum<tf.Scalar>(tf.mul(tf.add(tf.mul(logp, weights), tf.mul(entropy!, 0.3)), mask));
      }, model.variables());
    const full = run(false);
    const part = run(true);
    expect((await part.value.data())[0]).toBeCloseTo((await full.value.data())[0]!, 4);
    let worst = 0;
    let scale = 0;
    for (const v of model.variables()) {
      const a = await full.grads[v.name]!.data();
      const b = await part.grads[v.name]!.data();
      a.forEach((x, i) => {
        worst = Math.max(worst, Math.abs(x - b[i]!));
        scale = Math.max(scale, Math.abs(x));
      });
    }
    expect(scale).toBeGreaterThan(1e-3);
    expect(worst).toBeLessThan(1e-5 * Math.max(1, scale));
    const lp = tf.tidy(() => tokenLogProbs(model, batch, { only: maskArr }).logp);
    const vals = await lp.data();
    maskArr.forEach((m, i) => m === 0 && expect(vals[i]).toBe(0));
    tf.dispose([lp, mask, weights, full.value, part.value, ...Object.values(full.grads), ...Object.values(part.grads)]);
    model.dispose();
  });
});
