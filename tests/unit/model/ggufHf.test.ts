/**
 * A GGUF model as a Hugging Face checkpoint (engine/model/formats/gguf/ggufToHf.ts): the config from the metadata,
 * HF names and layouts, llama.cpp's q/k row permutation undone for llama (and not for qwen2/qwen3), refusals of what
 * LlamaModel does not compute. The tiny llama fixture was written by gguf-py from known HF weights
 * (tests/fixtures/gguf/make_fixtures.py); with the peer venv, transformers' own GGUF loader is the reference too, for
 * the tensors and for the logits of LlamaModel built from them.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modelFromHf } from '../../../engine/model/formats/hfWeights';
import { GgufFile, withGgufFile } from '../../../engine/model/formats/gguf/ggufFile';
import { planGgufToHf, readGgufAsHf, unpermuteRows } from '../../../engine/model/formats/gguf/ggufToHf';
import { GgufError } from '../../../engine/model/formats/gguf/ggufTypes';
import { lastPositionLogits } from '../../../engine/model/inference';
import { FIXTURES, GgufBytes, maxUlp, peerPythonOrSkipReason, runPeer, tempDir } from '../../fixtures/gguf/ggufKit';
import { useBackend } from '../../helpers/backends';

const TINY = path.join(FIXTURES, 'tiny-llama.gguf');
const expected = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'expected.json'), 'utf8')) as {
  tinyLlama: { tensors: Record<string, { sha256: string }> };
};

let tmp: { dir: string; remove: () => void };
beforeAll(() => {
  tmp = tempDir('gguf-hf-');
});
afterAll(() => tmp.remove());

/** A model file of F32 tensors whose value i is i + 1000·(tensor index), with llama-style metadata for `arch`. */
function craft(arch: string, names: Array<[string, number[]]>, extra: (b: GgufBytes) => number = () => 0): string {
  const b = new GgufBytes();
  const kv: Array<(b: GgufBytes) => void> = [
    (x) => x.kvString('general.architecture', arch),
    (x) => x.kvU32(`${arch}.embedding_length`, 8),
    (x) => x.kvU32(`${arch}.block_count`, 1),
    (x) => x.kvU32(`${arch}.feed_forward_length`, 16),
    (x) => x.kvU32(`${arch}.attention.head_count`, 2),
    (x) => x.kvU32(`${arch}.attention.head_count_kv`, 1),
    (x) => x.kvU32(`${arch}.context_length`, 64),
    (x) => x.kvF32(`${arch}.attention.layer_norm_rms_epsilon`, 1e-6),
  ];
  const extraBytes = new GgufBytes();
  const extraCount = extra(extraBytes);
  b.preamble(names.length, kv.length + extraCount);
  for (const k of kv) k(b);
  b.raw(extraBytes.bytes());
  let offset = 0;
  for (const [name, dims] of names) {
    b.tensorInfo(name, dims, 0, offset);
    offset += Math.ceil((dims.reduce((x, y) => x * y, 1) * 4) / 32) * 32;
  }
  b.align();
  names.forEach(([, dims], t) => {
    const n = dims.reduce((x, y) => x * y, 1);
    b.raw(new Uint8Array(Float32Array.from({ length: n }, (_, i) => i + 1000 * t).buffer)).align();
  });
  const p = path.join(tmp.dir, `${arch}-${names.length}-${Math.random().toString(36).slice(2)}.gguf`);
  fs.writeFileSync(p, b.bytes());
  return p;
}

