/**
 * Policy losses on [B, T] per-token log-probabilities (docs/algorithms.md §1.3).
 *
 * `policyLoss` returns the scalar to differentiate and, separately, a handle to the logged statistics. Call it inside
 * the function given to `tf.variableGrads`/`tf.grads`:
 *
 *   let pl: PolicyLoss | undefined;
 *   const { value, grads } = tf.variableGrads(() => (pl = policyLoss({ logp: forward(), ... }, opts)).loss);
 *   const stats = await pl!.stats();   // or pl!.dispose() when not logging
 *
 * The statistics are packed in one tensor that is `tf.keep`-ed so it survives the gradient scope; `stats()` reads
 * and frees it, `dispose()` only frees it. Exactly one of them must be called.
 *
 * Every op on the path from `logp` (and `entropy`) to the loss has a gradient on the cpu and wasm backends:
 * sub/mul/div/exp/sum/mean/minimum/maximum/clipByValue/reshape only. Comparisons (Greater, Less, …) appear only in
 * statistics, which are not on that path, or inside `withoutGradient`, which TF.js does not tape.
 */
import { tf } from '../tensor/backend';
import { stopGradient, withoutGradient } from './stopGradient';

export type PolicyLossKind = 'ppoToken' | 'gspo';

export interface PolicyLossInputs {
  /** ℓπ [B, T]: from the training forward pass; gradients flow through it. */
  logp: tf.Tensor;
  /** ℓold [B, T]: at the start of the update. Treated as a constant. */
  oldLogp: tf.Tensor;
  /** ℓbeh [B, T]: recorded by the sampler. Needed only with TIS. Treated as a constant. */
  behLogp?: tf.Tensor;
  /** ℓref0 [B, T]: from the frozen reference copy. Needed when klCoef > 0. Treated as a constant. */
  refLogp?: tf.Tensor;
  /** m [B, T], 0/1. Position t refers to predicting token t from tokens < t. */
  mask: tf.Tensor;
  /** A [B], broadcast to every masked-in token. */
  advantages: tf.Tensor;
  /** Per-token policy entropy [B, T]; differentiable. Needed when entCoef ≠ 0. */
  entropy?: tf.Tensor;
}

export interface TisOptions {
  enabled: boolean;
  /** Upper bound on w_t (default 2). */
  cap?: number;
  /** A masked-in token with exp(ℓold − ℓbeh) below this zeroes its whole sequence (default 1e-4). */
  vetoBelow?: number;
}

export interface PolicyLossOptions {
  kind: PolicyLossKind;
  /** ε_lo (default 0.2). */
  clipLow?: number;
  /** ε_hi (default 0.2). */
  clipHigh?: number;
  /** β_KL on the k3 estimator (default 0: the KL term is then not built at all). */
  klCoef?: number;
  tis?: TisOptions;
  /** β_ent (default 0). */
  entCoef?: number;
}

export interface PolicyLossStats {
  /** The loss value that was differentiated. */
  total: number;
  /** mean_i L_i, TIS weights included. */
  policyLoss: number;
  /** mean_i of the per-sample token-mean k3; null without refLogp. */
  kl: number | null;
  /** mean_i of the per-sample token-mean entropy; null without an entropy tensor. */
  entropy: number | null;
  /**
   * Share where the clipped branch is active (so its gradient is zero): over masked-in tokens for ppoToken, over
   * samples with tokens for gspo.
   */
  clipFraction: number;
  /** ρ_t over masked-in tokens (ppoToken) or s_i over samples with tokens (gspo); 1 when there are none. */
  ratioMean: number;
  ratioMin: number;
  ratioMax: number;
  /** Mean w_t over masked-in tokens, after the veto; null with TIS off. */
  tisWeightMean: number | null;
  /** Sequences zeroed by the TIS veto. */
  tisVetoed: number;
  /** Samples with no masked-in token: they contribute 0 to the loss but still count in the batch mean. */
  emptySamples: number;
  /** Masked-in tokens in the batch. */
  tokens: number;
}

