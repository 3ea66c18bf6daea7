/**
 * Per-token log-probabilities of given sequences under the policy: the training forward pass of every RL loss.
 */
import { tf } from '../tensor/backend';
import { oneHotF32 } from '../tensor/oneHot';
import { rightPaddedLayout, type LlamaModel } from './llama';

export interface TokenBatch {
  /** Row-major [B, T] token ids, rows right-padded (with any id) to width T. */
  ids: Int32Array;
  /** Real length of each row. */
  lengths: number[];
  width: number;
}

/** Right-pad sequences of different lengths into one batch. */
export function padBatch(rows: number[][], padId = 0): TokenBatch {
  const width = Math.max(2, ...rows.map((r) => r.length));
  const ids = new Int32Array(rows.length * width).fill(padId);
  rows.forEach((r, b) => ids.set(r, b * width));
  return { ids, lengths: rows.map((r) => r.length), width };
}

export interface LogProbOptions {
  /** Sampling temperature: the policy is softmax(logits / temperature), the distribution the sampler drew from. */
  temperature?: number;
  /** Also return the per-token entropy of that distribution. */
  entropy?: boolean;
}

/**
 * ℓ[b, t] = log π(ids[b, t] | ids[b, <t]) for t ≥ 1, and 0 at t = 0 (nothing predicts the first token), shape [B, T].
 * The column convention matches Sample.lossMask: mask[t] says whether token t's log-prob is trained.
 * Differentiable on every backend (one-hot embedding and target selection; no gather in the gradient path).
 * Call inside tf.tidy or a gradient function.
 */
export function tokenLogProbs(model: LlamaModel, batch: TokenBatch, opts: LogProbOptions = {}): { logp: tf.Tensor2D; entropy?: tf.Tensor2D } {
  const B = batch.lengths.length;
  const T = batch.width;
  const V = model.config.vocab_size;
  const inIds = new Int32Array(B * (T - 1));
  const targets = new Int32Array(B * (T - 1));
  for (let b = 0; b < B; b++) {
    inIds.set(batch.ids.subarray(b * T, b * T + T - 1), b * (T - 1));
    targets.set(batch.ids.subarray(b * T + 1, b * T + T), b * (T - 1));
  }
  const { positions, keyMask } = rightPaddedLayout(batch.lengths, T - 1);
  const { logits } = model.forward({ ids: inIds, batch: B, positions, keyMask, differentiable: true });
  const temperature = opts.temperature ?? 1;
  const scaled = temperature === 1 ? logits : tf.div(logits, temperature);
  const logSm = tf.logSoftmax(scaled);
  const picked = tf.sum(tf.mul(logSm, oneHotF32(tf.tensor1d(targets, 'int32'), V)), -1);
  const logp = tf.pad(tf.reshape(picked, [B, T - 1]), [[0, 0], [1, 0]]) as tf.Tensor2D;
  if (!opts.entropy) return { logp };
  const ent = tf.neg(tf.sum(tf.mul(tf.exp(logSm), logSm), -1));
  return { logp, entropy: tf.pad(tf.reshape(ent, [B, T - 1]), [[0, 0], [1, 0]]) as tf.Tensor2D };
}