/** ggml dims ([in, out]) of a one-layer model: hidden 8, 2 heads of 4, 1 kv head, ffn 16, vocab 10. */
function layerNames(arch: 'llama' | 'qwen2' | 'qwen3'): Array<[string, number[]]> {
  const n: Array<[string, number[]]> = [
    ['token_embd.weight', [8, 10]],
    ['output_norm.weight', [8]],
    ['blk.0.attn_norm.weight', [8]],
    ['blk.0.attn_q.weight', [8, 8]],
    ['blk.0.attn_k.weight', [8, 4]],
    ['blk.0.attn_v.weight', [8, 4]],
    ['blk.0.attn_output.weight', [8, 8]],
    ['blk.0.ffn_norm.weight', [8]],
    ['blk.0.ffn_gate.weight', [8, 16]],
    ['blk.0.ffn_up.weight', [8, 16]],
    ['blk.0.ffn_down.weight', [16, 8]],
  ];
  if (arch === 'qwen2') n.push(['blk.0.attn_q.bias', [8]], ['blk.0.attn_k.bias', [4]], ['blk.0.attn_v.bias', [4]]);
  if (arch === 'qwen3') n.push(['blk.0.attn_q_norm.weight', [4]], ['blk.0.attn_k_norm.weight', [4]]);
  return n;
}

async function refusal(p: string): Promise<string> {
  const f = await GgufFile.open(p);
  try {
    planGgufToHf(f);
  } catch (err) {
    expect(err).toBeInstanceOf(GgufError);
    return (err as Error).message;
  } finally {
    await f.close();
  }
  throw new Error(`${p} was accepted`);
}

