/**
 * Qwen2 / Qwen3 configs, Llama 3's RoPE scaling and sharded checkpoints without Python (issue 30, item 3): what the
 * config reader accepts and refuses (one line naming the field and the value), the llama3 inverse frequencies against
 * values worked out by hand from transformers' `_compute_llama3_parameters`, a Qwen checkpoint written here reading
 * back to the same logits, and the sharded loader's refusals (a missing shard, a tensor in two shards, an index that
 * reaches outside the folder, a malformed index), each naming the file or the tensor. The comparisons with
 * transformers itself are in hfFamiliesPeers.test.ts.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  parameterCount,
  parseLlamaConfig,
  ropeInverseFrequencies,
  toHfConfigJson,
  type LlamaConfig,
} from '../../../engine/model/config';
import { loadCheckpoint, saveCheckpoint } from '../../../engine/model/formats/checkpoint';
import { expectedHfShapes, initHfTensors, modelFromHf } from '../../../engine/model/formats/hfWeights';
import { encodeSafetensors } from '../../../engine/model/formats/safetensors';
import { SHARD_INDEX_FILE } from '../../../engine/model/formats/shardedWeights';
import { lastPositionLogits } from '../../../engine/model/inference';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { tf } from '../../../engine/tensor/backend';
import { Rng } from '../../../engine/random/prng';
import { tempDir } from '../../fixtures/gguf/ggufKit';
import { useBackend } from '../../helpers/backends';

const base = {
  vocab_size: 40,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 96,
};
const llama3 = {
  rope_type: 'llama3',
  factor: 8,
  low_freq_factor: 1,
  high_freq_factor: 4,
  original_max_position_embeddings: 64,
};

describe('config.json of the Qwen families and Llama 3 RoPE scaling', () => {
  it('reads the family from model_type or architectures, with its defaults', () => {
    expect(parseLlamaConfig({ ...base, model_type: 'qwen2' }).model_type).toBe('qwen2');
    expect(parseLlamaConfig({ ...base, architectures: ['Qwen2ForCausalLM'] }).model_type).toBe('qwen2');
    expect(parseLlamaConfig({ ...base, model_type: 'llama' }).model_type).toBeUndefined();
    // Qwen3Config's head_dim is 128 unless given, whatever hidden_size / heads is
    expect(parseLlamaConfig({ ...base, model_type: 'qwen3' }).head_dim).toBe(128);
    expect(parseLlamaConfig({ ...base, model_type: 'qwen3', head_dim: 12 }).head_dim).toBe(12);
    // Qwen2's q/k/v biases are its own: transformers' Qwen2 ignores attention_bias
    expect(parseLlamaConfig({ ...base, model_type: 'qwen2', attention_bias: true }).model_type).toBe('qwen2');
    expect(parseLlamaConfig({ ...base, rope_scaling: { rope_type: 'default' } }).rope_scaling).toBeUndefined();
    expect(parseLlamaConfig({ ...base, rope_scaling: { ...llama3 } }).rope_scaling).toEqual(llama3);
    // the older key 'type' is read as transformers reads it
    const { rope_type: _t, ...rest } = llama3;
    expect(parseLlamaConfig({ ...base, rope_scaling: { type: 'llama3', ...rest } }).rope_scaling).toEqual(llama3);
  });

  it('refuses what it does not compute, in one line naming the field and the value', () => {
    const refusal = (raw: Record<string, unknown>): string => {
      try {
        parseLlamaConfig({ ...base, ...raw }, 'x/config.json');
      } catch (err) {
        const msg = (err as Error).message;
        expect(msg).not.toContain('\n');
        return msg;
      }
      throw new Error(`accepted ${JSON.stringify(raw)}`);
    };
    for (const type of ['yarn', 'dynamic', 'linear', 'longrope']) {
      expect(refusal({ rope_scaling: { rope_type: type, factor: 4 } })).toMatch(
        new RegExp(`x/config.json: field 'rope_scaling' has rope_type "${type}", which is not supported`),
      );
    }
    expect(refusal({ rope_scaling: { type: 'linear', factor: 2 } })).toMatch(/'rope_scaling' has rope_type "linear"/);
    expect(refusal({ rope_scaling: { ...llama3, factor: undefined } })).toMatch(/field 'rope_scaling\.factor'/);
    expect(refusal({ rope_scaling: { ...llama3, high_freq_factor: 1 } })).toMatch(
      /'rope_scaling\.high_freq_factor' \(1\) must be greater than low_freq_factor \(1\)/,
    );
    expect(refusal({ rope_scaling: { ...llama3, original_max_position_embeddings: 1.5 } })).toMatch(
      /'rope_scaling\.original_max_position_embeddings'/,
    );
    expect(refusal({ model_type: 'mistral' })).toMatch(/field 'model_type' = "mistral" is not supported/);
    expect(refusal({ architectures: ['MistralForCausalLM'] })).toMatch(
      /field 'architectures' .*Mistral.* not supported/,
    );
    expect(refusal({ model_type: 'qwen3', architectures: ['Qwen2ForCausalLM'] })).toMatch(
      /'model_type' = 'qwen3' disagrees with architectures\[0\] = 'Qwen2ForCausalLM'/,
    );
    expect(refusal({ model_type: 'qwen3', attention_bias: true })).toMatch(/field 'attention_bias' = true/);
    expect(refusal({ model_type: 'qwen2', use_sliding_window: true })).toMatch(/field 'use_sliding_window' = true/);
  });

  it("llama3's inverse frequencies: long wavelengths divided by factor, short kept, the band between smoothed", () => {
    const c = parseLlamaConfig({ ...base, head_dim: 16, rope_theta: 10000, rope_scaling: llama3 });
    const inv = ropeInverseFrequencies(c);
    const plain = ropeInverseFrequencies(parseLlamaConfig({ ...base, head_dim: 16, rope_theta: 10000 }));
    // wavelength 2π/f: i = 0 → 6.28 < 64/4 (kept); i = 1 → 19.9 and i = 2 → 62.8 in [16, 64] (smoothed); i ≥ 3 > 64
    expect(inv[0]).toBe(plain[0]);
    for (const i of [1, 2]) {
      const wavelen = (2 * Math.PI) / plain[i]!;
      const smooth = (64 / wavelen - 1) / (4 - 1);
      expect(inv[i]).toBeCloseTo(((1 - smooth) * plain[i]!) / 8 + smooth * plain[i]!, 15);
      expect(inv[i]!).toBeLessThan(plain[i]!);
    }
    for (let i = 3; i < 8; i++) expect(inv[i]).toBeCloseTo(plain[i]! / 8, 15);
  });

  it('counts Qwen2 biases and Qwen3 norms among the parameters', () => {
    const llama = parseLlamaConfig({ ...base });
    const qwen2 = parseLlamaConfig({ ...base, model_type: 'qwen2' });
    const qwen3 = parseLlamaConfig({ ...base, model_type: 'qwen3', head_dim: 8 });
    expect(parameterCount(qwen2) - parameterCount(llama)).toBe(2 * 8 * (4 + 2 * 2));
    expect(parameterCount(qwen3) - parameterCount(llama)).toBe(2 * 2 * 8);
    for (const c of [qwen2, qwen3]) {
      let n = 0;
      for (const s of expectedHfShapes(c).values()) n += s.reduce((a, b) => a * b, 1);
      expect(n).toBe(parameterCount(c));
    }
  });
});

/** HF-named random tensors with random biases and norm weights (initHfTensors leaves biases 0). */
function randomHf(c: LlamaConfig, seed: number): ReturnType<typeof initHfTensors> {
  const rng = new Rng(seed);
  const t = initHfTensors(c, () => rng.normal(), 0.3);
  for (const [name, h] of Object.entries(t)) {
    if (name.endsWith('.bias') || name.endsWith('norm.weight')) {
      for (let i = 0; i < h.data.length; i++) h.data[i] = (name.endsWith('.bias') ? 0 : 1) + 0.3 * rng.normal();
    }
  }
  return t;
}

