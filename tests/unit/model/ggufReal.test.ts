/**
 * The real SmolLM2-135M-Instruct Q4_1 GGUF (../shared/docs/REAL-MODELS.md) through the GGUF reader: its header and
 * config, its tensors of each type present (Q8_0, Q4_1, F32) against gguf-py's dequantisation, q/k against
 * transformers' GGUF loader (which undoes llama.cpp's permutation its own way), and LlamaModel's last-position logits
 * against transformers' on the same dequantised weights (issue 30, items 3 and 6).
 *
 * The model is where `mars-lab model fetch smollm2-135m-instruct` puts it; absent, the tests skip saying so, unless
 * MARS_LAB_EXPECT_MODELS=1. The Python side skips without .venv-peers unless MARS_LAB_EXPECT_PEERS=1.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { describe, expect, it } from 'vitest';
import { modelFromHf } from '../../../engine/model/formats/hfWeights';
import { withGgufFile } from '../../../engine/model/formats/gguf/ggufFile';
import { planGgufToHf, readGgufAsHf } from '../../../engine/model/formats/gguf/ggufToHf';
import { lastPositionLogits } from '../../../engine/model/inference';
import { maxUlp, peerPythonOrSkipReason, realModelOrSkipReason, runPeer } from '../../fixtures/gguf/ggufKit';
import { useBackend } from '../../helpers/backends';

const SHA256 = 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53';
const model = realModelOrSkipReason();
/** Token ids of a short ChatML turn (`<|im_start|>user\nWhat is the capital of France?<|im_end|>\n<|im_start|>assistant\n`-like). */
const IDS = [1, 4093, 198, 1780, 314, 260, 3575, 282, 4649, 47, 2, 198, 1, 520, 9531, 198];

describe('the real SmolLM2-135M-Instruct GGUF', () => {
  it('is the file REAL-MODELS.md describes, and maps to its Llama config', async (ctx) => {
    if (!model.path) return ctx.skip(model.reason);
    const sha = createHash('sha256');
    for await (const chunk of fs.createReadStream(model.path)) sha.update(chunk as Buffer);
    expect(sha.digest('hex')).toBe(SHA256);
    await withGgufFile(model.path, async (f) => {
      expect(f.header.version).toBe(3);
      const counts: Record<string, number> = {};
      for (const t of f.tensors) counts[t.type.name] = (counts[t.type.name] ?? 0) + 1;
      expect(counts).toEqual({ Q4_1: 210, F32: 61, Q8_0: 1 });
      const plan = planGgufToHf(f);
      expect(plan.hfArchitecture).toBe('LlamaForCausalLM');
      expect(plan.config).toMatchObject({
        vocab_size: 49152,
        hidden_size: 576,
        intermediate_size: 1536,
        num_hidden_layers: 30,
        num_attention_heads: 9,
        num_key_value_heads: 3,
        max_position_embeddings: 8192,
        rope_theta: 100000,
        tie_word_embeddings: true,
      });
      expect(plan.config.rms_norm_eps).toBeCloseTo(1e-5, 10);
      expect(plan.tensors.filter((t) => t.unpermuteHeads > 0)).toHaveLength(60);
    });
  });

  it('dequantises one tensor of each type (Q8_0, Q4_1, F32) exactly as gguf-py does', async (ctx) => {
    if (!model.path) return ctx.skip(model.reason);
    const { python, reason } = peerPythonOrSkipReason();
    if (!python) return ctx.skip(reason);
    const names = ['token_embd.weight', 'blk.7.ffn_down.weight', 'blk.0.attn_norm.weight'];
    const ref = await runPeer(python, 'dequant', model.path, names);
    await withGgufFile(model.path, async (f) => {
      for (const name of names) {
        const ours = await f.readFloat32(name);
        expect(ours.length, name).toBe(f.tensor(name)!.elements);
        expect(maxUlp(ours, ref.get(name)!), `${name} (${f.tensor(name)!.type.name})`).toBe(0);
      }
    });
  });

  it("gives transformers' q/k/embedding tensors and, through LlamaModel, its last-position logits", async (ctx) => {
    if (!model.path) return ctx.skip(model.reason);
    const { python, reason } = peerPythonOrSkipReason();
    if (!python) return ctx.skip(reason);
    const names = [
      'model.embed_tokens.weight',
      'model.layers.0.self_attn.q_proj.weight',
      'model.layers.29.self_attn.k_proj.weight',
      'model.layers.13.mlp.up_proj.weight',
    ];
    const ref = await runPeer(python, 'hf', model.path, names, IDS);
    const { plan, tensors } = await readGgufAsHf(model.path);
    for (const name of names) expect(maxUlp(tensors[name]!.data, ref.get(name)!), name).toBe(0);
    await useBackend('cpu');
    const m = modelFromHf(plan.config, tensors);
    const ours = await lastPositionLogits(m, IDS);
    m.dispose();
    const theirs = ref.get('logits')!;
    const scale = Math.max(...theirs.map(Math.abs));
    let worst = 0;
    let argTheirs = 0;
    let argOurs = 0;
    for (let i = 0; i < theirs.length; i++) {
      worst = Math.max(worst, Math.abs(theirs[i]! - ours[i]!));
      if (theirs[i]! > theirs[argTheirs]!) argTheirs = i;
      if (ours[i]! > ours[argOurs]!) argOurs = i;
    }
    await ctx.annotate(
      `max |Δlogit| ${worst.toExponential(3)} at scale ${scale.toFixed(3)} (${(worst / scale).toExponential(3)})`,
    );
    expect(argOurs).toBe(argTheirs);
    expect(worst / scale).toBeLessThan(1e-3);
  }, 900_000);
});