export interface PolicyLoss {
  loss: tf.Scalar;
  /** Reads the statistics and frees their tensor. Can be awaited more than once. */
  stats(): Promise<PolicyLossStats>;
  /** Frees the statistics without reading them. */
  dispose(): void;
}

/** log-ratios are clamped before exp, as verl does, so one wild token cannot turn the loss or its gradient into ∞/NaN. */
const MAX_LOG_RATIO = 20;

interface Resolved {
  kind: PolicyLossKind;
  clipLow: number;
  clipHigh: number;
  klCoef: number;
  entCoef: number;
  tis: { cap: number; vetoBelow: number } | null;
}

function resolveOptions(o: PolicyLossOptions): Resolved {
  if (o.kind !== 'ppoToken' && o.kind !== 'gspo') {
    throw new Error(`policyLoss: kind must be 'ppoToken' or 'gspo', got '${String(o.kind)}'.`);
  }
  const clipLow = o.clipLow ?? 0.2;
  const clipHigh = o.clipHigh ?? 0.2;
  const klCoef = o.klCoef ?? 0;
  const entCoef = o.entCoef ?? 0;
  if (!(clipLow >= 0 && clipLow < 1)) throw new Error(`policyLoss: clipLow must be in [0, 1), got ${clipLow}.`);
  if (!(clipHigh >= 0) || !Number.isFinite(clipHigh)) {
    throw new Error(`policyLoss: clipHigh must be a finite number ≥ 0, got ${clipHigh}.`);
  }
  if (!(klCoef >= 0) || !Number.isFinite(klCoef)) {
    throw new Error(`policyLoss: klCoef must be a finite number ≥ 0, got ${klCoef}.`);
  }
  if (!Number.isFinite(entCoef)) throw new Error(`policyLoss: entCoef must be finite, got ${entCoef}.`);
  let tis: Resolved['tis'] = null;
  if (o.tis?.enabled) {
    const cap = o.tis.cap ?? 2;
    const vetoBelow = o.tis.vetoBelow ?? 1e-4;
    if (!(cap > 0) || !Number.isFinite(cap)) {
      throw new Error(`policyLoss: tis.cap must be a finite number > 0, got ${cap}.`);
    }
    // Above 1 the veto would fire on ordinary tokens whose sampler and trainer agree exactly.
    if (!(vetoBelow >= 0 && vetoBelow <= 1)) {
      throw new Error(`policyLoss: tis.vetoBelow must be in [0, 1], got ${vetoBelow}.`);
    }
    tis = { cap, vetoBelow };
  }
  return { kind: o.kind, clipLow, clipHigh, klCoef, entCoef, tis };
}

function checkShapes(inp: PolicyLossInputs, o: Resolved): { B: number; T: number } {
  if (inp.logp.rank !== 2) {
    throw new Error(`policyLoss: logp must be [B, T], got shape [${inp.logp.shape.join(', ')}].`);
  }
  const [B, T] = inp.logp.shape as [number, number];
  if (B === 0 || T === 0) throw new Error(`policyLoss: the batch is empty (logp has shape [${B}, ${T}]).`);
  const same = (name: string, t: tf.Tensor | undefined): void => {
    if (t && (t.rank !== 2 || t.shape[0] !== B || t.shape[1] !== T)) {
      throw new Error(`policyLoss: ${name} has shape [${t.shape.join(', ')}] but logp has [${B}, ${T}].`);
    }
  };
  same('oldLogp', inp.oldLogp);
  same('behLogp', inp.behLogp);
  same('refLogp', inp.refLogp);
  same('mask', inp.mask);
  same('entropy', inp.entropy);
  if (inp.advantages.rank !== 1 || inp.advantages.shape[0] !== B) {
    throw new Error(`policyLoss: advantages has shape [${inp.advantages.shape.join(', ')}] but must be [${B}].`);
  }
  if (o.tis && !inp.behLogp) {
    throw new Error('policyLoss: TIS is enabled but behLogp (the sampler log-probs) was not given.');
  }
  if (o.klCoef > 0 && !inp.refLogp) {
    throw new Error(`policyLoss: klCoef is ${o.klCoef} but refLogp (the reference log-probs) was not given.`);
  }
  if (o.entCoef !== 0 && !inp.entropy) {
    throw new Error(`policyLoss: entCoef is ${o.entCoef} but no entropy tensor was given.`);
  }
  return { B, T };
}

