import { tf } from '../tensor/backend';
import type { LlamaModel } from './llama';

/** Logits of the next token after `ids` (one sequence, positions 0…n−1), float32 over the full vocabulary. */
export async function lastPositionLogits(model: LlamaModel, ids: number[]): Promise<Float32Array> {
  const n = ids.length;
  const out = tf.tidy(
    () =>
      model.forward({
        ids: Int32Array.from(ids),
        batch: 1,
        positions: Int32Array.from(ids.keys()),
        keyMask: new Uint8Array(n).fill(1),
        lastOnly: true,
      }).logits,
  );
  const data = (await out.data()) as Float32Array;
  out.dispose();
  return data;
}
