import { tf } from '../tensor/backend';
import type { LlamaModel } from './llama';
import { tokenLogProbs, type TokenBatch } from './logProbs';

/**
 * Mean negative log-likelihood over the masked-in tokens of a right-padded batch (mask [B, T], same column
 * convention as tokenLogProbs): the loss of supervised pretraining. Call inside a gradient function.
 */
export function maskedNll(model: LlamaModel, batch: TokenBatch, mask: tf.Tensor2D): tf.Scalar {
  const { logp } = tokenLogProbs(model, batch);
  return tf.div<tf.Scalar>(tf.neg(tf.sum(tf.mul(logp, mask))), tf.maximum(tf.sum(mask), 1));
}