/**
 * k3_t = exp(ℓref − ℓπ) − (ℓref − ℓπ) − 1 per token (§1.3): ≥ 0, and 0 exactly where π = π_ref.
 * Written as expm1(d) − d, which avoids the float32 cancellation of exp(d) − 1 for small d, and floored at 0 so
 * rounding can never report a negative KL. d is clamped to ±20 so that exp cannot overflow.
 */
export function k3(logp: tf.Tensor, refLogp: tf.Tensor): tf.Tensor {
  return tf.tidy(() => {
    const d = tf.clipByValue(tf.sub(refLogp, logp), -MAX_LOG_RATIO, MAX_LOG_RATIO);
    return tf.maximum(tf.sub(tf.expm1(d), d), 0);
  });
}

/**
 * TIS weights [B, T] (§1.3): w_t = min(exp(ℓold − ℓbeh), cap), and w = 0 on the whole row when any masked-in token
 * has exp(ℓold − ℓbeh) < vetoBelow. The result carries no gradient.
 */
export function tisWeights(
  oldLogp: tf.Tensor,
  behLogp: tf.Tensor,
  mask: tf.Tensor,
  opts: { cap?: number; vetoBelow?: number } = {},
): tf.Tensor {
  const cap = opts.cap ?? 2;
  const vetoBelow = opts.vetoBelow ?? 1e-4;
  return withoutGradient(
    (old, beh, m) => {
      const mf = tf.cast(m, 'float32');
      // Masked-out positions get log-ratio 0 (weight 1, never a veto) whatever garbage they hold.
      const logW = tf.mul(tf.sub(old, beh), mf);
      const w = tf.minimum(tf.exp(logW), cap);
      const vetoTok = tf.mul(tf.cast(tf.less(logW, Math.log(vetoBelow)), 'float32'), mf);
      const keep = tf.sub(1, tf.max(vetoTok, 1, true));
      return tf.mul(w, keep);
    },
    [oldLogp, behLogp, mask],
  );
}

/** One loss branch's L_i [B], its ratio (ρ_t [B, T] or s_i [B]) and where min() picks the clipped branch. */
interface Branch {
  perSample: tf.Tensor;
  ratio: tf.Tensor;
  /** 0/1 where min() picks the clipped branch; statistics only. */
  clippedActive: () => tf.Tensor;
}

/** What both branches and the statistics use: the mask, the token mean, the TIS weights, the clip bounds. */
interface Common {
  m: tf.Tensor;
  hasTokens: tf.Tensor;
  tokenMean: (x: tf.Tensor) => tf.Tensor;
  w: tf.Tensor | null;
  lo: number;
  hi: number;
}

/** ppoToken: per-token clipped ratio ρ_t = exp(ℓπ − ℓold), TIS-weighted, averaged over each sample's tokens. */
function ppoTokenBranch(logp: tf.Tensor, old: tf.Tensor, adv: tf.Tensor, c: Common): Branch {
  const logRatio = tf.clipByValue(tf.mul(tf.sub(logp, old), c.m), -MAX_LOG_RATIO, MAX_LOG_RATIO);
  const ratio = tf.exp(logRatio);
  const unclipped = tf.mul(ratio, adv);
  const clipped = tf.mul(tf.clipByValue(ratio, c.lo, c.hi), adv);
  // On ties minimum's gradient goes to its first argument, so the unclipped branch keeps the gradient there.
  let tok = tf.neg(tf.minimum(unclipped, clipped));
  if (c.w) tok = tf.mul(tok, c.w);
  const perSample = c.tokenMean(tok);
  return { perSample, ratio, clippedActive: () => tf.cast(tf.greater(unclipped, clipped), 'float32') };
}

