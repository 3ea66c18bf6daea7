import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  loadCheckpoint,
  saveCheckpoint,
  writeFolderAtomic,
  WEIGHTS_FILE,
} from '../../../engine/model/formats/checkpoint';
import { toHfConfigJson } from '../../../engine/model/config';
import { initHfTensors, modelFromHf, modelToHf } from '../../../engine/model/formats/hfWeights';
import { lastPositionLogits } from '../../../engine/model/inference';
import { decodeSafetensors, encodeSafetensors } from '../../../engine/model/formats/safetensors';
import { Rng } from '../../../engine/random/prng';
import { tinyConfig, tinyModel } from '../../helpers/tinyModel';
import { useBackend } from '../../helpers/backends';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-ckpt-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

const IDS = [3, 17, 5, 9];

/** safetensors bytes with every tensor stored as BF16 (the usual dtype of checkpoints made elsewhere). */
function bf16File(tensors: Record<string, { shape: number[]; data: Float32Array }>): Uint8Array {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  const chunks: Uint8Array[] = [];
  let off = 0;
  for (const [name, t] of Object.entries(tensors)) {
    const bits = new Uint32Array(Float32Array.from(t.data).buffer);
    const half = new Uint16Array(bits.length);
    for (let i = 0; i < bits.length; i++) half[i] = bits[i]! >>> 16; // truncate: exact in bf16
    const bytes = new Uint8Array(half.buffer);
    header[name] = { dtype: 'BF16', shape: t.shape, data_offsets: [off, off + bytes.length] };
    chunks.push(bytes);
    off += bytes.length;
  }
  let json = JSON.stringify(header);
  while ((json.length + 8) % 8) json += ' ';
  const out = new Uint8Array(8 + json.length + off);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(new TextEncoder().encode(json), 8);
  let p = 8 + json.length;
  for (const c of chunks) {
    out.set(c, p);
    p += c.length;
  }
  return out;
}