const IDS = [3, 17, 5, 0, 39, 8, 8, 12, 1, 30];
const folders: Array<() => void> = [];
afterAll(() => {
  for (const remove of folders) remove();
});
function folder(): string {
  const { dir, remove } = tempDir('model-families-');
  folders.push(remove);
  return dir;
}

describe('Qwen checkpoints and sharded folders', () => {
  beforeAll(() => useBackend('cpu'));

  for (const family of ['qwen2', 'qwen3'] as const) {
    it(`a ${family} checkpoint written here reads back as ${family}, to the same logits`, async () => {
      const c = parseLlamaConfig({ ...base, model_type: family, head_dim: 12, rope_scaling: llama3 });
      const model = modelFromHf(c, randomHf(c, 5));
      const dir = path.join(folder(), 'ckpt');
      await saveCheckpoint(dir, model);
      const json = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
      expect(json).toMatchObject({
        model_type: family,
        architectures: [family === 'qwen2' ? 'Qwen2ForCausalLM' : 'Qwen3ForCausalLM'],
      });
      const back = (await loadCheckpoint(dir)).model;
      expect(back.config).toEqual(c);
      expect(await lastPositionLogits(back, IDS)).toEqual(await lastPositionLogits(model, IDS));
      back.dispose();
      model.dispose();
    });
  }

  /** A Qwen2 folder split into `n` shards with its index; returns the folder and the tensors. */
  function shardedFolder(n: number): { dir: string; c: LlamaConfig; logits: Promise<Float32Array> } {
    const c = parseLlamaConfig({ ...base, model_type: 'qwen2' });
    const hf = randomHf(c, 9);
    const dir = folder();
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(toHfConfigJson(c)));
    const names = Object.keys(hf);
    const weightMap: Record<string, string> = {};
    for (let s = 0; s < n; s++) {
      const file = `model-0000${s + 1}-of-0000${n}.safetensors`;
      const part = Object.fromEntries(names.filter((_, i) => i % n === s).map((k) => [k, hf[k]!]));
      for (const k of Object.keys(part)) weightMap[k] = file;
      fs.writeFileSync(path.join(dir, file), encodeSafetensors(part, { format: 'pt' }));
    }
    fs.writeFileSync(path.join(dir, SHARD_INDEX_FILE), JSON.stringify({ metadata: {}, weight_map: weightMap }));
    const model = modelFromHf(c, hf);
    const logits = lastPositionLogits(model, IDS).finally(() => model.dispose());
    return { dir, c, logits };
  }

  it('loads shards through their index, with the same variables and logits as one file', async () => {
    const { dir, c, logits } = shardedFolder(3);
    const { model } = await loadCheckpoint(dir);
    expect(model.config).toMatchObject(c); // plus head_dim, which config.json states
    const oneFile = modelFromHf(c, randomHf(c, 9));
    expect([...model.params.keys()]).toEqual([...oneFile.params.keys()]); // the optimiser's order
    oneFile.dispose();
    expect(await lastPositionLogits(model, IDS)).toEqual(await logits);
    model.dispose();
  });

  it('refuses a missing shard, a tensor in two shards, an index outside the folder or malformed, naming it', async () => {
    const refusal = async (dir: string): Promise<string> => {
      const err = (await loadCheckpoint(dir).then(
        () => null,
        (e: unknown) => e,
      )) as Error | null;
      expect(err, dir).not.toBeNull();
      expect(err!.message).not.toContain('\n');
      return err!.message;
    };
    const index = (dir: string) => path.join(dir, SHARD_INDEX_FILE);
    const readIndex = (dir: string) =>
      JSON.parse(fs.readFileSync(index(dir), 'utf8')) as { weight_map: Record<string, string> };

    const missing = shardedFolder(3).dir;
    fs.rmSync(path.join(missing, 'model-00002-of-00003.safetensors'));
    expect(await refusal(missing)).toMatch(
      /model-00002-of-00003\.safetensors: missing, but .*index\.json maps \d+ tensor/,
    );

    // the same tensor written into a second shard too
    const twice = shardedFolder(2).dir;
    const c = parseLlamaConfig({ ...base, model_type: 'qwen2' });
    const hf = randomHf(c, 9);
    const map = readIndex(twice).weight_map;
    const inFirst = Object.keys(map).filter((k) => map[k] === 'model-00001-of-00002.safetensors');
    const inSecond = Object.keys(map).filter((k) => map[k] === 'model-00002-of-00002.safetensors');
    const dup = inFirst[0]!;
    const second = Object.fromEntries([...inSecond, dup].map((k) => [k, hf[k]!]));
    fs.writeFileSync(path.join(twice, 'model-00002-of-00002.safetensors'), encodeSafetensors(second));
    expect(await refusal(twice)).toMatch(
      new RegExp(
        `tensor '${dup.replace(/\./g, '\\.')}' is in two shards, .*model-00001-of-00002\\.safetensors and .*model-00002-of-00002\\.safetensors`,
      ),
    );

    // the index says one shard, the tensor is in the other
    const moved = shardedFolder(2).dir;
    const movedIndex = readIndex(moved);
    const name = Object.keys(movedIndex.weight_map)[0]!;
    movedIndex.weight_map[name] = 'model-00002-of-00002.safetensors';
    fs.writeFileSync(index(moved), JSON.stringify(movedIndex));
    expect(await refusal(moved)).toMatch(
      new RegExp(
        `maps tensor '${name.replace(/\./g, '\\.')}' to model-00002-of-00002\\.safetensors, but model-00001-of-00002\\.safetensors holds it`,
      ),
    );

    // a tensor the index does not name, or names nowhere
    const unnamed = shardedFolder(2).dir;
    const unnamedIndex = readIndex(unnamed);
    const dropped = Object.keys(unnamedIndex.weight_map)[1]!;
    delete unnamedIndex.weight_map[dropped];
    fs.writeFileSync(index(unnamed), JSON.stringify(unnamedIndex));
    expect(await refusal(unnamed)).toMatch(
      new RegExp(`holds tensor '${dropped.replace(/\./g, '\\.')}', which .* does not name`),
    );

    const outside = shardedFolder(2).dir;
    const outsideIndex = readIndex(outside);
    outsideIndex.weight_map[Object.keys(outsideIndex.weight_map)[0]!] = '../elsewhere.safetensors';
    fs.writeFileSync(index(outside), JSON.stringify(outsideIndex));
    expect(await refusal(outside)).toMatch(
      /is mapped to "\.\.\/elsewhere\.safetensors", which is not a file name in the model's folder/,
    );

    const malformed = shardedFolder(2).dir;
    fs.writeFileSync(index(malformed), JSON.stringify({ weight_map: { 'model.norm.weight': 3 } }));
    expect(await refusal(malformed)).toMatch(/index\.json: field 'weight_map\.model\.norm\.weight'/);
    fs.writeFileSync(index(malformed), '{"weight_map": ');
    expect(await refusal(malformed)).toMatch(/index\.json: not valid JSON/);

    // neither one file nor an index
    const none = shardedFolder(2).dir;
    fs.rmSync(index(none));
    expect(await refusal(none)).toMatch(/model\.safetensors: missing \(and no model\.safetensors\.index\.json/);
  });
});