/** gspo: one clipped sequence ratio s_i = exp(token-mean(ℓπ − ℓanc)) per sample. */
function gspoBranch(logp: tf.Tensor, anc: tf.Tensor, advB: tf.Tensor, c: Common): Branch {
  const meanLogRatio = tf.clipByValue(c.tokenMean(tf.sub(logp, anc)), -MAX_LOG_RATIO, MAX_LOG_RATIO);
  const ratio = tf.exp(meanLogRatio);
  const unclipped = tf.mul(ratio, advB);
  const clipped = tf.mul(tf.clipByValue(ratio, c.lo, c.hi), advB);
  let seq = tf.neg(tf.minimum(unclipped, clipped));
  // Each token carries the sequence loss, so TIS scales it by the sequence's mean token weight.
  seq = c.w ? tf.mul(seq, c.tokenMean(c.w)) : tf.mul(seq, c.hasTokens);
  return { perSample: seq, ratio, clippedActive: () => tf.cast(tf.greater(unclipped, clipped), 'float32') };
}

/** The loss's terms, in the order of PolicyLossStats' first four fields. */
interface Terms {
  total: tf.Tensor;
  policyTerm: tf.Tensor;
  klTerm: tf.Tensor | null;
  entTerm: tf.Tensor | null;
}

/** The logged statistics packed in one tensor, kept so it survives the gradient scope (read by statsHandle). */
function packStats(kind: PolicyLossKind, B: number, c: Common, branch: Branch, terms: Terms): tf.Tensor {
  const { m, hasTokens, w } = c;
  const { ratio, clippedActive } = branch;
  return tf.keep(
    tf.tidy(() => {
      const nTok = tf.sum(m);
      const nTokSafe = tf.maximum(nTok, 1);
      let ratioMean: tf.Tensor, ratioMin: tf.Tensor, ratioMax: tf.Tensor, clipFraction: tf.Tensor;
      if (kind === 'ppoToken') {
        ratioMean = tf.div(tf.sum(tf.mul(ratio, m)), nTokSafe);
        ratioMax = tf.max(tf.add(tf.mul(ratio, m), tf.mul(tf.sub(1, m), -1e30)));
        ratioMin = tf.min(tf.add(tf.mul(ratio, m), tf.mul(tf.sub(1, m), 1e30)));
        clipFraction = tf.div(tf.sum(tf.mul(clippedActive(), m)), nTokSafe);
      } else {
        const nSeq = tf.maximum(tf.sum(hasTokens), 1);
        ratioMean = tf.div(tf.sum(tf.mul(ratio, hasTokens)), nSeq);
        ratioMax = tf.max(tf.add(tf.mul(ratio, hasTokens), tf.mul(tf.sub(1, hasTokens), -1e30)));
        ratioMin = tf.min(tf.add(tf.mul(ratio, hasTokens), tf.mul(tf.sub(1, hasTokens), 1e30)));
        clipFraction = tf.div(tf.sum(tf.mul(clippedActive(), hasTokens)), nSeq);
      }
      const zero = tf.scalar(0);
      const tisMean = w ? tf.div(tf.sum(tf.mul(w, m)), nTokSafe) : zero;
      // A row with tokens whose weights are all 0 was vetoed: min(exp(·), cap) itself is never 0 for a finite log-ratio above the veto.
      const vetoed = w ? tf.sum(tf.mul(hasTokens, tf.cast(tf.equal(tf.sum(tf.mul(w, m), 1), 0), 'float32'))) : zero;
      return tf.stack([
        terms.total,
        terms.policyTerm,
        terms.klTerm ?? zero,
        terms.entTerm ?? zero,
        clipFraction,
        ratioMean,
        ratioMin,
        ratioMax,
        tisMean,
        vetoed,
        tf.sub(B, tf.sum(hasTokens)),
        nTok,
      ]);
    }),
  );
}