describe('GGUF → Hugging Face', () => {
  it('the tiny llama fixture: config from the metadata, HF tensors equal the weights it was made from', async () => {
    const { plan, tensors } = await readGgufAsHf(TINY);
    expect(plan.hfArchitecture).toBe('LlamaForCausalLM');
    expect(plan.config).toMatchObject({
      vocab_size: 64,
      hidden_size: 32,
      intermediate_size: 64,
      num_hidden_layers: 2,
      num_attention_heads: 4,
      num_key_value_heads: 2,
      max_position_embeddings: 128,
      rope_theta: 5000,
      tie_word_embeddings: false,
    });
    expect(plan.config.rms_norm_eps).toBeCloseTo(1e-5, 10);
    expect(Object.keys(tensors).sort()).toEqual(Object.keys(expected.tinyLlama.tensors).sort());
    for (const [name, t] of Object.entries(tensors)) {
      const sha = createHash('sha256').update(new Uint8Array(t.data.buffer)).digest('hex');
      expect(sha, name).toBe(expected.tinyLlama.tensors[name]!.sha256);
    }
  });

  it('unpermuteRows inverts llama.cpp permute (rows h·hd + i·hd/2 + j written as h·hd + 2j + i)', () => {
    const rows = 12;
    const cols = 3;
    const heads = 2;
    const hf = Float32Array.from({ length: rows * cols }, (_, i) => i);
    const permuted = new Float32Array(hf.length);
    // the converter's reshape(n_head, 2, hd/2, cols).swapaxes(1, 2), written out
    for (let h = 0; h < heads; h++) {
      for (let j = 0; j < 3; j++) {
        for (let i = 0; i < 2; i++) {
          permuted.set(
            hf.subarray((h * 6 + i * 3 + j) * cols, (h * 6 + i * 3 + j + 1) * cols),
            (h * 6 + j * 2 + i) * cols,
          );
        }
      }
    }
    expect([...unpermuteRows(permuted, rows, cols, heads)]).toEqual([...hf]);
  });

  it('qwen2 (q/k/v biases) and qwen3 (q/k norms) map without a permutation; llama permutes q and k only', async () => {
    for (const arch of ['llama', 'qwen2', 'qwen3'] as const) {
      const { plan, tensors } = await readGgufAsHf(craft(arch, layerNames(arch)));
      expect(plan.hfArchitecture).toBe(
        { llama: 'LlamaForCausalLM', qwen2: 'Qwen2ForCausalLM', qwen3: 'Qwen3ForCausalLM' }[arch],
      );
      expect(plan.config.tie_word_embeddings).toBe(true);
      const k = tensors['model.layers.0.self_attn.k_proj.weight']!;
      expect(k.shape).toEqual([4, 8]);
      // k is tensor 4: rows of 8 values starting at 4000; llama's rows 0..3 come from written rows 0, 2, 1, 3
      const firstOfRows = [0, 1, 2, 3].map((r) => k.data[r * 8]! - 4000);
      expect(firstOfRows).toEqual(arch === 'llama' ? [0, 16, 8, 24] : [0, 8, 16, 24]);
      expect(tensors['model.layers.0.self_attn.v_proj.weight']!.data[8]).toBe(5000 + 8);
      expect('model.layers.0.self_attn.q_proj.bias' in tensors).toBe(arch === 'qwen2');
      expect('model.layers.0.self_attn.q_norm.weight' in tensors).toBe(arch === 'qwen3');
    }
  });

  it('refuses RoPE scaling, experts, missing, extra or misshapen tensors, each in one line naming it', async () => {
    const base = layerNames('llama');
    const scaled = craft('llama', base, (b) => {
      b.kvString('llama.rope.scaling.type', 'yarn');
      return 1;
    });
    expect(await refusal(scaled)).toMatch(
      /metadata 'llama.rope.scaling.type' is "yarn": RoPE scaling is not implemented/,
    );
    const freqs = craft('llama', [...base, ['rope_freqs.weight', [2]]]);
    expect(await refusal(freqs)).toMatch(/tensor 'rope_freqs.weight' .* is not implemented/);
    const moe = craft('llama', base, (b) => {
      b.kvU32('llama.expert_count', 8);
      return 1;
    });
    expect(await refusal(moe)).toMatch(/'llama.expert_count' is 8: mixtures of experts are not implemented/);
    const missing = craft(
      'llama',
      base.filter(([n]) => n !== 'blk.0.ffn_up.weight'),
    );
    expect(await refusal(missing)).toMatch(/no tensor for HF 'model.layers.0.mlp.up_proj.weight' \(shape \[16,8\]\)/);
    const extra = craft('llama', [...base, ['blk.0.attn_q.bias', [8]]]);
    expect(await refusal(extra)).toMatch(/tensor 'blk.0.attn_q.bias' is not part of a llama model/);
    const misshapen = craft(
      'llama',
      base.map(([n, d]) => [n, n === 'blk.0.attn_v.weight' ? [8, 8] : d]),
    );
    expect(await refusal(misshapen)).toMatch(/tensor 'blk.0.attn_v.weight' has HF shape \[8,8\], but .* needs \[4,8\]/);
    const partial = craft('llama', base, (b) => {
      b.kvU32('llama.rope.dimension_count', 2);
      return 1;
    });
    expect(await refusal(partial)).toMatch(/partial rotary embeddings are not implemented/);
    for (const m of [scaled, freqs, moe, missing, extra, misshapen, partial]) {
      expect(await refusal(m)).not.toContain('\n');
    }
  });

  it("equals transformers' GGUF loader, tensors (0 ulp) and LlamaModel's logits", async (ctx) => {
    const { python, reason } = peerPythonOrSkipReason();
    if (!python) return ctx.skip(reason);
    const names = Object.keys(expected.tinyLlama.tensors);
    const ids = [1, 5, 9, 33, 2, 60, 7];
    const ref = await runPeer(python, 'hf', TINY, names, ids);
    const { plan, tensors } = await readGgufAsHf(TINY);
    for (const name of names) expect(maxUlp(tensors[name]!.data, ref.get(name)!), name).toBe(0);
    await useBackend('cpu');
    const model = modelFromHf(plan.config, tensors);
    const ours = await lastPositionLogits(model, ids);
    model.dispose();
    const theirs = ref.get('logits')!;
    const scale = Math.max(...theirs.map(Math.abs));
    const worst = Math.max(...theirs.map((v, i) => Math.abs(v - ours[i]!)));
    expect(worst / scale).toBeLessThan(1e-5);
  });
});

describe('GgufFile', () => {
  it('reads header facts of the fixture without reading tensor data', async () => {
    await withGgufFile(TINY, async (f) => {
      expect(f.header.version).toBe(3);
      expect(f.tensors).toHaveLength(21);
      expect(f.metadata.get('general.architecture')).toBe('llama');
      expect(f.tensor('blk.1.attn_k.weight')!.dims).toEqual([32, 16]);
      expect(f.tensor('blk.1.attn_k.weight')!.type.name).toBe('F16');
    });
  });
});
