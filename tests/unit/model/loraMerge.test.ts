/**
 * `mars-lab model merge` (issue 30, item 7) on the real SmolLM2-135M GGUF: an adapter folded into it is written as an
 * HF folder that loads back as a plain real model with the adapted model's logits, the same tokenizer ids and the same
 * chat template; an existing --out, a folder that is not an adapter, and an adapter whose base cannot be found are
 * each refused in one line, writing nothing; transformers' AutoTokenizer and AutoModelForCausalLM read the folder and give
 * the same ids, template text and logits (tests/peers/hf_folder_peer.py). Skips without the fetched model unless MARS_LAB_EXPECT_MODELS=1.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { beforeAll, describe, expect, it } from 'vitest';
import { lastPositionLogits } from '../../../engine/model/inference';
import { LoraAdapters } from '../../../engine/model/lora/loraAdapters';
import { savePeftAdapter } from '../../../engine/model/lora/peftAdapter';
import { loadRealModel } from '../../../engine/model/realModel';
import { Rng } from '../../../engine/random/prng';
import { peerPythonOrSkipReason, realModelOrSkipReason, tempDir } from '../../fixtures/gguf/ggufKit';
import { useBackend } from '../../helpers/backends';
import { cli } from '../../helpers/cli';

const model = realModelOrSkipReason();
const PEER = path.resolve('tests/peers/hf_folder_peer.py');
const TEXTS = ['The capital of France is', 'def add(a, b):\n\treturn a + b  # 12 🙂', '<|im_start|>user\nhi<|im_end|>'];

beforeAll(() => useBackend('cpu'));

describe('model merge on SmolLM2', () => {
  it('writes an HF folder that loads as the adapted model: logits, tokenizer and template', async (ctx) => {
    if (!model.path) return ctx.skip(model.reason);
    const { dir, remove } = tempDir('lora-merge-');
    try {
      const real = await loadRealModel(model.path);
      const ids = real.tokenizer.encode(TEXTS[0]!);
      const base = await lastPositionLogits(real.model, ids);
      const spec = { rank: 4, alpha: 8, dropout: 0, targets: ['q_proj', 'v_proj', 'down_proj'] as const };
      const fresh = LoraAdapters.create(real.model.config, { ...spec, targets: [...spec.targets] }, new Rng(9));
      const t = await fresh.toTensors();
      fresh.dispose();
      const rng = new Rng(10);
      for (const [name, v] of t) {
        if (name.endsWith('.B')) for (let i = 0; i < v.data.length; i++) v.data[i] = rng.normal() * 0.05;
      }
      real.model.lora = LoraAdapters.fromTensors(real.model.config, { ...spec, targets: [...spec.targets] }, t);
      const adapted = await lastPositionLogits(real.model, ids);
      const adapterDir = path.join(dir, 'adapter');
      await savePeftAdapter(adapterDir, real.model.lora, model.path);
      const out = path.join(dir, 'merged');

      const r = await cli(['model', 'merge', adapterDir, '--out', out, '--json']);
      expect(r.code, r.stderr).toBe(0);
      expect(JSON.parse(r.stdout)).toMatchObject({ rank: 4, targets: ['q_proj', 'v_proj', 'down_proj'] });
      expect(fs.readdirSync(out).sort()).toEqual(
        [
          'config.json',
          'generation_config.json',
          'model.safetensors',
          'tokenizer.json',
          'tokenizer_config.json',
        ].sort(),
      );

      const merged = await loadRealModel(out);
      const mergedLogits = await lastPositionLogits(merged.model, ids);
      let moved = 0;
      let worst = 0;
      for (let i = 0; i < adapted.length; i++) {
        moved = Math.max(moved, Math.abs(adapted[i]! - base[i]!));
        worst = Math.max(worst, Math.abs(adapted[i]! - mergedLogits[i]!));
      }
      await ctx.annotate(
        `adapter moved the last logits by ${moved.toFixed(3)}; merged vs adapted ${worst.toExponential(2)}`,
      );
      expect(moved).toBeGreaterThan(0.1);
      expect(worst).toBeLessThan(1e-3);
      for (const text of TEXTS) expect(merged.tokenizer.encode(text), text).toEqual(real.tokenizer.encode(text));
      const chat = [{ role: 'user', content: 'What is 2 + 3?' }];
      expect(merged.encoder!.prompt(chat).ids).toEqual(real.encoder!.prompt(chat).ids);
      const chatText = real.encoder!.prompt(chat).text;
      expect(merged.stopTokens.sort()).toEqual(real.stopTokens.sort());
      merged.model.dispose();
      real.model.dispose();

      // transformers' Auto classes read the folder as a user's script would: the same ids, template and logits.
      const { python, reason } = peerPythonOrSkipReason();
      if (python) {
        const { stdout } = await promisify(execFile)(python, [PEER, out, path.join(dir, 'peer'), '--text', TEXTS[0]!], {
          timeout: 600_000,
          env: { ...process.env, OMP_NUM_THREADS: '1', TRANSFORMERS_VERBOSITY: 'error' },
        });
        const peer = JSON.parse(stdout.trim().split('\n').at(-1)!) as { ids: number[]; chat: string };
        expect(peer.ids).toEqual(ids);
        expect(peer.chat).toBe(chatText);
        const b = fs.readFileSync(path.join(dir, 'peer', 'logits.f32'));
        const theirs = new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
        let d = 0;
        for (let i = 0; i < theirs.length; i++) d = Math.max(d, Math.abs(theirs[i]! - adapted[i]!));
        await ctx.annotate(`transformers on the merged folder vs mars-lab's adapted model: ${d.toExponential(2)}`);
        expect(d).toBeLessThan(1e-3);
      } else {
        await ctx.annotate(`transformers' side skipped: ${reason}`);
      }

      // Refusals: one line each, nothing written.
      const again = await cli(['model', 'merge', adapterDir, '--out', out]);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toMatch(/already exists/);
      const notAdapter = await cli(['model', 'merge', out, '--out', path.join(dir, 'x')]);
      expect(notAdapter.stderr).toMatch(/has no adapter_config\.json/);
      const cfgFile = path.join(adapterDir, 'adapter_config.json');
      const cfg = JSON.parse(fs.readFileSync(cfgFile, 'utf8'));
      fs.writeFileSync(
        cfgFile,
        JSON.stringify({ ...cfg, base_model_name_or_path: 'HuggingFaceTB/SmolLM2-135M-Instruct' }),
      );
      const noBase = await cli(['model', 'merge', adapterDir, '--out', path.join(dir, 'y')]);
      expect(noBase.stderr).toMatch(/base model 'HuggingFaceTB\/SmolLM2-135M-Instruct' is not here.*--base PATH/);
      for (const e of [again, notAdapter, noBase]) expect(e.stderr.trim().split('\n')).toHaveLength(1);
      expect(fs.existsSync(path.join(dir, 'x')) || fs.existsSync(path.join(dir, 'y'))).toBe(false);
    } finally {
      remove();
    }
  }, 900_000);
});