/** The handle policyLoss returns: the loss, and the packed statistics read (once, then freed) or only freed. */
function statsHandle(
  loss: tf.Scalar,
  box: { packed: tf.Tensor | null },
  has: { ref: boolean; ent: boolean; tis: boolean },
): PolicyLoss {
  let read: Promise<PolicyLossStats> | null = null;
  return {
    loss,
    stats(): Promise<PolicyLossStats> {
      if (read) return read;
      const t = box.packed;
      if (!t) return Promise.reject(new Error('policyLoss: the statistics were already disposed.'));
      box.packed = null;
      read = t.data().then((d) => {
        t.dispose();
        const tokens = d[11]!;
        const anyTokens = tokens > 0;
        return {
          total: d[0]!,
          policyLoss: d[1]!,
          kl: has.ref ? d[2]! : null,
          entropy: has.ent ? d[3]! : null,
          clipFraction: d[4]!,
          ratioMean: anyTokens ? d[5]! : 1,
          ratioMin: anyTokens ? d[6]! : 1,
          ratioMax: anyTokens ? d[7]! : 1,
          tisWeightMean: has.tis ? (anyTokens ? d[8]! : 1) : null,
          tisVetoed: d[9]!,
          emptySamples: d[10]!,
          tokens,
        };
      });
      return read;
    },
    dispose(): void {
      box.packed?.dispose();
      box.packed = null;
    },
  };
}

/** The §1.3 objective L = mean_i L_i + β_KL·mean_i k̄3_i − β_ent·mean_i H̄_i, with ppoToken or gspo for L_i. */
export function policyLoss(inputs: PolicyLossInputs, options: PolicyLossOptions): PolicyLoss {
  const o = resolveOptions(options);
  const { B } = checkShapes(inputs, o);
  const box: { packed: tf.Tensor | null } = { packed: null };

  const loss = tf.tidy(() => {
    const logp = inputs.logp;
    const m = stopGradient(tf.cast(inputs.mask, 'float32'));
    const old = stopGradient(inputs.oldLogp);
    const beh = inputs.behLogp ? stopGradient(inputs.behLogp) : null;
    const advB = stopGradient(tf.cast(inputs.advantages, 'float32'));
    const adv = tf.reshape(advB, [B, 1]);
    const count = tf.sum(m, 1); // [B]
    // max(Σm, 1): an empty sample's numerator is 0, so its token mean is 0 instead of 0/0.
    const denom = tf.maximum(count, 1);
    const hasTokens = tf.minimum(count, 1);
    const tokenMean = (x: tf.Tensor): tf.Tensor => tf.div(tf.sum(tf.mul(x, m), 1), denom);
    const w = o.tis ? tisWeights(old, beh!, m, o.tis) : null;
    const c: Common = { m, hasTokens, tokenMean, w, lo: 1 - o.clipLow, hi: 1 + o.clipHigh };

    // §1.3 gspo: ℓanc = ℓbeh with TIS (the sampler is the distribution the data came from), else ℓold.
    const branch =
      o.kind === 'ppoToken' ? ppoTokenBranch(logp, old, adv, c) : gspoBranch(logp, o.tis ? beh! : old, advB, c);
    const policyTerm = tf.mean(branch.perSample);

    let klTerm: tf.Tensor | null = null;
    if (inputs.refLogp) {
      const ref = stopGradient(inputs.refLogp);
      klTerm = tf.mean(tokenMean(k3(tf.mul(logp, m), tf.mul(ref, m))));
    }
    let entTerm: tf.Tensor | null = null;
    if (inputs.entropy) entTerm = tf.mean(tokenMean(inputs.entropy));

    let total = policyTerm;
    // Terms with a zero coefficient are left out, not multiplied by 0, so they cannot leak NaN into the gradient.
    if (o.klCoef > 0) total = tf.add(total, tf.mul(klTerm!, o.klCoef));
    if (o.entCoef !== 0) total = tf.sub(total, tf.mul(entTerm!, o.entCoef));

    box.packed = packStats(o.kind, B, c, branch, { total, policyTerm, klTerm, entTerm });
    return total as tf.Scalar;
  });

  return statsHandle(loss, box, { ref: Boolean(inputs.refLogp), ent: Boolean(inputs.entropy), tis: Boolean(o.tis) });
}
