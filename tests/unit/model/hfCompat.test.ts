import { beforeAll, describe, expect, it } from 'vitest';
import { initHfTensors, modelFromHf, modelToHf } from '../../../engine/model/formats/hfWeights';
import { lastPositionLogits } from '../../../engine/model/inference';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { referenceLogits } from '../../helpers/llamaReference';
import { tinyConfig } from '../../helpers/tinyModel';
import { useBackend } from '../../helpers/backends';

const variants = {
  'GQA (4 heads, 2 kv heads)': tinyConfig(),
  'tied embeddings, multi-query, head_dim ≠ hidden/heads': tinyConfig({
    tie_word_embeddings: true,
    num_key_value_heads: 1,
    head_dim: 6,
    rope_theta: 500,
  }),
  'plain multi-head, one layer': tinyConfig({ num_key_value_heads: 4, num_hidden_layers: 1 }),
};

describe.each(['cpu', 'wasm'] as const)('Hugging Face Llama semantics on %s', (backend) => {
  beforeAll(() => useBackend(backend));

  for (const [name, cfg] of Object.entries(variants)) {
    it(`${name}: logits equal an independent float64 reference of modeling_llama`, async () => {
      const rng = new Rng(21);
      const hf = initHfTensors(cfg, () => rng.normal(), 0.3);
      const model = modelFromHf(cfg, hf);
      const ids = [3, 17, 5, 0, 39, 8, 8, 12, 1, 30];
      const ref = referenceLogits(cfg, hf, ids);
      const ours = await lastPositionLogits(model, ids);
      const refLast = ref.at(-1)!;
      const scale = Math.max(...refLast.map(Math.abs));
      expect(scale).toBeGreaterThan(0.1);
      for (let i = 0; i < cfg.vocab_size; i++) {
        expect(Math.abs(ours[i]! - refLast[i]!)).toBeLessThan(1e-4 * Math.max(1, scale));
      }
      // every position, through the training path (one-hot embedding, log-softmax)
      const lp = tf.tidy(() => tokenLogProbs(model, padBatch([ids])).logp);
      const got = (await lp.array())[0]!;
      lp.dispose();
      for (let t = 1; t < ids.length; t++) {
        const row = ref[t - 1]!;
        const m = Math.max(...row);
        const lse = m + Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0));
        expect(Math.abs(got[t]! - (row[ids[t]!]! - lse))).toBeLessThan(1e-4);
      }
      // and back to HF tensors unchanged
      const back = await modelToHf(model);
      for (const [n, t] of Object.entries(hf)) expect(back[n]!.data).toEqual(t.data);
      model.dispose();
    });
  }
});
