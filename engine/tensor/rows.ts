/**
 * Row gather and scatter with gradients on every backend (wasm has no kernel for gather's gradient): each one's
 * gradient is the other, built from the plain gather and scatterND kernels (scatterND sums duplicate indices).
 * They let training compute only what it needs: embeddings of the ids present, and the vocabulary-wide head only at
 * the positions whose log-probs are trained.
 */
import { tf } from './backend';

const gatherImpl = tf.customGrad(((x: tf.Tensor, idx: tf.Tensor, save: tf.GradSaveFunc) => {
  save([idx]);
  const shape = x.shape;
  return {
    value: tf.gather(x, idx),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [
      tf.scatterND(tf.expandDims(saved[0]!, 1), dy, shape),
      tf.zerosLike(saved[0]!),
    ],
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]);

/** x[idx] along the first axis. */
export function gatherRows<T extends tf.Tensor>(x: T, idx: tf.Tensor1D): T {
  return gatherImpl(x, idx) as T;
}

/** A tensor of `rows` rows, zero except row idx[i] = values[i] (indices unique). */
export function scatterRows<T extends tf.Tensor>(values: T, idx: tf.Tensor1D, rows: number): T {
  const shape = [rows, ...values.shape.slice(1)];
  const impl = tf.customGrad(((v: tf.Tensor, i: tf.Tensor, save: tf.GradSaveFunc) => {
    save([i]);
    return {
      value: tf.scatterND(tf.expandDims(i, 1), v, shape),
      gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => [
        tf.gather(dy, saved[0] as tf.Tensor1D),
        tf.zerosLike(saved[0]!),
      ],
    };
  }) as unknown as Parameters<typeof tf.customGrad>[0]);
  return impl(values, idx) as T;
}
