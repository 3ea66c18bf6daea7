/**
 * The gradient of the RL loss through the whole policy (embedding, attention, MLP, norms, head) matches central
 * finite differences, on every backend that trains (wasm has no gather gradient: the model must not need it).
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import type { LlamaModel } from '../../../engine/model/llama';
import { Rng } from '../../../engine/random/prng';
import { policyLoss, type PolicyLossKind } from '../../../engine/rl/losses';
import { tf } from '../../../engine/tensor/backend';
import { fixedSamples } from '../../helpers/fixedSamples';
import { tinyModel } from '../../helpers/tinyModel';
import { useBackend } from '../../helpers/backends';

const H = 2e-3;

function lossFn(model: LlamaModel, kind: PolicyLossKind, oldLogp: tf.Tensor2D, refLogp: tf.Tensor2D) {
  const samples = fixedSamples(model.config.vocab_size, 9);
  const batch = padBatch(samples.map((s) => s.tokens));
  const mask = tf.tensor2d(samples.map((s) => [...s.lossMask, ...Array(batch.width - s.tokens.length).fill(0)]));
  const adv = tf.tensor1d(samples.map((s) => s.advantage));
  return {
    batch,
    f: () => {
      const { logp } = tokenLogProbs(model, batch);
      const pl = policyLoss({ logp, oldLogp, refLogp, mask, advantages: adv }, { kind, klCoef: 0.3 });
      pl.dispose();
      return pl.loss;
    },
  };
}

describe.each(['cpu', 'wasm'] as const)('loss gradients on %s', (backend) => {
  beforeAll(() => useBackend(backend));

  it.each(['ppoToken', 'gspo'] as const)('%s: analytic gradients equal finite differences', async (kind) => {
    // float64 is not available in TF.js, so the model is small and the step moderate; tolerances reflect float32.
    const model = tinyModel(
      12,
      {
        vocab_size: 10,
        hidden_size: 16,
        intermediate_size: 24,
        num_hidden_layers: 2,
        num_attention_heads: 2,
        num_key_value_heads: 1,
      },
      0.4,
    );
    const rng = new Rng(3);
    const samples = fixedSamples(10, 9);
    const probe = padBatch(samples.map((s) => s.tokens));
    const cur = tf.tidy(() => tokenLogProbs(model, probe).logp);
    // ℓold a little off the current policy (ratios inside the clip range, away from its kinks), ℓref further off.
    const noise = (scale: number) =>
      tf.tensor2d(
        Array.from({ length: cur.size }, () => (rng.next() - 0.5) * scale),
        cur.shape,
      );
    const oldLogp = tf.add<tf.Tensor2D>(cur, noise(0.08));
    const refLogp = tf.add<tf.Tensor2D>(cur, noise(1.0));
    const { f } = lossFn(model, kind, oldLogp, refLogp);
    const { value, grads } = tf.variableGrads(f, model.variables());
    expect(Number.isFinite((await value.data())[0]!)).toBe(true);

    let checked = 0;
    let nonZero = 0;
    for (const [name, v] of model.params) {
      const g = (await grads[v.name]!.data()) as Float32Array;
      const base = Float32Array.from((await v.data()) as Float32Array);
      for (let k = 0; k < 3; k++) {
        const idx = rng.int(base.length);
        const at = async (delta: number) => {
          const w = base.slice();
          w[idx]! += delta;
          v.assign(tf.tensor(w, v.shape));
          const l = tf.tidy(f);
          const out = (await l.data())[0]!;
          l.dispose();
          return out;
        };
        const fd = ((await at(H)) - (await at(-H))) / (2 * H);
        v.assign(tf.tensor(base, v.shape));
        expect(Math.abs(fd - g[idx]!), `${name}[${idx}]: finite difference ${fd} vs analytic ${g[idx]}`).toBeLessThan(
          2e-3 + 0.03 * Math.abs(fd),
        );
        checked++;
        if (Math.abs(g[idx]!) > 1e-4) nonZero++;
      }
    }
    expect(checked).toBe(3 * model.params.size);
    expect(nonZero).toBeGreaterThan(checked / 2); // the check is not vacuous
    tf.dispose([value, ...Object.values(grads), cur, oldLogp, refLogp]);
    model.dispose();
  });
});
