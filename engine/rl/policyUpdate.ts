/**
 * One policy-gradient update over a batch of samples (ALGORITHMS.md §2.8 / §3.8, the part both trainers share):
 * ℓold once at the start, then for each epoch and minibatch: forward, policyLoss, gradients, Adam.
 */
import { tf } from '../tensor/backend';
import type { LlamaModel } from '../model/llama';
import { tokenLogProbs, type TokenBatch } from '../model/logProbs';
import type { Rng } from '../random/prng';
import type { Adam, AdamStepResult } from './adam';
import { policyLoss, type PolicyLossOptions, type PolicyLossStats } from './losses';
import { packBatch, type Sample } from './sample';
import { stopGradient } from './stopGradient';

export interface PolicyUpdateOptions {
  loss: PolicyLossOptions;
  /** The sampling temperature: log-probs are those of softmax(logits / temperature), as the sampler recorded. */
  temperature?: number;
  epochs?: number;
  miniBatches?: number;
  /** Shuffles the batch before it is split into minibatches (required when miniBatches > 1). */
  rng?: Rng;
  /** Frozen reference policy for the k3 KL term (needed when loss.klCoef > 0). */
  reference?: LlamaModel;
  padId?: number;
}

export interface PolicyUpdateStats extends PolicyLossStats {
  gradNorm: number;
  lr: number;
  optimizerSteps: number;
  skippedSteps: number;
}

/** Adam keyed by the model's own parameter names, so its saved state is stable across processes. */
export function adamVariables(model: LlamaModel): Record<string, tf.Variable> {
  return Object.fromEntries(model.params);
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

/** Mean of each numeric statistic over the minibatches (null stays null). */
function meanStats(all: PolicyLossStats[]): PolicyLossStats {
  const out = { ...all[0]! } as Record<string, number | null>;
  for (const key of Object.keys(out)) {
    const vals = all.map((s) => (s as unknown as Record<string, number | null>)[key]);
    if (vals.every((v) => typeof v === 'number')) {
      const sum = (vals as number[]).reduce((a, b) => a + b, 0);
      out[key] = ['tokens', 'tisVetoed', 'emptySamples'].includes(key) ? sum : sum / vals.length;
    }
  }
  return out as unknown as PolicyLossStats;
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
  if ((opts.loss.klCoef ?? 0) > 0 && !opts.reference) throw new Error('policyUpdate: loss.klCoef > 0 needs a reference model.');
  const temperature = opts.temperature ?? 1;
  const padId = opts.padId ?? 0;
  const internalName = new Map([...model.params].map(([name, v]) => [v.name, name]));
  // With one pass over one minibatch the policy has not moved yet, so ℓold is the training forward's own value
  // (the ratio is exactly 1) and the extra forward pass is saved.
  const onePass = epochs === 1 && miniBatches === 1;
  // The entropy bonus needs the policy's per-token entropy; it costs a pass over the vocabulary, so only when used.
  const wantEntropy = (opts.loss.entCoef ?? 0) !== 0;

  /** ℓold (and ℓref) per sample, computed before any update; rows keep each sample's own length. */
  const before = async (m: LlamaModel): Promise<Float32Array[]> => {
    const packed = packBatch(samples, { padId });
    const t = tf.tidy(() => tokenLogProbs(m, toTokenBatch(packed), { temperature }).logp);
    const data = (await t.data()) as Float32Array;
    t.dispose();
    return samples.map((_, b) => data.slice(b * packed.T, b * packed.T + samples[b]!.tokens.length));
  };
  const old = onePass ? null : await before(model);
  const ref = opts.reference && (opts.loss.klCoef ?? 0) > 0 ? await before(opts.reference) : null;

  const stats: PolicyLossStats[] = [];
  let last: AdamStepResult | null = null;
  let skipped = 0;
  let steps = 0;
  const indices = samples.map((_, i) => i);
  for (let e = 0; e < epochs; e++) {
    const order = miniBatches > 1 ? shuffled(indices, opts.rng!) : indices;
    for (const mb of split(order, miniBatches)) {
      const packed = packBatch(mb.map((i) => samples[i]!), { padId });
      const rowsOf = (src: Float32Array[]) => {
        const out = new Float32Array(packed.B * packed.T);
        mb.forEach((i, b) => out.set(src[i]!, b * packed.T));
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
        const { logp, entropy } = tokenLogProbs(model, toTokenBatch(packed), { temperature, entropy: wantEntropy });
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
          opts.loss,
        );
        return pl.loss;
      }, model.variables());
      value.dispose();
      const named: Record<string, tf.Tensor> = {};
      for (const [varName, g] of Object.entries(grads)) named[internalName.get(varName) ?? varName] = g;
      last = await optimizer.step(named);
      if (last.skipped) skipped++;
      else steps++;
      tf.dispose(grads);
      tf.dispose([consts.mask, consts.beh, consts.adv, ...(consts.old ? [consts.old] : []), ...(consts.ref ? [consts.ref] : [])]);
      stats.push(await pl!.stats());
    }
  }
  return { ...meanStats(stats), gradNorm: last!.gradNorm, lr: last!.lr, optimizerSteps: steps, skippedSteps: skipped };
}
