/**
 * LoRA (issue 30, item 7) on the engine's own terms; PEFT's side is tests/unit/model/loraPeers.test.ts. A fresh adapter
 * leaves the model as it was; a trained one moves the logits, and merging it gives the same logits from plain weights;
 * a GRPO update through policyUpdate trains the adapters only, the base weights staying bit for bit; dropout acts in
 * training passes only; PEFT's folder layout round-trips, and what it cannot express is refused by field.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { lastPositionLogits } from '../../../engine/model/inference';
import type { LlamaModel } from '../../../engine/model/llama';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { LoraAdapters, mergeLora, type LoraSpec } from '../../../engine/model/lora/loraAdapters';
import {
  ADAPTER_CONFIG_FILE,
  ADAPTER_WEIGHTS_FILE,
  adaptersFromPeft,
  readPeftAdapter,
  savePeftAdapter,
} from '../../../engine/model/lora/peftAdapter';
import { modelToHf } from '../../../engine/model/formats/hfWeights';
import { Rng } from '../../../engine/random/prng';
import { Adam } from '../../../engine/rl/adam';
import { adamVariables, policyUpdate } from '../../../engine/rl/policyUpdate';
import { tf } from '../../../engine/tensor/backend';
import { useBackend } from '../../helpers/backends';
import { fixedSamples } from '../../helpers/fixedSamples';
import { tinyModel } from '../../helpers/tinyModel';

beforeAll(() => useBackend('wasm'));

const SPEC: LoraSpec = {
  rank: 4,
  alpha: 8,
  dropout: 0,
  targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
};
const IDS = [1, 5, 9, 3, 7, 2, 11];

async function logitsOf(m: LlamaModel): Promise<Float32Array> {
  return await lastPositionLogits(m, IDS);
}

function maxDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  for (let i = 0; i < a.length; i++) d = Math.max(d, Math.abs(a[i]! - b[i]!));
  return d;
}

/** Adapters whose B is random too (a fresh B is zero), so they change the model. */
async function randomAdapters(m: LlamaModel, spec = SPEC, seed = 3): Promise<LoraAdapters> {
  const fresh = LoraAdapters.create(m.config, spec, new Rng(seed));
  const t = await fresh.toTensors();
  fresh.dispose();
  const rng = new Rng(seed + 1);
  for (const [name, v] of t) {
    if (name.endsWith('.B')) for (let i = 0; i < v.data.length; i++) v.data[i] = rng.normal() * 0.2;
  }
  return LoraAdapters.fromTensors(m.config, spec, t);
}

describe('LoRA adapters', () => {
  it('a fresh adapter (B = 0) leaves the logits exactly as they were', async () => {
    const m = tinyModel(4);
    const before = await logitsOf(m);
    m.lora = LoraAdapters.create(m.config, SPEC, new Rng(1));
    expect(maxDiff(await logitsOf(m), before)).toBe(0);
    m.dispose();
  });

  it('an adapter moves the logits; merged into the weights, the plain model gives the same logits', async () => {
    for (const targets of [SPEC.targets, ['q_proj', 'v_proj'] as LoraSpec['targets']]) {
      const m = tinyModel(4);
      const base = await logitsOf(m);
      m.lora = await randomAdapters(m, { ...SPEC, targets });
      const adapted = await logitsOf(m);
      expect(maxDiff(adapted, base)).toBeGreaterThan(0.1);
      const wq = (await m.p('layers.0.wq').data()) as Float32Array;
      const a = (await m.lora.params.get('layers.0.wq.A')!.data()) as Float32Array;
      const b = (await m.lora.params.get('layers.0.wq.B')!.data()) as Float32Array;
      mergeLora(m);
      expect(m.lora).toBeNull();
      expect(maxDiff(await logitsOf(m), adapted)).toBeLessThan(1e-4);
      // W + (alpha / r)·A·B, on the host, at one element of layer 0's q_proj.
      const [i, j, r, out] = [5, 7, SPEC.rank, m.config.num_attention_heads * m.headDim];
      let ab = 0;
      for (let k = 0; k < r; k++) ab += a[i * r + k]! * b[k * out + j]!;
      const merged = (await m.p('layers.0.wq').data()) as Float32Array;
      expect(merged[i * out + j]).toBeCloseTo(wq[i * out + j]! + (SPEC.alpha / SPEC.rank) * ab, 5);
      m.dispose();
    }
  });

  it('policyUpdate trains the adapters only: the base weights stay bit for bit, the adapters move', async () => {
    const m = tinyModel(8, {}, 0.1);
    m.lora = LoraAdapters.create(m.config, SPEC, new Rng(2));
    const baseBefore = await modelToHf(m);
    const aBefore = await m.lora.toTensors();
    const opt = new Adam(adamVariables(m), { lr: 1e-2 });
    expect(Object.keys(adamVariables(m)).every((n) => n.endsWith('.A') || n.endsWith('.B'))).toBe(true);
    expect(m.variables().length).toBe(2 * SPEC.targets.length * m.config.num_hidden_layers);
    const samples = fixedSamples(m.config.vocab_size, 3, 8);
    const logp0 = await sampleLogProb(m, samples);
    for (let s = 0; s < 5; s++) await policyUpdate(m, opt, samples, { loss: { kind: 'ppoToken', klCoef: 0 } });
    const baseAfter = await modelToHf(m);
    for (const [name, t] of Object.entries(baseBefore)) expect(maxDiff(baseAfter[name]!.data, t.data), name).toBe(0);
    const aAfter = await m.lora.toTensors();
    expect(maxDiff(aAfter.get('layers.1.wd.B')!.data, aBefore.get('layers.1.wd.B')!.data)).toBeGreaterThan(1e-3);
    // The update did what GRPO asks: samples with a positive advantage became likelier, negative ones less likely.
    const logp1 = await sampleLogProb(m, samples);
    samples.forEach((s, i) => expect(Math.sign(logp1[i]! - logp0[i]!), `sample ${i}`).toBe(Math.sign(s.advantage)));
    opt.dispose();
    m.dispose();
  });

  it('dropout acts in training passes only, and a seed gives the same masks', async () => {
    const m = tinyModel(4);
    m.lora = await randomAdapters(m, { ...SPEC, dropout: 0.5 });
    const tensors = await m.lora.toTensors();
    const batch = padBatch([IDS]);
    const lp = () => tf.tidy(() => tokenLogProbs(m, batch).logp.dataSync().slice()); // a training pass
    const sampling = await logitsOf(m);
    const t1 = lp();
    const t2 = lp();
    expect(maxDiff(t1, t2)).toBeGreaterThan(1e-3); // new masks each pass
    m.lora.dropoutCalls = 0;
    expect(maxDiff(lp(), t1)).toBe(0); // the seed and counter reproduce them
    m.lora.dispose();
    m.lora = LoraAdapters.fromTensors(m.config, { ...SPEC, dropout: 0 }, tensors);
    expect(maxDiff(await logitsOf(m), sampling)).toBe(0); // a sampling pass saw no dropout
    expect(maxDiff(lp(), t1)).toBeGreaterThan(1e-3); // and the training passes did
    m.dispose();
  });
});