describe.each(['cpu', 'wasm'] as const)('gradients of the Qwen parts on %s', (backend) => {
  beforeAll(() => useBackend(backend));

  for (const family of ['qwen2', 'qwen3'] as const) {
    it(`${family}: the biases' and q/k norms' gradients equal finite differences (training reaches them)`, async () => {
      const c = parseLlamaConfig({ ...base, vocab_size: 12, hidden_size: 16, model_type: family, head_dim: 6 });
      const model = modelFromHf(c, randomHf(c, 4));
      const batch = padBatch([
        [1, 5, 7, 2, 9, 3],
        [4, 4, 11, 0],
      ]);
      const f = () => tf.sum<tf.Scalar>(tokenLogProbs(model, batch).logp);
      const { value, grads } = tf.variableGrads(f, model.variables());
      value.dispose();
      const rng = new Rng(2);
      const H = 2e-3;
      let checked = 0;
      for (const [name, v] of model.params) {
        if (!/\.(b[qkv]|q_norm|k_norm)$/.test(name)) continue;
        const g = (await grads[v.name]!.data()) as Float32Array;
        const w0 = Float32Array.from((await v.data()) as Float32Array);
        for (let k = 0; k < 2; k++) {
          const idx = rng.int(w0.length);
          const at = (delta: number): number => {
            const w = w0.slice();
            w[idx]! += delta;
            v.assign(tf.tensor(w, v.shape));
            return tf.tidy(() => f().dataSync()[0]!);
          };
          const fd = (at(H) - at(-H)) / (2 * H);
          v.assign(tf.tensor(w0, v.shape));
          expect(Math.abs(fd - g[idx]!), `${name}[${idx}]: ${fd} vs ${g[idx]}`).toBeLessThan(
            3e-3 + 0.03 * Math.abs(fd),
          );
          checked++;
        }
      }
      expect(checked).toBe(family === 'qwen2' ? 2 * 3 * 2 : 2 * 2 * 2);
      tf.dispose(Object.values(grads));
      model.dispose();
    });
  }
});
