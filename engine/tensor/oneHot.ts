import { tf } from './backend';

/**
 * Float one-hot rows. tfjs-backend-wasm 4.22 ignores oneHot's dtype argument and writes integer bits into a float32
 * buffer (1 reads as 1.4e-45), so the one-hot is built as int32 and cast.
 */
export function oneHotF32(ids: tf.Tensor1D, depth: number): tf.Tensor2D {
  return tf.cast(tf.oneHot(ids, depth), 'float32') as tf.Tensor2D;
}
