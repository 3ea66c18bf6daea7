/**
 * LoRA adapters against Hugging Face PEFT (issue 30, item 7): an adapter mars-lab writes is read by PEFT
 * (PeftModel.from_pretrained) and gives the same logits at every position; PEFT's merge_and_unload gives the weights
 * mars-lab's merge gives; an adapter PEFT writes (its own random init of A and B) is read here and gives PEFT's
 * logits. On tiny random models (tied and untied heads, all seven projections or q and v only) and on the real
 * SmolLM2-135M GGUF (transformers' GGUF loader on PEFT's side). tests/peers/peft_peer.py is the Python side.
 *
 * Skips without .venv-peers (or without the fetched model) unless MARS_LAB_EXPECT_PEERS=1 / MARS_LAB_EXPECT_MODELS=1.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { loadCheckpoint, saveCheckpoint } from '../../../engine/model/formats/checkpoint';
import { modelToHf } from '../../../engine/model/formats/hfWeights';
import { rightPaddedLayout, type LlamaModel } from '../../../engine/model/llama';
import { LoraAdapters, mergeLora, type LoraSpec } from '../../../engine/model/lora/loraAdapters';
import { adaptersFromPeft, readPeftAdapter, savePeftAdapter } from '../../../engine/model/lora/peftAdapter';
import { loadRealModel } from '../../../engine/model/realModel';
import { Rng } from '../../../engine/random/prng';
import { tf } from '../../../engine/tensor/backend';
import { peerPythonOrSkipReason, realModelOrSkipReason, tempDir } from '../../fixtures/gguf/ggufKit';
import { useBackend } from '../../helpers/backends';
import { tinyModel } from '../../helpers/tinyModel';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const PEER = path.join(root, 'tests/peers/peft_peer.py');
const IDS = [1, 5, 9, 3, 7, 2, 11, 30, 4];
const ALL: LoraSpec['targets'] = ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'];

beforeAll(() => useBackend('cpu'));

async function peer(python: string, args: string[]): Promise<void> {
  await promisify(execFile)(python, [PEER, ...args], {
    timeout: 900_000,
    maxBuffer: 1 << 20,
    env: { ...process.env, OMP_NUM_THREADS: '1', TRANSFORMERS_VERBOSITY: 'error' },
  });
}

/** Every position's logits [T, V], flat. */
function allLogits(m: LlamaModel, ids: number[]): Float32Array {
  const { positions, keyMask } = rightPaddedLayout([ids.length], ids.length);
  return tf.tidy(() =>
    m.forward({ ids: Int32Array.from(ids), batch: 1, positions, keyMask }).logits.dataSync(),
  ) as Float32Array;
}

function relDiff(ours: ArrayLike<number>, theirs: ArrayLike<number>): { worst: number; scale: number } {
  let worst = 0;
  let scale = 0;
  for (let i = 0; i < theirs.length; i++) {
    worst = Math.max(worst, Math.abs(ours[i]! - theirs[i]!));
    scale = Math.max(scale, Math.abs(theirs[i]!));
  }
  return { worst, scale };
}

const readF32 = (file: string) => {
  const b = fs.readFileSync(file);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
};

/** Adapters with B random too (fresh ones have B = 0 and change nothing). */
async function randomAdapters(m: LlamaModel, spec: LoraSpec, seed: number, std: number): Promise<LoraAdapters> {
  const fresh = LoraAdapters.create(m.config, spec, new Rng(seed));
  const t = await fresh.toTensors();
  fresh.dispose();
  const rng = new Rng(seed + 1);
  for (const [name, v] of t) {
    if (name.endsWith('.B')) for (let i = 0; i < v.data.length; i++) v.data[i] = rng.normal() * std;
  }
  return LoraAdapters.fromTensors(m.config, spec, t);
}

