/**
 * One policy-gradient update over a batch of samples (docs/algorithms.md §2.8 / §3.8, the part both trainers share):
 * ℓold once at the start, then for each epoch and minibatch: forward, policyLoss, gradients, Adam.
 */
import { tf } from '../tensor/backend';
import { fusedOps } from '../tensor/native/fused';
import type { LlamaModel } from '../model/llama';
import { tokenLogProbs, type TokenBatch } from '../model/logProbs';
import type { Rng } from '../random/prng';
import type { Adam, AdamStepResult } from './adam';
import { policyLoss, type PolicyLossOptions, type PolicyLossStats } from './losses';
import { packBatch, type Sample } from './sample';
import { stopGradient } from './stopGradient';
import { tokensPerPass } from './passSize';

export interface PolicyUpdateOptions {
  loss: PolicyLossOptions;
  /** The sampling temperature: log-probs are those of softmax(logits / temperature), as the sampler recorded. */
  temperature?: number;
  epochs?: number;
  miniBatches?: number;
  /** Shuffles the batch before it is split into minibatches (required when miniBatches > 1). */
  rng?: Rng;
  /**
   * Frozen reference policy for the k3 KL term (needed when loss.klCoef > 0): a model, or 'adapters-off' for the
   * policy's own base under LoRA (the same weights with the adapters switched off for the reference's forward).
   */
  reference?: LlamaModel | 'adapters-off';
  padId?: number;
  /**
   * Most padded tokens (rows × longest row) one forward/backward pass may hold. A minibatch larger than this is cut
   * into length-sorted chunks whose gradients are summed (weighted by chunk size) before the single optimiser step:
   * the same update, in bounded memory and with less padding. Default: `defaultTokensPerPass`.
   */
  maxTokensPerPass?: number;
  /** The 0-based training step this update belongs to: where the optimizer's lr schedule is (Adam's scheduleUnit). */
  trainingStep?: number;
}

export interface PolicyUpdateStats extends PolicyLossStats {
  gradNorm: number;
  lr: number;
  optimizerSteps: number;
  skippedSteps: number;
}

/** What every trainer logs of an update, in this order: loss, clipFraction, gradNorm, lr, and kl when a reference ran. */
export function updateMetrics(st: PolicyUpdateStats): Record<string, number> {
  return {
    loss: st.total,
    clipFraction: st.clipFraction,
    gradNorm: st.gradNorm,
    lr: st.lr,
    ...(st.kl === null ? {} : { kl: st.kl }),
  };
}

/**
 * Padded tokens per forward/backward pass: 4096, or fewer on wasm, where one pass's activations are kept within 40%
 * of the 4 GiB heap after the weights, the reference copy, Adam's two moments and the gradients (5 × the parameters).
 * A pass keeps about 12 bytes × layers × (10·hidden + 4·intermediate) per token for the backward pass (measured on the
 * medium model: 1.9 GB live for 16 × 64 tokens, when the heap ran out), plus the vocabulary head per trained token;
 * the rest of the heap goes to Adam's and the summed gradients' temporaries and to fragmentation (a medium step with
 * 430-token passes left a 3.4 GB heap). Small models keep 4096. Without the native fused ops a token keeps twice that
 * (issue 30: SmolLM2's passes of ~350 tokens ran the heap out under MARS_LAB_NATIVE=0). The figures live in
 * engine/rl/passSize.ts, which a config's memory check estimates with too.
 */
export function defaultTokensPerPass(model: LlamaModel): number {
  return tokensPerPass(
    tf.getBackend(),
    model.config,
    model.variables().reduce((s, v) => s + v.size, 0),
    fusedOps() !== null,
  );
}

/** Adam over the trained variables (LoRA's adapters, or every weight), keyed by their own names, so its saved state is stable across processes. */
export function adamVariables(model: LlamaModel): Record<string, tf.Variable> {
  return Object.fromEntries(model.trainable());
}

function toTokenBatch(b: ReturnType<typeof packBatch>): TokenBatch {
  return { ids: b.tokens, lengths: b.lengths, width: b.T };
}

