/**
 * `mars-lab model info` (issue 30, item 2): what a model is, from its headers alone, and the memory it needs here.
 *
 *   - an HF folder (config.json, model.safetensors, tokenizer.json with a chat template): the parameters counted from
 *     the safetensors header equal the config's count, tensor types, vocabulary, tokenizer kind and template roles;
 *   - sharded weights: the index's shards are summed, and a missing shard is named;
 *   - an architecture the engine does not compute (Mistral's model_type) is described, with the one line saying why;
 *   - the real SmolLM2 GGUF through the CLI by its catalogue name: the header's parameters equal the planned
 *     architecture's, a chat template with system/user/assistant roles, and memory figures ordered as they must be
 *     (sampling < LoRA < full training) and bounded by the wasm heap when wasm is asked for.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parameterCount, toHfConfigJson } from '../../../engine/model/config';
import { initHfTensors } from '../../../engine/model/formats/hfWeights';
import { encodeSafetensors } from '../../../engine/model/formats/safetensors';
import { describeModel } from '../../../engine/model/modelInfo';
import { loraParameterCount, modelMemory } from '../../../engine/training/memoryBudget';
import { cli } from '../../helpers/cli';
import { tinyConfig } from '../../helpers/tinyModel';
import { realModelOrSkipReason, tempDir } from '../../fixtures/gguf/ggufKit';
import { tinyByteLevel } from '../../fixtures/tokenizer/tokenizerKit';

const CHATML =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}" +
  "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

let tmp: { dir: string; remove: () => void };
beforeAll(() => {
  tmp = tempDir('model-info-');
});
afterAll(() => tmp?.remove());

function hfFolder(name: string, opts: { shards?: boolean; modelType?: string } = {}): string {
  const dir = path.join(tmp.dir, name);
  fs.mkdirSync(dir);
  const c = tinyConfig();
  fs.writeFileSync(
    path.join(dir, 'config.json'),
    JSON.stringify({ ...toHfConfigJson(c), ...(opts.modelType && { model_type: opts.modelType }) }),
  );
  let x = 0;
  const tensors = initHfTensors(c, () => ((x = (x * 7 + 3) % 11) - 5) / 5);
  if (opts.shards) {
    const names = Object.keys(tensors);
    const half = Math.ceil(names.length / 2);
    const parts = [names.slice(0, half), names.slice(half)];
    const weightMap: Record<string, string> = {};
    parts.forEach((part, i) => {
      const file = `model-0000${i + 1}-of-00002.safetensors`;
      fs.writeFileSync(path.join(dir, file), encodeSafetensors(Object.fromEntries(part.map((n) => [n, tensors[n]!]))));
      for (const n of part) weightMap[n] = file;
    });
    fs.writeFileSync(path.join(dir, 'model.safetensors.index.json'), JSON.stringify({ weight_map: weightMap }));
  } else {
    fs.writeFileSync(path.join(dir, 'model.safetensors'), encodeSafetensors(tensors));
  }
  const added = ['<|im_start|>', '<|im_end|>'].map((content) => ({ content, special: true }));
  fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tinyByteLevel({ words: ['user'], added })));
  fs.writeFileSync(
    path.join(dir, 'tokenizer_config.json'),
    JSON.stringify({ eos_token: '<|im_end|>', chat_template: CHATML }),
  );
  return dir;
}

describe('model info', () => {
  it('describes an HF folder from its headers', async () => {
    const info = await describeModel(hfFolder('plain'));
    expect(info.format).toBe('hf-folder');
    expect(info.parameters).toBe(parameterCount(tinyConfig()));
    expect(info.tensorTypes).toEqual({ F32: 2 + 9 * 2 + 1 });
    expect(info.vocabulary).toBe(256 + 3 + 2); // bytes, the merges of 'user', two added tokens
    expect(info.tokenizer).toEqual({ kind: 'HF BPE', detail: 'pre-tokenizer ByteLevel' });
    expect(info.chatTemplate?.roles).toEqual(['system', 'user', 'assistant', 'tool']);
    expect(info.unsupported).toBeNull();
  });

  it("describes a shipped base, whose tokenizer.json is mars-lab's own format (a TypeError before)", async () => {
    const info = await describeModel(path.resolve('resources/marti/base-tiny'));
    expect(info.format).toBe('mars-lab-checkpoint');
    expect(info.tokenizer).toEqual({ kind: 'mars-lab', detail: 'tokenizer.json' });
    expect(info.vocabulary).toBe(info.config!.vocab_size);
    expect(info.unsupported).toBeNull();
  });

  it('sums the shards an index names, and names a missing one', async () => {
    const dir = hfFolder('sharded', { shards: true });
    expect((await describeModel(dir)).parameters).toBe(parameterCount(tinyConfig()));
    fs.rmSync(path.join(dir, 'model-00002-of-00002.safetensors'));
    await expect(describeModel(dir)).rejects.toThrow(/model-00002-of-00002\.safetensors: is missing/);
  });

  it('describes an architecture it does not compute, saying why', async () => {
    const info = await describeModel(hfFolder('mistral', { modelType: 'mistral' }));
    expect(info.config).toBeNull();
    expect(info.unsupported).toMatch(/model_type.*mistral.*not supported/);
    expect(info.parameters).toBe(parameterCount(tinyConfig()));
  });

  it('memory figures: sampling < LoRA < full training; wasm is bounded by its heap', () => {
    const c = tinyConfig({ vocab_size: 4096, hidden_size: 256, intermediate_size: 512, num_hidden_layers: 4 });
    const m = modelMemory(c, { seq: 64 });
    expect(m.sample).toBeLessThan(m.lora);
    expect(m.lora).toBeLessThan(m.full);
    expect(loraParameterCount(c, 16)).toBeLessThan(parameterCount(c));
    expect(loraParameterCount(c, 32)).toBe(2 * loraParameterCount(c, 16));
    expect(modelMemory(c, { backend: 'wasm' }).limit.bytes).toBeLessThanOrEqual(4 * 2 ** 30);
  });

  it('the real SmolLM2 GGUF, by its catalogue name, through the CLI', async (ctx) => {
    const model = realModelOrSkipReason();
    if (!model.path) return ctx.skip(model.reason);
    const r = await cli(['model', 'info', 'smollm2-135m-instruct', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const info = JSON.parse(r.stdout) as Awaited<ReturnType<typeof describeModel>> & {
      memory: ReturnType<typeof modelMemory>;
    };
    expect(info.path).toBe(model.path);
    expect(info.format).toBe('gguf');
    expect(info.architecture).toBe('llama');
    expect(info.parameters).toBe(parameterCount(info.config!));
    expect(info.vocabulary).toBe(info.config!.vocab_size);
    expect(info.tokenizer?.kind).toBe('GGUF gpt2');
    expect(info.chatTemplate?.roles).toEqual(expect.arrayContaining(['system', 'user', 'assistant']));
    expect(info.memory.sample).toBeLessThan(info.memory.lora);
    expect(info.memory.lora).toBeLessThan(info.memory.full);
    const text = await cli(['model', 'info', model.path]);
    expect(text.stdout).toMatch(/chat template yes, roles system, user, assistant/);
  }, 120_000);
});