describe('LoRA against PEFT, tiny random models', () => {
  for (const [label, tied, targets] of [
    ['untied head, all seven projections', false, ALL],
    ['tied head, q_proj and v_proj', true, ['q_proj', 'v_proj']],
  ] as const) {
    it(`${label}: PEFT reads mars-lab's adapter, and mars-lab reads PEFT's`, async (ctx) => {
      const { python, reason } = peerPythonOrSkipReason();
      if (!python) return ctx.skip(reason);
      const { dir, remove } = tempDir('lora-peft-');
      try {
        const m = tinyModel(6, { tie_word_embeddings: tied });
        const baseDir = path.join(dir, 'base');
        await saveCheckpoint(baseDir, m);
        const spec: LoraSpec = { rank: 4, alpha: 16, dropout: 0, targets: [...targets] };
        m.lora = await randomAdapters(m, spec, 11, 0.3);
        const ours = allLogits(m, IDS);
        const baseLogits = (() => {
          const lora = m.lora;
          m.lora = null;
          const l = allLogits(m, IDS);
          m.lora = lora;
          return l;
        })();
        // The adapter matters: without it the logits are far from the adapted ones.
        expect(relDiff(baseLogits, ours).worst).toBeGreaterThan(0.5);

        const adapterDir = path.join(dir, 'ours');
        await savePeftAdapter(adapterDir, m.lora, baseDir);
        await peer(python, ['apply', baseDir, adapterDir, path.join(dir, 'apply'), '--ids', IDS.join(',')]);
        const theirs = readF32(path.join(dir, 'apply', 'logits.f32'));
        const applied = relDiff(ours, theirs);
        await ctx.annotate(
          `mars-lab adapter in PEFT: max |Δlogit| ${applied.worst.toExponential(2)} at scale ${applied.scale.toFixed(1)}`,
        );
        expect(applied.worst).toBeLessThan(1e-4 * Math.max(1, applied.scale));

        // PEFT's merge_and_unload and mars-lab's merge give the same weights, and the merged folder loads here.
        const peftMerged = (await loadCheckpoint(path.join(dir, 'apply', 'merged'))).model;
        mergeLora(m);
        const a = await modelToHf(m);
        const b = await modelToHf(peftMerged);
        for (const [name, t] of Object.entries(a)) {
          expect(relDiff(t.data, b[name]!.data).worst, name).toBeLessThan(1e-5);
        }
        expect(relDiff(allLogits(peftMerged, IDS), ours).worst).toBeLessThan(1e-4 * Math.max(1, applied.scale));
        peftMerged.dispose();

        // An adapter PEFT made (A and B both random) gives PEFT's logits here.
        const theirsDir = path.join(dir, 'theirs');
        await peer(python, [
          'make',
          baseDir,
          theirsDir,
          path.join(dir, 'make'),
          '--ids',
          IDS.join(','),
          '--r',
          '3',
          '--alpha',
          '5',
          '--targets',
          targets.join(','),
          '--seed',
          '7',
        ]);
        const base2 = (await loadCheckpoint(baseDir)).model;
        base2.lora = adaptersFromPeft(base2.config, await readPeftAdapter(theirsDir));
        expect(base2.lora.spec).toMatchObject({ rank: 3, alpha: 5 });
        const made = relDiff(allLogits(base2, IDS), readF32(path.join(dir, 'make', 'logits.f32')));
        await ctx.annotate(
          `PEFT adapter in mars-lab: max |Δlogit| ${made.worst.toExponential(2)} at scale ${made.scale.toFixed(1)}`,
        );
        expect(made.worst).toBeLessThan(1e-4 * Math.max(1, made.scale));
        base2.dispose();
        m.dispose();
      } finally {
        remove();
      }
    }, 900_000);
  }
});

describe('LoRA against PEFT on the real SmolLM2-135M (GGUF)', () => {
  it("PEFT over transformers' GGUF loader gives mars-lab's adapted logits", async (ctx) => {
    const model = realModelOrSkipReason();
    if (!model.path) return ctx.skip(model.reason);
    const { python, reason } = peerPythonOrSkipReason();
    if (!python) return ctx.skip(reason);
    const { dir, remove } = tempDir('lora-peft-real-');
    try {
      const real = await loadRealModel(model.path);
      const ids = real.tokenizer.encode('The capital of France is');
      const m = real.model;
      const base = allLogits(m, ids);
      m.lora = await randomAdapters(m, { rank: 8, alpha: 16, dropout: 0, targets: ALL }, 5, 0.02);
      const ours = allLogits(m, ids);
      expect(relDiff(base, ours).worst).toBeGreaterThan(0.5);
      await savePeftAdapter(path.join(dir, 'adapter'), m.lora, 'HuggingFaceTB/SmolLM2-135M-Instruct');
      await peer(python, [
        'apply',
        path.dirname(model.path),
        path.join(dir, 'adapter'),
        path.join(dir, 'out'),
        '--ids',
        ids.join(','),
        '--gguf',
        path.basename(model.path),
        '--no-merge',
      ]);
      const d = relDiff(ours, readF32(path.join(dir, 'out', 'logits.f32')));
      await ctx.annotate(
        `SmolLM2 + rank-8 adapter, ${ids.length} positions: max |Δlogit| ${d.worst.toExponential(2)} at scale ${d.scale.toFixed(1)}`,
      );
      expect(d.worst / d.scale).toBeLessThan(1e-3);
      m.dispose();
    } finally {
      remove();
    }
  }, 900_000);
});