function shuffled<T>(xs: readonly T[], rng: Rng): T[] {
  const out = xs.slice();
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

function split<T>(xs: readonly T[], parts: number): T[][] {
  const size = Math.ceil(xs.length / parts);
  const out: T[][] = [];
  for (let i = 0; i < xs.length; i += size) out.push(xs.slice(i, i + size));
  return out;
}

const SUMMED: ReadonlySet<string> = new Set(['tokens', 'tisVetoed', 'emptySamples']);
const TOKEN_WEIGHTED: ReadonlySet<string> = new Set(['clipFraction', 'ratioMean', 'tisWeightMean']);

/**
 * Combine statistics of parts of one batch: counts add up, ratio extremes take min/max, token-level shares are
 * weighted by tokens, and sample means by `weight` (each part's share of the samples). null stays null.
 */
function combineStats(parts: { stats: PolicyLossStats; weight: number }[]): PolicyLossStats {
  const out: Record<string, number | null> = {};
  const rec = (s: PolicyLossStats) => s as unknown as Record<string, number | null>;
  const tokens = parts.reduce((a, p) => a + p.stats.tokens, 0);
  for (const key of Object.keys(parts[0]!.stats)) {
    const vals = parts.map((p) => rec(p.stats)[key]);
    if (!vals.every((v) => typeof v === 'number')) {
      out[key] = null;
      continue;
    }
    const xs = vals;
    if (SUMMED.has(key)) out[key] = xs.reduce((a, b) => a + b, 0);
    else if (key === 'ratioMin') out[key] = Math.min(...xs);
    else if (key === 'ratioMax') out[key] = Math.max(...xs);
    else if (TOKEN_WEIGHTED.has(key)) {
      out[key] = tokens > 0 ? parts.reduce((a, p, i) => a + xs[i]! * p.stats.tokens, 0) / tokens : xs[0]!;
    } else out[key] = parts.reduce((a, p, i) => a + xs[i]! * p.weight, 0);
  }
  return out as unknown as PolicyLossStats;
}

/** Indices cut into chunks of at most `maxTokens` padded tokens, longest first (so padding inside a chunk is small). */
function lengthChunks(indices: readonly number[], lengthOf: (i: number) => number, maxTokens: number): number[][] {
  const sorted = indices.slice().sort((a, b) => lengthOf(b) - lengthOf(a) || a - b);
  const chunks: number[][] = [];
  for (const i of sorted) {
    const cur = chunks.at(-1);
    if (cur && (cur.length + 1) * lengthOf(cur[0]!) <= maxTokens) cur.push(i);
    else chunks.push([i]);
  }
  return chunks;
}

/** What every forward pass of one update shares: the samples, how they are packed and cut, the temperature. */
interface Passes {
  samples: readonly Sample[];
  padId: number;
  temperature: number;
  maxTokens: number;
  lengthOf: (i: number) => number;
}

/** A training pass's further inputs: the policy, its loss, and ℓold / ℓref per sample when they were computed. */
interface TrainingPasses extends Passes {
  model: LlamaModel;
  loss: PolicyLossOptions;
  wantEntropy: boolean;
  old: Float32Array[] | null;
  ref: Float32Array[] | null;
}

/** ℓold (and ℓref) per sample, computed before any update; rows keep each sample's own length. */
async function logProbsBefore(m: LlamaModel, p: Passes, all: readonly number[]): Promise<Float32Array[]> {
  const { samples, padId, temperature } = p;
  const out = new Array<Float32Array>(samples.length);
  for (const chunk of lengthChunks(all, p.lengthOf, p.maxTokens)) {
    const packed = packBatch(
      chunk.map((i) => samples[i]!),
      { padId },
    );
    const t = tf.tidy(() => tokenLogProbs(m, toTokenBatch(packed), { temperature, only: packed.mask }).logp);
    const data = (await t.data()) as Float32Array;
    t.dispose();
    chunk.forEach((i, b) => (out[i] = data.slice(b * packed.T, b * packed.T + samples[i]!.tokens.length)));
  }
  return out;
}

/** The reference's log-probs: another model's, or under 'adapters-off' the policy's base (its adapters off meanwhile). */
async function referenceLogProbs(
  model: LlamaModel,
  reference: LlamaModel | 'adapters-off',
  p: Passes,
  all: readonly number[],
): Promise<Float32Array[]> {
  if (reference !== 'adapters-off') return logProbsBefore(reference, p, all);
  const lora = model.lora;
  if (!lora) throw new Error("policyUpdate: reference 'adapters-off' needs a model trained through LoRA adapters.");
  model.lora = null;
  try {
    return await logProbsBefore(model, p, all);
  } finally {
    model.lora = lora;
  }
}

/** Gradients of `weight` × (the loss of these samples), and the loss statistics. */
async function chunkGradients(p: TrainingPasses, chunk: number[], weight: number) {
  const { samples, padId, temperature, model, old, ref } = p;
  const packed = packBatch(
    chunk.map((i) => samples[i]!),
    { padId },
  );
  const rowsOf = (src: Float32Array[]) => {
    const out = new Float32Array(packed.B * packed.T);
    chunk.forEach((i, b) => out.set(src[i]!, b * packed.T));
    return tf.tensor2d(out, [packed.B, packed.T]);
  };
  const consts = {
    mask: tf.tensor2d(packed.mask, [packed.B, packed.T]),
    beh: tf.tensor2d(packed.behaviourLogProbs, [packed.B, packed.T]),
    adv: tf.tensor1d(packed.advantages),
    old: old ? rowsOf(old) : null,
    ref: ref ? rowsOf(ref) : null,
  };
  let pl: ReturnType<typeof policyLoss> | undefined;
  const { value, grads } = tf.variableGrads(() => {
    const { logp, entropy } = tokenLogProbs(model, toTokenBatch(packed), {
      temperature,
      entropy: p.wantEntropy,
      only: packed.mask,
    });
    pl = policyLoss(
      {
        logp,
        entropy,
        oldLogp: consts.old ?? stopGradient(logp),
        behLogp: consts.beh,
        refLogp: consts.ref ?? undefined,
        mask: consts.mask,
        advantages: consts.adv,
      },
      p.loss,
    );
    return weight === 1 ? pl.loss : tf.mul(pl.loss, weight);
  }, model.variables());
  value.dispose();
  if (weight !== 1) pl!.loss.dispose(); // the unscaled loss outlives the gradient scope; the scaled one was `value`
  tf.dispose([
    consts.mask,
    consts.beh,
    consts.adv,
    ...(consts.old ? [consts.old] : []),
    ...(consts.ref ? [consts.ref] : []),
  ]);
  return { grads, stats: await pl!.stats() };
}

/** One minibatch's gradients, summed over its length chunks (each weighted by its share), and each chunk's statistics. */
async function minibatchGradients(p: TrainingPasses, mb: number[]) {
  let sum: Record<string, tf.Tensor> | null = null;
  const parts: { stats: PolicyLossStats; weight: number }[] = [];
  for (const chunk of lengthChunks(mb, p.lengthOf, p.maxTokens)) {
    const weight = chunk.length / mb.length;
    const { grads, stats: st } = await chunkGradients(p, chunk, weight);
    parts.push({ stats: st, weight });
    if (!sum) sum = grads;
    else {
      const prev: Record<string, tf.Tensor> = sum;
      sum = Object.fromEntries(Object.entries(prev).map(([k, g]) => [k, tf.add(g, grads[k]!)]));
      tf.dispose([...Object.values(prev), ...Object.values(grads)]);
    }
  }
  return { sum: sum!, parts };
}

export async function policyUpdate(
  model: LlamaModel,
  optimizer: Adam,
  samples: readonly Sample[],
  opts: PolicyUpdateOptions,
): Promise<PolicyUpdateStats> {
  if (samples.length === 0) throw new Error('policyUpdate: no samples to train on.');
  const epochs = opts.epochs ?? 1;
  const miniBatches = Math.min(opts.miniBatches ?? 1, samples.length);
  if (miniBatches > 1 && !opts.rng) throw new Error('policyUpdate: miniBatches > 1 needs an rng to shuffle the batch.');
  if ((opts.loss.klCoef ?? 0) > 0 && !opts.reference) {
    throw new Error('policyUpdate: loss.klCoef > 0 needs a reference model.');
  }
  const temperature = opts.temperature ?? 1;
  const padId = opts.padId ?? 0;
  const internalName = new Map([...model.trainable()].map(([name, v]) => [v.name, name]));
  // With one pass over one minibatch the policy has not moved yet, so ℓold is the training forward's own value
  // (the ratio is exactly 1) and the extra forward pass is saved.
  const onePass = epochs === 1 && miniBatches === 1;
  // The entropy bonus needs the policy's per-token entropy; it costs a pass over the vocabulary, so only when used.
  const wantEntropy = (opts.loss.entCoef ?? 0) !== 0;

  const maxTokens = opts.maxTokensPerPass ?? defaultTokensPerPass(model);
  const lengthOf = (i: number) => samples[i]!.tokens.length;
  const all = samples.map((_, i) => i);
  const passes: Passes = { samples, padId, temperature, maxTokens, lengthOf };

  const old = onePass ? null : await logProbsBefore(model, passes, all);
  const ref = (opts.loss.klCoef ?? 0) > 0 ? await referenceLogProbs(model, opts.reference!, passes, all) : null;
  const training: TrainingPasses = { ...passes, model, loss: opts.loss, wantEntropy, old, ref };

  const stats: PolicyLossStats[] = [];
  let last: AdamStepResult | null = null;
  let skipped = 0;
  let steps = 0;
  for (let e = 0; e < epochs; e++) {
    const order = miniBatches > 1 ? shuffled(all, opts.rng!) : all;
    for (const mb of split(order, miniBatches)) {
      const { sum, parts } = await minibatchGradients(training, mb);
      const named: Record<string, tf.Tensor> = {};
      for (const [varName, g] of Object.entries(sum)) named[internalName.get(varName) ?? varName] = g;
      last = await optimizer.step(named, opts.trainingStep);
      if (last.skipped) skipped++;
      else steps++;
      tf.dispose(Object.values(sum));
      stats.push(combineStats(parts));
    }
  }
  return {
    ...combineStats(stats.map((st) => ({ stats: st, weight: 1 / stats.length }))),
    gradNorm: last!.gradNorm,
    lr: last!.lr,
    optimizerSteps: steps,
    skippedSteps: skipped,
  };
}
