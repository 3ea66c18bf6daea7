/**
 * The same tiny model trains on every backend present here, and the losses agree across backends.
 * Backends that cannot initialise (tensorflow without libtensorflow, webgpu without an adapter) are reported, not
 * silently dropped.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { cloneModel } from '../../../engine/model/hfWeights';
import { lastPositionLogits } from '../../../engine/model/inference';
import { Rng } from '../../../engine/random/prng';
import { Adam } from '../../../engine/rl/adam';
import { adamVariables, policyUpdate } from '../../../engine/rl/policyUpdate';
import type { BackendName } from '../../../engine/tensor/backend';
import { fixedSamples } from '../../helpers/fixedSamples';
import { tinyModel } from '../../helpers/tinyModel';
import { availableBackends, useBackend } from '../../helpers/backends';

const STEPS = 8;

async function trainOn(backend: BackendName): Promise<{ losses: number[]; gradNorms: number[]; logits: number[]; moved: number }> {
  await useBackend(backend);
  const model = tinyModel(5, {}, 0.1);
  const reference = cloneModel(model, false);
  const opt = new Adam(adamVariables(model), { lr: 3e-3 });
  const samples = fixedSamples(model.config.vocab_size, 17, 6);
  const rng = new Rng(1);
  const initial = Array.from(await lastPositionLogits(model, samples[0]!.tokens));
  const losses: number[] = [];
  const gradNorms: number[] = [];
  for (let s = 0; s < STEPS; s++) {
    // Two epochs of two minibatches with a KL term: ℓold, ℓref and the clipped ratio all take part.
    const st = await policyUpdate(model, opt, samples, { loss: { kind: 'ppoToken', klCoef: 0.05 }, epochs: 2, miniBatches: 2, rng, reference });
    losses.push(st.total);
    gradNorms.push(st.gradNorm);
  }
  const logits = Array.from(await lastPositionLogits(model, samples[0]!.tokens));
  model.dispose();
  reference.dispose();
  opt.dispose();
  return { losses, gradNorms, logits, moved: Math.max(...logits.map((x, i) => Math.abs(x - initial[i]!))) };
}

describe('training agrees across backends', () => {
  let backends: BackendName[];
  beforeAll(async () => {
    backends = await availableBackends();
    console.info(`backends present: ${backends.join(', ')}`);
  });

  it('cpu and wasm are both present (the two that need no hardware)', () => {
    expect(backends).toEqual(expect.arrayContaining(['cpu', 'wasm']));
  });

  it('every present backend trains the same model to the same losses within float32 tolerance', async () => {
    const results = new Map<BackendName, Awaited<ReturnType<typeof trainOn>>>();
    for (const b of backends) results.set(b, await trainOn(b));
    const ref = results.get("cpu")!;
    // The policy moved: agreement between models that did not train would mean nothing.
    expect(ref.moved).toBeGreaterThan(0.5);
    for (const [b, r] of results) {
      for (let s = 0; s < STEPS; s++) {
        expect(Math.abs(r.losses[s]! - ref.losses[s]!), `${b} step ${s} loss`).toBeLessThan(1e-3 * Math.max(1, Math.abs(ref.losses[s]!)));
        expect(Math.abs(r.gradNorms[s]! - ref.gradNorms[s]!), `${b} step ${s} grad norm`).toBeLessThan(1e-3 * Math.max(1, ref.gradNorms[s]!));
      }
      const worst = Math.max(...r.logits.map((x, i) => Math.abs(x - ref.logits[i]!)));
      expect(worst, `${b} final logits`).toBeLessThan(1e-2);
    }
  });
});
