/**
 * Qwen2, Qwen3, Llama 3's RoPE scaling and sharded checkpoints against HF transformers (issue 30, item 3): tiny
 * random models made, saved (sharded where stated: transformers' own model.safetensors.index.json) and run by
 * transformers itself (tests/peers/hf_model_peer.py), then loaded here by loadCheckpoint and run on the same ids. Every
 * position's logits (the full-sequence path), the last position through the KV cache, and the training path's
 * log-probs must agree within 1e-4 (float32 on both sides); the Qwen models also written as F32 GGUF files (gguf-py,
 * llama.cpp's tensor names) must give the same logits through the GGUF loader. Qwen3 needs transformers 4.51, which scripts/peerEnv.mjs
 * installs beside 4.46.3 in .venv-peers/qwen3-transformers.
 *
 * Each case also shows that what it tests matters: Qwen2 with its biases zeroed, and a llama3-scaled model run with
 * plain RoPE, are far from transformers (so a model that ignored them would fail), and on the code before this
 * change every case is refused (the config's model_type / rope_scaling, or the missing model.safetensors).
 *
 * The Python side skips without .venv-peers unless MARS_LAB_EXPECT_PEERS=1 (CI), where it fails instead.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLlamaConfig } from '../../../engine/model/config';
import { loadCheckpoint } from '../../../engine/model/formats/checkpoint';
import { readGgufAsHf } from '../../../engine/model/formats/gguf/ggufToHf';
import { modelFromHf } from '../../../engine/model/formats/hfWeights';
import type { LlamaModel } from '../../../engine/model/llama';
import { padBatch, tokenLogProbs } from '../../../engine/model/logProbs';
import { tf } from '../../../engine/tensor/backend';
import { peerPythonOrSkipReason, tempDir } from '../../fixtures/gguf/ggufKit';
import { useBackend } from '../../helpers/backends';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const PEER = path.join(root, 'tests/peers/hf_model_peer.py');
const QWEN3_TRANSFORMERS = path.join(root, '.venv-peers/qwen3-transformers');
const TOLERANCE = 1e-4;
/** transformers' name (a literal, so this file also runs against code that has no shard loader). */
const SHARD_INDEX_FILE = 'model.safetensors.index.json';
/** The Qwen models also as F32 GGUF files in llama.cpp's names and layout (written by gguf-py, after the listing). */
const GGUF_FILE = 'model.gguf';

const base = {
  vocab_size: 96,
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  max_position_embeddings: 256,
  rms_norm_eps: 1e-6,
};
const llama3Scaling = {
  rope_type: 'llama3',
  factor: 8,
  low_freq_factor: 1,
  high_freq_factor: 4,
  original_max_position_embeddings: 64,
};

interface Case {
  family: 'llama' | 'qwen2' | 'qwen3';
  config: Record<string, unknown>;
  /** Shard size in bytes for save_pretrained (0: one model.safetensors). */
  shardBytes: number;
}

const CASES: Record<string, Case> = {
  'Qwen2 (q/k/v biases), untied, sharded': { family: 'qwen2', config: { ...base }, shardBytes: 20_000 },
  'Qwen2, tied head, one file': {
    family: 'qwen2',
    config: { ...base, tie_word_embeddings: true, num_key_value_heads: 1, rope_theta: 1e6 },
    shardBytes: 0,
  },
  'Qwen3 (q/k norms), head_dim 12 ≠ 32/4, untied, sharded': {
    family: 'qwen3',
    config: { ...base, head_dim: 12 },
    shardBytes: 20_000,
  },
  'Qwen3, head_dim from its default (128), tied, one file': {
    family: 'qwen3',
    config: { ...base, tie_word_embeddings: true },
    shardBytes: 0,
  },
  'Llama (plain RoPE), sharded': {
    family: 'llama',
    config: { ...base, tie_word_embeddings: true },
    shardBytes: 20_000,
  },
  // head_dim 16: wavelengths 2π·10000^(2i/16) fall below, between and above 64/4 and 64/1
  'Llama with llama3 RoPE scaling, head_dim 16, sharded': {
    family: 'llama',
    config: { ...base, head_dim: 16, rope_theta: 10000, rope_scaling: llama3Scaling },
    shardBytes: 30_000,
  },
};

/** 48 ids: positions up to 47, past the scaled and the unscaled wavelengths' interesting range. */
const IDS = Array.from({ length: 48 }, (_, i) => (i * 37 + 11) % base.vocab_size);

