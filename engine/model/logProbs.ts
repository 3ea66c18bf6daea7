/**
 * Per-token log-probabilities of given sequences under the policy: the training forward pass of every RL loss.
 * While the native kernels are active on wasm, the log-softmax, the target's pick and the entropy are one fused native
 * op (engine/tensor/native/fused.ts) instead of ~20 tensor ops over [rows, V]. Where the trained rows' logits would
 * pass 2^24 floats (a 49k–152k vocabulary), the head and all of that run in row chunks instead (model/chunkedHead.ts,
 * model/headChunks.ts), so that a whole batch's logits never exist at once, in the forward pass or the backward.
 */
import { fusedOps } from '../tensor/native/fused';
import { tf } from '../tensor/backend';
import { oneHotF32 } from '../tensor/oneHot';
import { scatterRows } from '../tensor/rows';
import { chunkedHead } from './chunkedHead';
import { headChunkRows } from './headChunks';
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
  /**
   * Row-major [B, T] 0/1: compute log-probs (and entropy) only where it is 1 and return 0 elsewhere. The head and
   * the softmax over the vocabulary then run on the trained tokens only, not on prompts and inserted text.
   */
  only?: ArrayLike<number>;
  /**
   * Rows of the head per chunk (model/chunkedHead.ts). By default the head is chunked only where the trained rows'
   * logits pass 2^24 floats, in chunks of ⌊2^22 / V⌋ rows; a number forces chunks of that many rows (Infinity: never).
   */
  headChunkRows?: number;
}

/**
 * ℓ[b, t] = log π(ids[b, t] | ids[b, <t]) for t ≥ 1, and 0 at t = 0 (nothing predicts the first token), shape [B, T].
 * The column convention matches Sample.lossMask: mask[t] says whether token t's log-prob is trained.
 * Differentiable on every backend (one-hot embedding and target selection; no gather in the gradient path).
 * Call inside tf.tidy or a gradient function.
 */
export function tokenLogProbs(
  model: LlamaModel,
  batch: TokenBatch,
  opts: LogProbOptions = {},
): { logp: tf.Tensor2D; entropy?: tf.Tensor2D } {
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
  // Flat positions of [B, T−1] whose next token is wanted (column t−1 predicts token t).
  let rows: Int32Array | undefined;
  if (opts.only) {
    const sel: number[] = [];
    for (let b = 0; b < B; b++) for (let t = 1; t < T; t++) if (opts.only[b * T + t]) sel.push(b * (T - 1) + t - 1);
    rows = Int32Array.from(sel.length ? sel : [0]);
  }
  const { hidden } = model.forwardHidden({
    ids: inIds,
    batch: B,
    positions,
    keyMask,
    differentiable: true,
    headRows: rows,
  }); // [M, D]
  const temperature = opts.temperature ?? 1;
  const wanted = rows ? Int32Array.from(rows, (r) => targets[r]!) : targets;
  const rowsT = rows ? tf.tensor1d(rows, 'int32') : null;
  const fused = fusedOps();
  // Back to [B, T]: zero where nothing was computed (and at column 0, which nothing predicts).
  const full = (perRow: tf.Tensor1D) => {
    const spread = rowsT ? (fused ?? { scatterRows }).scatterRows(perRow, rowsT, B * (T - 1)) : perRow;
    return tf.pad<tf.Tensor2D>(tf.reshape(spread, [B, T - 1]), [
      [0, 0],
      [1, 0],
    ]);
  };
  const m = hidden.shape[0];
  const chunkRows = headChunkRows(m, V, opts.headChunkRows);
  if (chunkRows < m) {
    const { weight, transposed } = model.headWeight();
    const r = chunkedHead({
      hidden,
      weight: weight as tf.Tensor2D,
      transposed,
      // A frozen head (LoRA trains adapters only) gets no gradient computed.
      weightGrad: [...model.trainable().values()].includes(weight),
      targets: wanted,
      temperature,
      entropy: opts.entropy === true,
      chunkRows,
    });
    return r.entropy ? { logp: full(r.logp), entropy: full(r.entropy) } : { logp: full(r.logp) };
  }
  const logits = model.head(hidden); // [M, V]
  if (fused) {
    const r = fused.logSoftmaxPick(logits, tf.tensor1d(wanted, 'int32'), temperature, opts.entropy === true);
    return r.entropy ? { logp: full(r.logp), entropy: full(r.entropy) } : { logp: full(r.logp) };
  }
  const scaled = temperature === 1 ? logits : tf.div(logits, temperature);
  const logSm = tf.logSoftmax(scaled);
  const picked = tf.sum(tf.mul(logSm, oneHotF32(tf.tensor1d(wanted, 'int32'), V)), -1);
  const logp = full(picked as tf.Tensor1D);
  if (!opts.entropy) return { logp };
  const ent = tf.neg(tf.sum(tf.mul(tf.exp(logSm), logSm), -1));
  return { logp, entropy: full(ent as tf.Tensor1D) };
}
