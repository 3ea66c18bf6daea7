/**
 * The vocabulary head, log-softmax, target pick and entropy on row chunks (issue 30, item 7): at a real vocabulary
 * (49,152 for SmolLM2, up to 152k for Qwen) the logits of a whole batch, [M, V], and the log-softmax kept for their
 * gradient dominate a training step's memory. Here they never exist whole: one custom-gradient op over the final hidden
 * states [M, D] and the head's matrix computes, chunk by chunk, logits = hidden·W (or hidden·Wᵀ for a tied embedding),
 * log π(y) and the entropy of softmax(logits / T), and keeps only those per-row outputs (and hidden) for the backward
 * pass; the backward pass computes each chunk's logits again and accumulates d hidden and d W chunk by chunk.
 *
 * With z = logits / T, p = softmax(z), ℓ = log p_y, H = −Σ p log p and upstream gradients g_ℓ, g_H per row:
 * d logits = (g_ℓ·(onehot_y − p) − g_H·p·(log p + H)) / T; d hidden = d logits·Wᵀ (untied, W [D, V]) or d logits·W (tied,
 * W [V, D]); d W = hiddenᵀ·d logits (untied) or d logitsᵀ·hidden (tied). A tied embedding also gets the input gather's
 * gradient; the tape sums the two.
 *
 * When to chunk and how finely: headChunks.ts. The forward chunks use the native fused log-softmax-pick
 * (engine/tensor/native/fused.ts) while it runs, else stock ops; the backward chunks use stock ops. Products with a
 * transposed operand take matMul's flags when the native products run (they read either layout), else one explicit
 * transpose of W per pass (the wasm backend's transposed product is slow, tensor/matMul.ts).
 */
import { fusedOps } from '../tensor/native/fused';
import { tf } from '../tensor/backend';
import { oneHotF32 } from '../tensor/oneHot';

export interface ChunkedHeadInput {
  /** Final hidden states (after the last norm), [M, D]. */
  hidden: tf.Tensor2D;
  /** The head's matrix: the embedding [V, D] when `transposed` (logits = hidden·Wᵀ), else lm_head [D, V]. */
  weight: tf.Tensor2D;
  transposed: boolean;
  /** Whether W's gradient is wanted (false for a frozen head, as under LoRA: then none is computed). */
  weightGrad: boolean;
  /** The target token of each row, [M]. */
  targets: Int32Array;
  /** The policy is softmax(logits / temperature). */
  temperature: number;
  entropy: boolean;
  /** Rows per chunk (≥ 1). */
  chunkRows: number;
}

/** [start, end) row ranges of `m` rows in chunks of `c`. */
function chunks(m: number, c: number): [number, number][] {
  const out: [number, number][] = [];
  for (let r = 0; r < m; r += c) out.push([r, Math.min(m, r + c)]);
  return out;
}

/**
 * log π(targets[r]) and, with `entropy`, the entropy, per row ([M] each), differentiable w.r.t. hidden and (with
 * `weightGrad`) the weight, without ever holding more than one chunk's logits. Call inside tf.tidy or a gradient
 * function.
 */