async function sampleLogProb(m: LlamaModel, samples: ReturnType<typeof fixedSamples>): Promise<number[]> {
  const batch = padBatch(samples.map((s) => s.tokens));
  const lp = tf.tidy(() => tokenLogProbs(m, batch).logp.arraySync());
  return samples.map((s, i) => s.lossMask.reduce((sum, on, t) => sum + (on ? lp[i]![t]! : 0), 0));
}

describe("PEFT's adapter folder", () => {
  const dir = () => fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-peft-'));

  it('round-trips: the adapter read back gives the same logits; the file has PEFT names and shapes', async () => {
    const m = tinyModel(4);
    m.lora = await randomAdapters(m);
    const adapted = await logitsOf(m);
    const d = dir();
    await savePeftAdapter(d, m.lora, 'base-model');
    const cfg = JSON.parse(fs.readFileSync(path.join(d, ADAPTER_CONFIG_FILE), 'utf8'));
    expect(cfg).toMatchObject({ peft_type: 'LORA', r: 4, lora_alpha: 8, base_model_name_or_path: 'base-model' });
    const read = await readPeftAdapter(d);
    const q = read.tensors.get('layers.0.wq.A')!;
    expect(q.shape).toEqual([m.config.hidden_size, SPEC.rank]);
    m.lora.dispose();
    m.lora = adaptersFromPeft(m.config, read);
    expect(maxDiff(await logitsOf(m), adapted)).toBe(0);
    const header = fs.readFileSync(path.join(d, ADAPTER_WEIGHTS_FILE)).subarray(8, 4000).toString('latin1');
    expect(header).toContain(
      '"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight":{"dtype":"F32","shape":[4,32]',
    );
    m.dispose();
  });

  it('refuses, in one line naming the field, what it cannot apply exactly', async () => {
    const m = tinyModel(4);
    m.lora = await randomAdapters(m);
    const d = dir();
    await savePeftAdapter(d, m.lora, null);
    const good = JSON.parse(fs.readFileSync(path.join(d, ADAPTER_CONFIG_FILE), 'utf8'));
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ use_dora: true }, /use_dora.*DoRA/],
      [{ peft_type: 'IA3' }, /peft_type/],
      [{ target_modules: ['q_proj', 'lm_head'] }, /target_modules: 'lm_head'/],
      [{ target_modules: 'q_proj|v_proj' }, /target_modules/],
      [{ rank_pattern: { 'layers.0.q_proj': 8 } }, /rank_pattern/],
      [{ bias: 'all' }, /bias/],
      [{ layers_to_transform: [0] }, /layers_to_transform/],
    ];
    for (const [over, msg] of cases) {
      fs.writeFileSync(path.join(d, ADAPTER_CONFIG_FILE), JSON.stringify({ ...good, ...over }));
      const err = await readPeftAdapter(d).catch((e: Error) => e);
      expect(err, JSON.stringify(over)).toBeInstanceOf(Error);
      expect((err as Error).message).toMatch(msg);
      expect((err as Error).message).not.toContain('\n');
    }
    // A rank that does not match the tensors is named with its layer and module.
    fs.writeFileSync(path.join(d, ADAPTER_CONFIG_FILE), JSON.stringify({ ...good, r: 8 }));
    const wrongRank = await readPeftAdapter(d);
    expect(() => adaptersFromPeft(m.config, wrongRank)).toThrow(/layer 0 q_proj A is \[32, 4\].*rank 8/);
    m.dispose();
  });
});
