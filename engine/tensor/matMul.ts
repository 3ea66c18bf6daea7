/**
 * Matrix product whose gradient uses only untransposed matMuls.
 *
 * tfjs's own MatMul gradient calls matMul with transpose flags, which the wasm backend runs 5–17× slower than the plain
 * product (docs/build-notes.md §1, "Performance pitfall 1"); explicit transposes followed by plain products made a training
 * step about 3.5× faster there, and are exact on every backend.
 */
import { tf } from './backend';

function swapLast(rank: number): number[] {
  const perm = [...Array(rank).keys()];
  [perm[rank - 2], perm[rank - 1]] = [perm[rank - 1]!, perm[rank - 2]!];
  return perm;
}

/** Transpose of the last two axes. */
export function transposeLast(x: tf.Tensor): tf.Tensor {
  return tf.transpose(x, swapLast(x.rank));
}

const mmImpl = tf.customGrad(((a: tf.Tensor, b: tf.Tensor, save: tf.GradSaveFunc) => {
  save([a, b]);
  return {
    value: tf.matMul(a, b),
    gradFunc: (dy: tf.Tensor, saved: tf.Tensor[]) => {
      const [sa, sb] = saved as [tf.Tensor, tf.Tensor];
      return [tf.matMul(dy, transposeLast(sb)), tf.matMul(transposeLast(sa), dy)];
    },
  };
}) as unknown as Parameters<typeof tf.customGrad>[0]);

/** a·b for tensors of equal rank ≥ 2 with equal leading (batch) dimensions. */
export function mm<R extends tf.Rank>(a: tf.Tensor<R>, b: tf.Tensor<R>): tf.Tensor<R> {
  return mmImpl(a, b) as tf.Tensor<R>;
}