export function chunkedHead(input: ChunkedHeadInput): { logp: tf.Tensor1D; entropy?: tf.Tensor1D } {
  const { weight, transposed, targets, temperature, chunkRows } = input;
  const [m, d] = input.hidden.shape;
  const v = transposed ? weight.shape[0] : weight.shape[1];
  const withEntropy = input.entropy;
  const ranges = chunks(m, Math.max(1, Math.floor(chunkRows)));
  const targetsOf = (r0: number, r1: number) => tf.tensor1d(targets.subarray(r0, r1), 'int32');

  /** Each chunk's logits from hidden rows [r0, r1): `layout` is W as [D, V] (plain) or the flagged original. */
  const logitsOf = (h: tf.Tensor2D, layout: { w: tf.Tensor2D; transposeB: boolean }): tf.Tensor2D =>
    tf.matMul(h, layout.w, false, layout.transposeB);

  const forward = (hidden: tf.Tensor2D, save: tf.GradSaveFunc) => {
    const fused = fusedOps();
    // [D, V] for the plain product: W itself (untied), a flag (native products), or one transpose for the whole pass.
    const wDV = transposed && !fused ? tf.transpose(weight) : null;
    const layout = { w: wDV ?? weight, transposeB: transposed && !wDV };
    const logpParts: tf.Tensor1D[] = [];
    const entParts: tf.Tensor1D[] = [];
    for (const [r0, r1] of ranges) {
      const [lp, ent] = tf.tidy((): tf.Tensor1D[] => {
        const z = logitsOf(tf.slice(hidden, [r0, 0], [r1 - r0, d]), layout);
        const y = targetsOf(r0, r1);
        if (fused) {
          const r = fused.logSoftmaxPick(z, y, temperature, withEntropy);
          return r.entropy ? [r.logp, r.entropy] : [r.logp];
        }
        const logSm = tf.logSoftmax(temperature === 1 ? z : tf.div(z, temperature));
        const picked = tf.sum<tf.Tensor1D>(tf.mul(logSm, oneHotF32(y, v)), -1);
        if (!withEntropy) return [picked];
        return [picked, tf.neg(tf.sum<tf.Tensor1D>(tf.mul(tf.exp(logSm), logSm), -1))];
      });
      logpParts.push(lp!);
      if (ent) entParts.push(ent);
    }
    wDV?.dispose();
    const logp = ranges.length === 1 ? logpParts[0]! : tf.concat(logpParts);
    const ent = withEntropy ? (ranges.length === 1 ? entParts[0]! : tf.concat(entParts)) : null;
    const value = ent ? tf.stack([logp, ent]) : logp; // [2, M] or [M]
    save(ent ? [hidden, ent] : [hidden]);
    return value;
  };

  const backward = (dy: tf.Tensor, saved: tf.Tensor[]): tf.Tensor[] => {
    const hidden = saved[0] as tf.Tensor2D;
    const ent = withEntropy ? (saved[1] as tf.Tensor1D) : null;
    const fused = fusedOps();
    const gLogpAll = (withEntropy ? tf.squeeze(tf.slice(dy, [0, 0], [1, m]), [0]) : dy) as tf.Tensor1D;
    const gEntAll = withEntropy ? tf.squeeze<tf.Tensor1D>(tf.slice(dy, [1, 0], [1, m]), [0]) : null;
    // Forward layout [D, V] and backward layout [V, D] of W, each a flag or one transpose for the pass.
    const wT = fused ? null : tf.transpose(weight);
    const fwd = transposed
      ? { w: wT ?? weight, transposeB: !wT } // embed [V, D] → [D, V]
      : { w: weight, transposeB: false };
    const bwd = transposed
      ? { w: weight, transposeB: false } // d hidden = dz·W
      : { w: wT ?? weight, transposeB: !wT }; // d hidden = dz·lm_headᵀ
    const dHidden: tf.Tensor2D[] = [];
    let dW: tf.Tensor2D | null = null;
    for (const [r0, r1] of ranges) {
      const [dh, dwPart] = tf.tidy((): tf.Tensor2D[] => {
        const n = r1 - r0;
        const h = tf.slice(hidden, [r0, 0], [n, d]);
        const z = logitsOf(h, fwd);
        const logSm = tf.logSoftmax(temperature === 1 ? z : tf.div(z, temperature));
        const p = tf.exp(logSm);
        const gLogp = tf.reshape(tf.slice(gLogpAll, [r0], [n]), [n, 1]);
        // −p·(g_ℓ + g_H·(log p + H)), then + g_ℓ at the target; all / T.
        let coef: tf.Tensor = gLogp;
        if (gEntAll && ent) {
          const gEnt = tf.reshape(tf.slice(gEntAll, [r0], [n]), [n, 1]);
          const hRow = tf.reshape(tf.slice(ent, [r0], [n]), [n, 1]);
          coef = tf.add(gLogp, tf.mul(gEnt, tf.add(logSm, hRow)));
        }
        let dz = tf.sub<tf.Tensor2D>(tf.mul(oneHotF32(targetsOf(r0, r1), v), gLogp), tf.mul(p, coef));
        if (temperature !== 1) dz = tf.div(dz, temperature);
        const dhChunk = tf.matMul<tf.Tensor2D>(dz, bwd.w, false, bwd.transposeB);
        if (!input.weightGrad) return [dhChunk];
        // Untied: hᵀ·dz [D, V]; tied: dzᵀ·h [V, D]. Flags with the native products, else explicit transposes.
        const part = transposed
          ? fused
            ? tf.matMul<tf.Tensor2D>(dz, h, true, false)
            : tf.matMul<tf.Tensor2D>(tf.transpose(dz), h)
          : fused
            ? tf.matMul<tf.Tensor2D>(h, dz, true, false)
            : tf.matMul<tf.Tensor2D>(tf.transpose(h), dz);
        return [dhChunk, part];
      });
      dHidden.push(dh!);
      if (dwPart) {
        const sum: tf.Tensor2D = dW ? tf.add(dW, dwPart) : dwPart;
        if (dW) tf.dispose([dW, dwPart]);
        dW = sum;
      }
    }
    wT?.dispose();
    const dh = ranges.length === 1 ? dHidden[0]! : tf.concat(dHidden);
    return input.weightGrad ? [dh, dW ?? tf.zerosLike(weight)] : [dh];
  };

  // The weight is a variable (never disposed by a tidy), so it is closed over rather than saved: saving clones it.
  const op = input.weightGrad
    ? tf.customGrad(((hidden: tf.Tensor2D, _w: tf.Tensor2D, save: tf.GradSaveFunc) => ({
        value: forward(hidden, save),
        gradFunc: backward,
      })) as unknown as Parameters<typeof tf.customGrad>[0])
    : tf.customGrad(((hidden: tf.Tensor2D, save: tf.GradSaveFunc) => ({
        value: forward(hidden, save),
        gradFunc: backward,
      })) as unknown as Parameters<typeof tf.customGrad>[0]);
  const out = input.weightGrad ? op(input.hidden, weight) : op(input.hidden);
  if (!withEntropy) return { logp: out as tf.Tensor1D };
  const [logp, entropy] = tf.unstack(out) as [tf.Tensor1D, tf.Tensor1D];
  return { logp, entropy };
}
