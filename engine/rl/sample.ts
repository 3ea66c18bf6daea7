/**
 * The training sample record (docs/algorithms.md §1.1) and the packing of samples into the [B, T] arrays the losses take.
 *
 * Alignment: position t of `lossMask` and `behaviourLogProbs` refers to predicting `tokens[t]` from `tokens[<t]`.
 * Position 0 has no context, so its mask is always 0.
 */

export type SampleRole = 'sys2' | 'sys1' | 'node';

export interface Sample {
  role: SampleRole;
  /** The GRPO group: a question (MARS) or a tree (MARTI-MARS²). Advantages are normalised within it. */
  groupId: string;
  /** The parameter set this sample trains. */
  paramId: string;
  /** x ⊕ y. */
  tokens: number[];
  /** 0/1, same length as tokens; 0 on the prompt and on environment-inserted tokens. */
  lossMask: number[];
  /** log π_beh(tokens[t] | tokens[<t]) recorded by the sampler; 0 where the mask is 0. */
  behaviourLogProbs: number[];
  reward: number;
  /** Set once, on the full pool, before sub-sampling or routing (§1.1 "order of operations"). */
  advantage: number;
}

/** Number of tokens the loss sees for this sample. */
export function maskedTokenCount(s: Pick<Sample, 'lossMask'>): number {
  let n = 0;
  for (const m of s.lossMask) n += m;
  return n;
}

/**
 * Throws, naming the sample and the field, when a record breaks the §1.1 invariants. `label` identifies the sample
 * in the message (for example its index in a batch).
 */
export function validateSample(s: Sample, label = 'sample'): void {
  const T = s.tokens.length;
  if (T === 0) throw new Error(`${label}: tokens is empty.`);
  if (s.lossMask.length !== T) {
    throw new Error(`${label}: lossMask has length ${s.lossMask.length} but tokens has ${T}.`);
  }
  if (s.behaviourLogProbs.length !== T) {
    throw new Error(`${label}: behaviourLogProbs has length ${s.behaviourLogProbs.length} but tokens has ${T}.`);
  }
  for (let t = 0; t < T; t++) {
    const tok = s.tokens[t]!;
    if (!Number.isInteger(tok) || tok < 0) {
      throw new Error(`${label}: tokens[${t}] is ${tok}; token ids are integers ≥ 0.`);
    }
    const m = s.lossMask[t]!;
    if (m !== 0 && m !== 1) throw new Error(`${label}: lossMask[${t}] is ${m}; the mask holds only 0 and 1.`);
    const lp = s.behaviourLogProbs[t]!;
    // A little slack above 0: float32 log-softmax can round the most likely token's log-probability up.
    if (m === 1 && !(Number.isFinite(lp) && lp <= 1e-5)) {
      throw new Error(
        `${label}: behaviourLogProbs[${t}] is ${lp}; a masked-in log-probability must be finite and ≤ 0.`,
      );
    }
    if (m === 0 && lp !== 0) {
      throw new Error(`${label}: behaviourLogProbs[${t}] is ${lp} where the mask is 0; it must be 0 there.`);
    }
  }
  if (s.lossMask[0] !== 0) {
    throw new Error(`${label}: lossMask[0] is 1, but the first token has no context to be predicted from.`);
  }
  if (!Number.isFinite(s.reward)) throw new Error(`${label}: reward is ${s.reward}; it must be finite.`);
  if (!Number.isFinite(s.advantage)) throw new Error(`${label}: advantage is ${s.advantage}; it must be finite.`);
}

/** Right-padded row-major [B, T] arrays for a minibatch; padding has token `padId`, mask 0 and log-prob 0. */
export interface PackedBatch {
  B: number;
  T: number;
  tokens: Int32Array;
  mask: Float32Array;
  behaviourLogProbs: Float32Array;
  advantages: Float32Array;
  /** Unpadded length of each sample. */
  lengths: number[];
}

export function packBatch(samples: readonly Sample[], opts: { padTo?: number; padId?: number } = {}): PackedBatch {
  if (samples.length === 0) throw new Error('packBatch: the minibatch is empty.');
  const longest = Math.max(...samples.map((s) => s.tokens.length));
  const T = opts.padTo ?? longest;
  if (T < longest) throw new Error(`packBatch: padTo is ${T} but the longest sample has ${longest} tokens.`);
  const B = samples.length;
  const padId = opts.padId ?? 0;
  const tokens = new Int32Array(B * T).fill(padId);
  const mask = new Float32Array(B * T);
  const behaviourLogProbs = new Float32Array(B * T);
  const advantages = new Float32Array(B);
  samples.forEach((s, b) => {
    tokens.set(s.tokens, b * T);
    mask.set(s.lossMask, b * T);
    behaviourLogProbs.set(s.behaviourLogProbs, b * T);
    advantages[b] = s.advantage;
  });
  return { B, T, tokens, mask, behaviourLogProbs, advantages, lengths: samples.map((s) => s.tokens.length) };
}
