/**
 * What a forward or a LoRA training pass holds at its peak (issue 30: chatgrpo on SmolLM2 ran the wasm heap out of its
 * 4 GiB under MARS_LAB_NATIVE=0). Measured by TensorFlow.js's own count of tensor bytes (tf.profile's peakBytes), on
 * the cpu backend (the stock ops' path, as wasm without the native kernels) and on wasm (whichever path this machine's
 * kernels give). Three properties, each of which the code before the fix broke on both paths:
 * - a forward frees each layer's intermediates when the layer ends, so its peak does not grow with the layers (a
 *   16-row prefill of SmolLM2 held 3 GB of them);
 * - a LoRA pass keeps nothing in proportion to the frozen base (W's gradient, transpose and saved copy: 1.7 GB a pass
 *   of SmolLM2 on the stock path);
 * - adapters on all seven maps cost a pass little more than on one (the tape kept every step of each adapter's
 *   dropout, products, scaling and sum: 3 to 5 MB a token of SmolLM2).
 */
import { describe, expect, it } from 'vitest';
import type { LlamaConfig } from '../../../engine/model/config';
import { tokenLogProbs } from '../../../engine/model/logProbs';
import { LORA_TARGET_NAMES, LoraAdapters, type LoraTarget } from '../../../engine/model/lora/loraAdapters';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { GRADIENT_BACKENDS, useBackend } from '../../helpers/backends';
import { tinyModel } from '../../helpers/tinyModel';

const DIMS: Partial<LlamaConfig> = {
  hidden_size: 64,
  intermediate_size: 256,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  vocab_size: 512,
  max_position_embeddings: 256,
};

/** Bytes of tensors `f` allocated beyond what was live before it, at their peak; what it returns is then disposed. */
async function peakBytes(f: () => tf.TensorContainer): Promise<number> {
  const before = tf.memory().numBytes;
  const info = await tf.profile(() => {
    tf.dispose(f());
  });
  return info.peakBytes - before;
}

function ids(rows: number, width: number): Int32Array {
  return new Int32Array(rows * width).map((_, i) => (i * 7 + 3) % 512);
}

/** Peak bytes of one LoRA training pass (dropout 0.1) over rows × width tokens, and the base weights' bytes. */
async function loraPass(targets: LoraTarget[], rows: number, width: number, over: Partial<LlamaConfig> = {}) {
  const m = tinyModel(1, { ...DIMS, num_hidden_layers: 2, ...over });
  m.lora = LoraAdapters.create(m.config, { rank: 4, alpha: 8, dropout: 0.1, targets }, new Rng(3));
  const weights = [...m.params.values()].reduce((s, v) => s + v.size * 4, 0);
  const batch = { ids: ids(rows, width), lengths: Array<number>(rows).fill(width), width };
  const peak = await peakBytes(() => {
    const { value, grads } = tf.variableGrads(
      () => tf.sum<tf.Scalar>(tokenLogProbs(m, batch, { temperature: 1 }).logp),
      m.variables(),
    );
    return [value, ...Object.values(grads)];
  });
  m.dispose();
  return { peak, weights };
}

describe.each(GRADIENT_BACKENDS)('what a pass holds at its peak (%s)', (backend) => {
  it("a forward's peak does not grow with its layers: each layer's intermediates are freed when it ends", async () => {
    await useBackend(backend);
    const transient: number[] = [];
    for (const layers of [2, 8]) {
      const m = tinyModel(1, { ...DIMS, num_hidden_layers: layers });
      const rows = 8;
      const width = 32;
      let kept = 0;
      const peak = await peakBytes(() =>
        tf.tidy(() => {
          const out = m.forward({
            ids: ids(rows, width),
            batch: rows,
            positions: new Int32Array(rows * width).map((_, i) => i % width),
            keyMask: new Uint8Array(rows * width).fill(1),
            lastOnly: true,
          });
          const result = [out.logits, ...out.cache.flatMap((c) => [c.k, c.v])];
          kept = result.reduce((s, t) => s + t.size * 4, 0);
          return result;
        }),
      );
      transient.push(peak - kept); // what the forward held beyond the logits and the cache it returns
      m.dispose();
    }
    // Held all at once, 8 layers' intermediates are ~4× 2 layers' (3.9× before the fix); freed layer by layer, equal.
    expect(transient[1]! / transient[0]!).toBeLessThan(1.5);
  });

  it('a LoRA pass keeps nothing in proportion to the frozen base weights', async () => {
    await useBackend(backend);
    for (const targets of [LORA_TARGET_NAMES, ['q_proj'] as LoraTarget[]]) {
      // Big weights, 4 tokens: the activations are small beside the base (2.5 MB), anything of its size shows.
      const { peak, weights } = await loraPass(targets, 1, 4, { hidden_size: 128, intermediate_size: 512 });
      // Before the fix: 2.8-3.1× the base on the stock path, 1.1-1.4× with the native kernels; now 0.2-0.35×.
      expect(peak / weights, `${targets.length} targets`).toBeLessThan(0.6);
    }
  });

  it('adapters on all seven maps cost a pass little more than on one', async () => {
    await useBackend(backend);
    const one = await loraPass(['q_proj'], 8, 32);
    const all = await loraPass(LORA_TARGET_NAMES, 8, 32);
    // Before the fix 1.6× (stock path) and 2.4× (native kernels); now 1.1-1.15×.
    expect(all.peak / one.peak).toBeLessThan(1.35);
  });
});