describe('checkpoints', () => {
  it('save → load gives identical logits and identical tensors', async () => {
    const model = tinyModel(4);
    const dir = path.join(home, 'a');
    await saveCheckpoint(dir, model);
    expect(fs.readdirSync(dir).sort()).toEqual(['config.json', 'model.safetensors']);
    const { model: loaded } = await loadCheckpoint(dir);
    expect(Array.from(await lastPositionLogits(loaded, IDS))).toEqual(Array.from(await lastPositionLogits(model, IDS)));
    const [a, b] = [await modelToHf(model), await modelToHf(loaded)];
    for (const name of Object.keys(a)) expect(b[name]!.data).toEqual(a[name]!.data);
    model.dispose();
    loaded.dispose();
  });

  it('writes Hugging Face names, config fields and the "pt" format tag', async () => {
    const model = tinyModel(4, { tie_word_embeddings: true });
    const dir = path.join(home, 'names');
    await saveCheckpoint(dir, model);
    const cfg = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    expect(cfg).toMatchObject({
      model_type: 'llama',
      architectures: ['LlamaForCausalLM'],
      num_key_value_heads: 2,
      tie_word_embeddings: true,
    });
    const st = decodeSafetensors(fs.readFileSync(path.join(dir, WEIGHTS_FILE)));
    expect(st.metadata.format).toBe('pt');
    expect(st.tensors['model.layers.1.self_attn.k_proj.weight']!.shape).toEqual([16, 32]);
    expect(st.tensors['model.layers.0.mlp.down_proj.weight']!.shape).toEqual([32, 48]);
    expect('lm_head.weight' in st.tensors).toBe(false); // tied: HF omits it too
    model.dispose();
  });

  it('a tensor with the wrong shape is refused with an error naming the tensor, the file and both shapes', async () => {
    const cfg = tinyConfig();
    const rng = new Rng(1);
    const t = initHfTensors(cfg, () => rng.normal());
    t['model.layers.1.mlp.up_proj.weight'] = { shape: [47, 32], data: new Float32Array(47 * 32) };
    const dir = path.join(home, 'bad-shape');
    writeFolderAtomic(dir, {
      'config.json': JSON.stringify(toHfConfigJson(cfg)),
      [WEIGHTS_FILE]: encodeSafetensors(t),
    });
    await expect(loadCheckpoint(dir)).rejects.toThrow(
      /model\.layers\.1\.mlp\.up_proj\.weight' has shape \[47,32\], expected \[48,32\]/,
    );
    await expect(loadCheckpoint(dir)).rejects.toThrow(new RegExp(`${dir}/model.safetensors`));
  });

  it('writes one folder level inside a checkpoint and refuses names that would leave it', () => {
    const dir = path.join(home, 'nested');
    writeFolderAtomic(dir, { 'a.json': '{}', 'agent-b/adapter_config.json': '{"r": 4}' });
    expect(fs.readFileSync(path.join(dir, 'agent-b', 'adapter_config.json'), 'utf8')).toBe('{"r": 4}');
    for (const bad of ['../escape.json', 'a/b/c.json', '/abs.json', 'x/../y.json', 'agent-b/']) {
      expect(() => writeFolderAtomic(path.join(home, 'refused'), { [bad]: 'x' }), bad).toThrow(/not a file name/);
      expect(fs.existsSync(path.join(home, 'refused')), bad).toBe(false);
    }
    expect(fs.existsSync(path.join(home, 'escape.json'))).toBe(false);
  });

  it('a missing tensor, an unexpected tensor and an integer tensor are each named', async () => {
    const cfg = tinyConfig();
    const rng = new Rng(1);
    const good = initHfTensors(cfg, () => rng.normal());
    const cases: Array<[string, Record<string, { shape: number[]; data: Float32Array | Int32Array }>, RegExp]> = [
      [
        'missing',
        Object.fromEntries(Object.entries(good).filter(([n]) => n !== 'model.norm.weight')),
        /'model\.norm\.weight' is missing/,
      ],
      [
        'extra',
        { ...good, 'model.layers.2.input_layernorm.weight': { shape: [32], data: new Float32Array(32) } },
        /unexpected tensor 'model\.layers\.2\.input_layernorm\.weight'/,
      ],
      [
        'int',
        { ...good, 'model.norm.weight': { shape: [32], data: new Int32Array(32) } },
        /'model\.norm\.weight' has dtype I32/,
      ],
    ];
    for (const [name, tensors, re] of cases) {
      const dir = path.join(home, `bad-${name}`);
      writeFolderAtomic(dir, {
        'config.json': JSON.stringify(toHfConfigJson(cfg)),
        [WEIGHTS_FILE]: encodeSafetensors(tensors),
      });
      await expect(loadCheckpoint(dir)).rejects.toThrow(re);
    }
  });

  it('loads a BF16 Llama checkpoint made elsewhere (same logits as the same weights in F32)', async () => {
    const cfg = tinyConfig();
    const rng = new Rng(6);
    const t = initHfTensors(cfg, () => rng.normal(), 0.3);
    for (const v of Object.values(t)) {
      const bits = new Uint32Array(v.data.buffer);
      for (let i = 0; i < bits.length; i++) bits[i] = bits[i]! & 0xffff0000; // make the F32 copy bf16-exact
    }
    const dir = path.join(home, 'bf16');
    writeFolderAtomic(dir, {
      'config.json': JSON.stringify({ ...toHfConfigJson(cfg), torch_dtype: 'bfloat16' }),
      [WEIGHTS_FILE]: bf16File(t),
    });
    const { model } = await loadCheckpoint(dir);
    const direct = modelFromHf(cfg, t);
    expect(Array.from(await lastPositionLogits(model, IDS))).toEqual(Array.from(await lastPositionLogits(direct, IDS)));
    model.dispose();
    direct.dispose();
  });

  it('optimiser and trainer state travel with the weights', async () => {
    const model = tinyModel(2);
    const dir = path.join(home, 'opt');
    const m = { shape: [2, 3], data: Float32Array.from([1, 2, 3, 4, 5, 6]) };
    await saveCheckpoint(dir, model, {
      optimizer: { step: 17, tensors: { 'embed.m': m } },
      trainerState: { rng: [1, 2, 3, 4] },
    });
    const back = await loadCheckpoint(dir);
    expect(back.optimizer?.step).toBe(17);
    expect(back.optimizer?.tensors['embed.m']).toEqual(m);
    expect(back.trainerState).toEqual({ rng: [1, 2, 3, 4] });
    model.dispose();
    back.model.dispose();
  });

  it('writes atomically: replacing keeps one complete folder, a failed write leaves the old one and no temp folder', async () => {
    const dir = path.join(home, 'atomic');
    writeFolderAtomic(dir, { 'a.txt': 'one' });
    writeFolderAtomic(dir, { 'a.txt': 'two', 'b.txt': 'b' });
    expect(fs.readFileSync(path.join(dir, 'a.txt'), 'utf8')).toBe('two');
    expect(() => writeFolderAtomic(dir, { 'ok.txt': 'x', 'no/such/sub.txt': 'y' })).toThrow();
    expect(fs.readdirSync(dir).sort()).toEqual(['a.txt', 'b.txt']);
    expect(fs.readdirSync(home).filter((n) => n.startsWith('atomic') && n !== 'atomic')).toEqual([]);
  });

  it('a folder that is not a checkpoint gives an error naming the file', async () => {
    await expect(loadCheckpoint(path.join(home, 'nothing-here'))).rejects.toThrow(
      /nothing-here\/config\.json: cannot read/,
    );
  });
});
