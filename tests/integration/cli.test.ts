/**
 * The commands other implementations use to check ours: `doctor`, `model init`, `model logits`, run as a user runs
 * them (the package's bin through Node), with their output checked against an independent reference.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseLlamaConfig } from '../../engine/model/config';
import { readSafetensorsFile } from '../../engine/model/formats/safetensors';
import { cli as runCli } from '../helpers/cli';
import { referenceLogits } from '../helpers/llamaReference';

const cli = (...args: string[]) => runCli(args);

let dir: string;
beforeAll(() => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-cli-'));
});
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('mars-lab CLI', () => {
  it('doctor --json names the chosen backend and why each other one was not taken', async () => {
    const { code, stdout } = await cli('doctor', '--json');
    expect(code).toBe(0);
    const r = JSON.parse(stdout);
    expect(['tensorflow', 'webgpu', 'wasm', 'cpu']).toContain(r.chosen);
    expect(r.attempts.map((a: { backend: string }) => a.backend)).toEqual(
      expect.arrayContaining(['tensorflow', 'webgpu', 'wasm', 'cpu']),
    );
    for (const a of r.attempts) {
      expect(['chosen', 'not-installed', 'no-adapter', 'software-adapter', 'failed', 'not-tried']).toContain(a.status);
      expect(a.detail.length).toBeGreaterThan(5);
    }
    expect(r.attempts.filter((a: { status: string }) => a.status === 'chosen')).toHaveLength(1);
    expect(r.threads).toBeGreaterThanOrEqual(1);
    expect(r.versions['tfjs-core']).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('doctor without --json prints the same facts for people', async () => {
    const { code, stdout } = await cli('doctor', '--backend', 'cpu');
    expect(code).toBe(0);
    expect(stdout).toMatch(/^backend: cpu \(forced with --backend\)/);
    expect(stdout).toMatch(/threads: 1/);
  });

  it('forcing an unavailable backend fails with a message that names it and the fix', async () => {
    const { code, stderr } = await cli('doctor', '--backend', 'tensorflow');
    if (code === 0) return; // tfjs-node is installed on this machine: nothing to refuse
    expect(code).toBe(2);
    expect(stderr).toMatch(/Backend 'tensorflow' is not available: @tensorflow\/tfjs-node-gpu: not-installed/);
    expect(stderr).toMatch(/drop --backend/);
  });

  it('model init + model logits: seeded, and the logits equal an independent Llama reference', async () => {
    const cfgFile = path.join(dir, 'config.json');
    fs.writeFileSync(
      cfgFile,
      JSON.stringify({
        vocab_size: 30,
        hidden_size: 24,
        intermediate_size: 40,
        num_hidden_layers: 2,
        num_attention_heads: 4,
        num_key_value_heads: 2,
        max_position_embeddings: 64,
        rope_theta: 10000,
        rms_norm_eps: 1e-5,
        tie_word_embeddings: false,
      }),
    );
    const [a, b, c] = ['a', 'b', 'c'].map((n) => path.join(dir, n));
    expect((await cli('model', 'init', '--config', cfgFile, '--out', a!, '--seed', '7', '--std', '0.5')).code).toBe(0);
    expect((await cli('model', 'init', '--config', cfgFile, '--out', b!, '--seed', '7', '--std', '0.5')).code).toBe(0);
    expect((await cli('model', 'init', '--config', cfgFile, '--out', c!, '--seed', '8', '--std', '0.5')).code).toBe(0);
    const bytes = (d: string) => fs.readFileSync(path.join(d, 'model.safetensors'));
    expect(bytes(a!).equals(bytes(b!))).toBe(true);
    expect(bytes(a!).equals(bytes(c!))).toBe(false);

    const { code, stdout } = await cli('model', 'logits', '--checkpoint', a!, '--ids', '3,17,5', '--json');
    expect(code).toBe(0);
    const { logits } = JSON.parse(stdout) as { logits: number[] };
    expect(logits).toHaveLength(30);
    for (const x of logits) expect(Math.fround(x)).toBe(x); // float32 values, printed exactly

    const cfg = parseLlamaConfig(JSON.parse(fs.readFileSync(path.join(a!, 'config.json'), 'utf8')));
    const st = await readSafetensorsFile(path.join(a!, 'model.safetensors'));
    const tensors = Object.fromEntries(
      Object.entries(st.tensors).map(([n, t]) => [n, { shape: t.shape, data: t.data as Float32Array }]),
    );
    const ref = referenceLogits(cfg, tensors, [3, 17, 5]).at(-1)!;
    const scale = Math.max(...ref.map(Math.abs));
    expect(scale).toBeGreaterThan(0.1);
    for (let i = 0; i < 30; i++) expect(Math.abs(logits[i]! - ref[i]!)).toBeLessThan(1e-4 * Math.max(1, scale));
  });

  it('model init refuses to overwrite, and logits refuses ids outside the vocabulary, naming the flag', async () => {
    const out = path.join(dir, 'tiny');
    expect((await cli('model', 'init', '--config', 'tiny', '--out', out)).code).toBe(0);
    const again = await cli('model', 'init', '--config', 'tiny', '--out', out);
    expect(again.code).toBe(2);
    expect(again.stderr).toMatch(/--out .*already exists \(add --force/);
    const bad = await cli('model', 'logits', '--checkpoint', out, '--ids', '3,512');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--ids: token id 512 is out of range \(vocab_size is 512\)/);
  });
});