interface PeerRun {
  dir: string;
  files: string[];
  /** [len(IDS), vocab] row-major. */
  logits: Float32Array;
}

async function runPeer(python: string, name: string, c: Case, dir: string): Promise<PeerRun> {
  const args = [PEER, c.family, dir, '--config', JSON.stringify(c.config), '--seed', '7', '--ids', IDS.join(',')];
  if (c.shardBytes) args.push('--shard-bytes', String(c.shardBytes));
  if (c.family === 'qwen3') args.push('--transformers', QWEN3_TRANSFORMERS);
  if (c.family !== 'llama') args.push('--gguf', path.join(dir, GGUF_FILE));
  const { stdout } = await promisify(execFile)(python, args, {
    timeout: 300_000,
    maxBuffer: 1 << 20,
    env: { ...process.env, OMP_NUM_THREADS: '1', TRANSFORMERS_VERBOSITY: 'error' },
  });
  const out = JSON.parse(stdout.trim().split('\n').at(-1)!) as { shape: number[]; files: string[] };
  const b = fs.readFileSync(path.join(dir, 'logits.f32'));
  const logits = new Float32Array(b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength));
  expect(out.shape, name).toEqual([IDS.length, base.vocab_size]);
  return { dir, files: out.files, logits };
}

/** Every position's logits [T·V] on the full-sequence path. */
function allLogits(model: LlamaModel, ids: number[]): Float32Array {
  const n = ids.length;
  const out = tf.tidy(
    () =>
      model.forward({
        ids: Int32Array.from(ids),
        batch: 1,
        positions: Int32Array.from(ids.keys()),
        keyMask: new Uint8Array(n).fill(1),
      }).logits,
  );
  const data = out.dataSync() as Float32Array;
  out.dispose();
  return data;
}

/** The last position's logits after a prefix of n − 4 tokens and four single-token steps through the KV cache. */
function cachedLastLogits(model: LlamaModel, ids: number[]): Float32Array {
  return tf.tidy(() => {
    const split = ids.length - 4;
    let step = model.forward({
      ids: Int32Array.from(ids.slice(0, split)),
      batch: 1,
      positions: Int32Array.from({ length: split }, (_, i) => i),
      keyMask: new Uint8Array(split).fill(1),
    });
    for (let t = split; t < ids.length; t++) {
      step = model.forward({
        ids: Int32Array.of(ids[t]!),
        batch: 1,
        positions: Int32Array.of(t),
        keyMask: new Uint8Array(t + 1).fill(1),
        cache: step.cache,
        lastOnly: true,
      });
    }
    return step.logits.dataSync() as Float32Array;
  });
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let worst = 0;
  for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
  return worst;
}

function maxAbs(a: Float32Array): number {
  let m = 0;
  for (const x of a) m = Math.max(m, Math.abs(x));
  return m;
}

const peer = peerPythonOrSkipReason();
const runs = new Map<string, PeerRun>();
const dirs: Array<() => void> = [];

beforeAll(async () => {
  if (!peer.python) return;
  if (!fs.existsSync(path.join(QWEN3_TRANSFORMERS, 'transformers'))) {
    const why = `${QWEN3_TRANSFORMERS} is absent: run \`node scripts/peerEnv.mjs\``;
    if (process.env.MARS_LAB_EXPECT_PEERS === '1') throw new Error(`MARS_LAB_EXPECT_PEERS=1 but ${why}`);
  }
  for (const [name, c] of Object.entries(CASES)) {
    if (c.family === 'qwen3' && !fs.existsSync(path.join(QWEN3_TRANSFORMERS, 'transformers'))) continue;
    const { dir, remove } = tempDir('hf-family-peer-');
    dirs.push(remove);
    runs.set(name, await runPeer(peer.python, name, c, dir));
  }
}, 600_000);
afterAll(() => {
  for (const remove of dirs) remove();
});

