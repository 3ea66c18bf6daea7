/**
 * What one policy-update pass holds (engine/rl/passSize.ts) now that the vocabulary head runs in row chunks past 2^24
 * floats of logits (model/chunkedHead.ts): a real vocabulary's head is a fixed share of a pass instead of 12 bytes ×
 * vocabulary per token, so wasm takes more tokens a pass for SmolLM2's shape, while mars-lab's own models (word
 * vocabularies of a few thousand, never chunked at 4096 tokens) keep exactly the passes they had.
 */
import { describe, expect, it } from 'vitest';
import { parameterCount, sizedConfig, type LlamaConfig } from '../../../engine/model/config';
import { CHUNK_ABOVE_FLOATS, CHUNKED_HEAD_BYTES, headChunkRows } from '../../../engine/model/headChunks';
import { loraParameterCount, modelMemory } from '../../../engine/training/memoryBudget';
import {
  headPassBytes,
  layerBytesPerToken,
  MAX_TOKENS_PER_PASS,
  passActivationBytes,
  tokensPerPass,
  WASM_HEAP_BYTES,
} from '../../../engine/rl/passSize';
import { SMOLLM2_SHAPE } from '../../fixtures/gguf/ggufKit';

/** SmolLM2-135M's shape (its config.json). */
const SMOLLM2: LlamaConfig = sizedConfig('tiny', SMOLLM2_SHAPE);

/** The rule before the chunked head: 12 bytes × (layers' share + vocabulary) per token, the same room. */
function oldTokensPerPass(c: LlamaConfig, params: number): number {
  const room = 0.4 * WASM_HEAP_BYTES - 5 * 4 * params;
  return Math.max(64, Math.min(MAX_TOKENS_PER_PASS, Math.floor(room / (layerBytesPerToken(c) + 12 * c.vocab_size))));
}

describe('one pass of a policy update', () => {
  it('counts the head whole below the chunking threshold and as one chunk past it, as logProbs runs it', () => {
    const c = SMOLLM2;
    const whole = Math.floor(CHUNK_ABOVE_FLOATS / c.vocab_size); // 341 tokens: the last unchunked pass
    expect(headChunkRows(whole, c.vocab_size)).toBe(whole);
    expect(headPassBytes(c, whole)).toBe(12 * c.vocab_size * whole);
    expect(headChunkRows(whole + 1, c.vocab_size)).toBeLessThan(whole + 1);
    expect(headPassBytes(c, whole + 1)).toBe(CHUNKED_HEAD_BYTES);
    expect(headPassBytes(c, 4096)).toBe(CHUNKED_HEAD_BYTES);
    expect(passActivationBytes(c, 4096)).toBe(4096 * layerBytesPerToken(c) + CHUNKED_HEAD_BYTES);
    // 16 × 256 tokens: the head was 2.4 GB of the estimate, it is 64 MiB
    expect(12 * c.vocab_size * 4096).toBeGreaterThan(2.4e9);
    expect(CHUNKED_HEAD_BYTES).toBe(64 * 2 ** 20);
  });

  it("takes more tokens a pass on wasm for a real vocabulary, and exactly the old passes for mars-lab's models", () => {
    // Under LoRA (rank 16, all seven projections) the trained variables are the adapters: what bench:lora ran.
    const params = loraParameterCount(SMOLLM2, 16);
    const now = tokensPerPass('wasm', SMOLLM2, params);
    const before = oldTokensPerPass(SMOLLM2, params);
    expect(before).toBe(332); // what bench:lora printed before (docs/results/bench.md)
    expect(now).toBeGreaterThan(before);
    expect(now * SMOLLM2.vocab_size).toBeGreaterThan(CHUNK_ABOVE_FLOATS); // a chunked pass
    // and it still fits the room the rule allows
    expect(passActivationBytes(SMOLLM2, now)).toBeLessThanOrEqual(0.4 * WASM_HEAP_BYTES - 5 * 4 * params);
    for (const size of ['micro', 'tiny', 'small', 'medium'] as const) {
      for (const vocab of [64, 2048, 4096]) {
        const c = sizedConfig(size, { vocab_size: vocab });
        const p = parameterCount(c);
        expect(tokensPerPass('wasm', c, p), `${size}, V ${vocab}`).toBe(oldTokensPerPass(c, p));
      }
    }
    expect(tokensPerPass('cpu', SMOLLM2, params)).toBe(MAX_TOKENS_PER_PASS);
  });

  it("model info's LoRA figure on wasm counts the passes LoRA runs there (sized by the adapters, not every weight)", () => {
    const m = modelMemory(SMOLLM2, { backend: 'wasm', trainRows: 16, seq: 256, loraRank: 16 });
    const weights = parameterCount(SMOLLM2) * 4;
    // bench:lora ran passes of 362 tokens at this shape (docs/results/bench.md), peak RSS 3.05 GB; the figure was
    // 1.2 GB when it counted 64-token passes, as for full training
    const pass = passActivationBytes(SMOLLM2, tokensPerPass('wasm', SMOLLM2, loraParameterCount(SMOLLM2, 16)));
    expect(m.lora).toBeGreaterThan(weights + pass);
    expect(m.lora).toBeLessThan(m.limit.bytes);
  });
});
