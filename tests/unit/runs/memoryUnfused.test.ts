/**
 * The memory plan on wasm without the native fused ops (MARS_LAB_NATIVE=0, MARS_LAB_NATIVE_FUSED=0, or no addon built):
 * a training token keeps UNFUSED_LAYER_FACTOR times its layers' bytes there and policyUpdate takes shorter passes
 * (engine/rl/passSize.ts, issue 30), so `model info`, the Launch gauge and chatgrpo's refusal
 * (engine/training/memoryBudget.ts) count the same: the path the passes will run on, not the fused figure always.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parameterCount, sizedConfig, type LlamaConfig } from '../../../engine/model/config';
import {
  loraParameterCount,
  modelMemory,
  nativeFusedExpected,
  realModelMemoryPlan,
} from '../../../engine/training/memoryBudget';
import {
  layerBytesPerToken,
  passActivationBytes,
  tokensPerPass,
  UNFUSED_LAYER_FACTOR,
} from '../../../engine/rl/passSize';
import { SMOLLM2_SHAPE } from '../../fixtures/gguf/ggufKit';

/** SmolLM2-135M's shape (its config.json). */
const SMOLLM2: LlamaConfig = sizedConfig('tiny', SMOLLM2_SHAPE);

/** One row of 128 tokens: a single pass with or without the fused ops, so only a token's cost differs. */
const ONE_PASS = { trainRows: 1, sampleRows: 1, seq: 128, loraRank: 16 };

afterEach(() => {
  vi.unstubAllEnvs();
});

describe('the memory plan on wasm without the native fused ops', () => {
  it('counts twice the layers a token under MARS_LAB_NATIVE=0, as the passes keep them', () => {
    const fused = modelMemory(SMOLLM2, { backend: 'wasm', fused: true, ...ONE_PASS });
    vi.stubEnv('MARS_LAB_NATIVE', '0');
    const plain = modelMemory(SMOLLM2, { backend: 'wasm', ...ONE_PASS });
    const extra = ONE_PASS.seq * layerBytesPerToken(SMOLLM2) * (UNFUSED_LAYER_FACTOR - 1);
    expect(plain.lora - fused.lora).toBe(extra);
    // full training's passes are 64 tokens either way (the 4 GiB heap's room goes to 135M weights' copies)
    const fullTokens = Math.min(ONE_PASS.seq, tokensPerPass('wasm', SMOLLM2, parameterCount(SMOLLM2), false));
    expect(plain.full - fused.full).toBe((fullTokens / ONE_PASS.seq) * extra);
    expect(plain.sample).toBe(fused.sample); // sampling has no backward pass
    // MARS_LAB_NATIVE_FUSED=0 leaves the products native but the small ops stock: the same figure
    vi.stubEnv('MARS_LAB_NATIVE', '1');
    vi.stubEnv('MARS_LAB_NATIVE_FUSED', '0');
    expect(modelMemory(SMOLLM2, { backend: 'wasm', ...ONE_PASS }).lora).toBe(plain.lora);
  });

  it('sizes its passes as policyUpdate does there: about half the tokens a pass for a LoRA step of 16 × 256', () => {
    const shape = { trainRows: 16, sampleRows: 16, seq: 256, loraRank: 16 };
    const params = loraParameterCount(SMOLLM2, 16);
    const fusedTokens = tokensPerPass('wasm', SMOLLM2, params, true);
    const plainTokens = tokensPerPass('wasm', SMOLLM2, params, false);
    expect(plainTokens).toBeLessThan(fusedTokens / 1.5);
    const fused = modelMemory(SMOLLM2, { backend: 'wasm', fused: true, ...shape });
    vi.stubEnv('MARS_LAB_NATIVE', '0');
    const plain = modelMemory(SMOLLM2, { backend: 'wasm', ...shape });
    // One pass of each size, with the attention scores of the rows it spans (rows × heads × seq² × layers, 3 copies).
    const c = SMOLLM2;
    const scores = (tokens: number): number =>
      Math.ceil(tokens / shape.seq) * c.num_attention_heads * shape.seq ** 2 * c.num_hidden_layers * 4 * 3;
    const pass = (tokens: number, fusedOps: boolean): number =>
      passActivationBytes(c, tokens, 'wasm', fusedOps) + scores(tokens);
    expect(plain.lora - fused.lora).toBe(pass(plainTokens, false) - pass(fusedTokens, true));
  });

  it('leaves every other backend as it was (the factor was measured on wasm)', () => {
    vi.stubEnv('MARS_LAB_NATIVE', '0');
    for (const backend of [undefined, 'cpu', 'webgpu', 'tensorflow']) {
      const m = modelMemory(SMOLLM2, { backend, ...ONE_PASS });
      expect(m.lora, String(backend)).toBe(modelMemory(SMOLLM2, { backend, fused: true, ...ONE_PASS }).lora);
    }
  });

  it("gives chatgrpo's plan (the Launch gauge) the same figure as model info", () => {
    vi.stubEnv('MARS_LAB_NATIVE', '0');
    const run = { backend: 'wasm', rows: 1, replyTokens: 32, loraRank: 16, rowsField: 'task.groupSize' };
    const plan = realModelMemoryPlan(SMOLLM2, run);
    const info = modelMemory(SMOLLM2, { backend: 'wasm', trainRows: 1, sampleRows: 1, seq: 128, loraRank: 16 });
    expect(plan.need).toBe(Math.max(info.sample, info.lora));
    expect(plan.need).toBeGreaterThan(realModelMemoryPlan(SMOLLM2, { ...run, fused: true }).need);
  });

  it('expects the fused ops on wasm only with an addon to load and neither switch off', () => {
    const here = new URL(import.meta.url).pathname; // any existing file stands for a built addon
    expect(nativeFusedExpected('wasm', { MARS_LAB_NATIVE_PATH: here })).toBe(true);
    expect(nativeFusedExpected('wasm', { MARS_LAB_NATIVE_PATH: here, MARS_LAB_NATIVE: 'own' })).toBe(true);
    expect(nativeFusedExpected('wasm', { MARS_LAB_NATIVE_PATH: here, MARS_LAB_NATIVE: '0' })).toBe(false);
    expect(nativeFusedExpected('wasm', { MARS_LAB_NATIVE_PATH: here, MARS_LAB_NATIVE_FUSED: 'off' })).toBe(false);
    expect(nativeFusedExpected('wasm', { MARS_LAB_NATIVE_PATH: `${here}.missing` })).toBe(false);
    expect(nativeFusedExpected('cpu', { MARS_LAB_NATIVE_PATH: here })).toBe(false);
    expect(nativeFusedExpected(undefined, { MARS_LAB_NATIVE_PATH: here })).toBe(false);
  });
});