describe.each(['cpu', 'wasm'] as const)('HF transformers families on %s', (backend) => {
  beforeAll(() => useBackend(backend));

  for (const [name, c] of Object.entries(CASES)) {
    it(`${name}: logits, the KV-cache path and log-probs equal transformers'`, async (ctx) => {
      if (!peer.python) return ctx.skip(peer.reason);
      const run = runs.get(name);
      if (!run) return ctx.skip(`${QWEN3_TRANSFORMERS} is absent: run \`node scripts/peerEnv.mjs\``);
      expect(run.files.includes(SHARD_INDEX_FILE), 'sharded as asked').toBe(c.shardBytes > 0);
      const shards = run.files.filter((f) => /^model-\d+-of-\d+\.safetensors$/.test(f));
      expect(shards.length > 2).toBe(c.shardBytes > 0);
      const { model } = await loadCheckpoint(run.dir);
      try {
        const V = base.vocab_size;
        const ours = allLogits(model, IDS);
        const scale = maxAbs(run.logits);
        expect(scale).toBeGreaterThan(1);
        const delta = maxAbsDiff(ours, run.logits);
        const last = run.logits.subarray((IDS.length - 1) * V);
        const cachedDelta = maxAbsDiff(cachedLastLogits(model, IDS), last);
        console.info(
          `${backend} ${name}: max |Δ logit| ${delta.toExponential(2)} (scale ${scale.toFixed(2)}), KV cache ${cachedDelta.toExponential(2)}`,
        );
        expect(delta).toBeLessThan(TOLERANCE * Math.max(1, scale));
        expect(cachedDelta).toBeLessThan(TOLERANCE * Math.max(1, scale));
        // the training path: one-hot embedding, log-softmax over the vocabulary
        const lp = tf.tidy(() => tokenLogProbs(model, padBatch([IDS])).logp);
        const got = (await lp.array())[0]!;
        lp.dispose();
        for (let t = 1; t < IDS.length; t++) {
          const row = run.logits.subarray((t - 1) * V, t * V);
          const m = maxAbs(row) + 1;
          const lse = m + Math.log(row.reduce((s, x) => s + Math.exp(x - m), 0));
          expect(Math.abs(got[t]! - (row[IDS[t]!]! - lse))).toBeLessThan(TOLERANCE * Math.max(1, scale));
        }
      } finally {
        model.dispose();
      }
    });
  }

  for (const [name, c] of Object.entries(CASES)) {
    if (c.family === 'llama') continue;
    it(`${name}, as a GGUF file gguf-py wrote: the same logits through the GGUF loader`, async (ctx) => {
      if (!peer.python) return ctx.skip(peer.reason);
      const run = runs.get(name);
      if (!run) return ctx.skip(`${QWEN3_TRANSFORMERS} is absent: run \`node scripts/peerEnv.mjs\``);
      const { plan, tensors } = await readGgufAsHf(path.join(run.dir, GGUF_FILE));
      expect(plan.hfArchitecture).toBe(c.family === 'qwen2' ? 'Qwen2ForCausalLM' : 'Qwen3ForCausalLM');
      const model = modelFromHf(plan.config, tensors, true);
      try {
        const scale = maxAbs(run.logits);
        const delta = maxAbsDiff(allLogits(model, IDS), run.logits);
        console.info(`${backend} ${name} (GGUF): max |Δ logit| ${delta.toExponential(2)}`);
        expect(delta).toBeLessThan(TOLERANCE * Math.max(1, scale));
      } finally {
        model.dispose();
      }
    });
  }

  it('what the cases test matters: Qwen2 without its biases and llama3 scaling as plain RoPE are far off', async (ctx) => {
    if (!peer.python) return ctx.skip(peer.reason);
    const qwen2 = runs.get('Qwen2 (q/k/v biases), untied, sharded')!;
    const { model } = await loadCheckpoint(qwen2.dir);
    for (const [n, v] of model.params) if (/\.b[qkv]$/.test(n)) v.assign(tf.zerosLike(v));
    expect(maxAbsDiff(allLogits(model, IDS), qwen2.logits)).toBeGreaterThan(0.1);
    model.dispose();

    const scaled = runs.get('Llama with llama3 RoPE scaling, head_dim 16, sharded')!;
    const raw = JSON.parse(fs.readFileSync(path.join(scaled.dir, 'config.json'), 'utf8')) as Record<string, unknown>;
    fs.writeFileSync(path.join(scaled.dir, 'config.json'), JSON.stringify({ ...raw, rope_scaling: null }));
    try {
      expect(parseLlamaConfig({ ...raw, rope_scaling: null }).rope_scaling).toBeUndefined();
      const plain = (await loadCheckpoint(scaled.dir)).model;
      expect(maxAbsDiff(allLogits(plain, IDS), scaled.logits)).toBeGreaterThan(0.01);
      plain.dispose();
    } finally {
      fs.writeFileSync(path.join(scaled.dir, 'config.json'), JSON.stringify(raw));
    }
  });
});
