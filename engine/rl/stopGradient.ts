/**
 * Gradient cuts for TF.js, which has no `stop_gradient` op.
 *
 * Both helpers wrap their computation in one `tf.customGrad` op whose gradient is zero. TF.js does not record the ops
 * run inside a custom op's forward pass, so they may use kernels that have no gradient (Greater, Less, Equal, …)
 * even when their inputs depend on trainable variables; outside such a wrapper those kernels make `tf.grads` throw
 * "gradient function not found".
 */
import { tf } from '../tensor/backend';

/** `f(...inputs)` as a single op whose gradient with respect to every input is exactly 0. */
export function withoutGradient<T extends tf.Tensor>(
  f: (...inputs: tf.Tensor[]) => T,
  inputs: readonly tf.Tensor[],
): T {
  const op = tf.customGrad((...args: unknown[]) => {
    const xs = args.slice(0, inputs.length) as tf.Tensor[];
    return {
      value: f(...xs),
      gradFunc: () => xs.map((x) => tf.zerosLike(x)),
    };
  });
  return op(...inputs);
}

/** The value of `x`, treated as a constant by gradient computations. */
export function stopGradient<T extends tf.Tensor>(x: T): T {
  return withoutGradient((a) => a.clone() as T, [x]);
}
