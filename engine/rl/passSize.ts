/**
 * How many padded tokens one forward/backward pass of a policy update holds: the figures engine/rl/policyUpdate.ts
 * chunks its passes by and engine/training/memoryBudget.ts estimates a run's memory with. Plain arithmetic on the
 * model's config (no TensorFlow.js), so the config schema can load it in the app's main process.
 */
import type { LlamaConfig } from '../model/config';
import { CHUNK_ABOVE_FLOATS, CHUNKED_HEAD_BYTES } from '../model/headChunks';

/** The wasm backend's heap (32-bit addresses) cannot grow past 4 GiB. */
export const WASM_HEAP_BYTES = 2 ** 32;
/** Most padded tokens one forward/backward pass holds (policyUpdate's default off wasm; wasm takes fewer). */
export const MAX_TOKENS_PER_PASS = 4096;

type PassConfig = Pick<LlamaConfig, 'num_hidden_layers' | 'hidden_size' | 'intermediate_size' | 'vocab_size'>;

/**
 * Bytes one token keeps for the backward pass in the layers: about 12 bytes × layers × (10·hidden + 4·intermediate)
 * (measured on the medium model: 1.9 GB live for 16 × 64 tokens; engine/rl/policyUpdate.ts).
 */
export function layerBytesPerToken(c: PassConfig): number {
  return 12 * c.num_hidden_layers * (10 * c.hidden_size + 4 * c.intermediate_size);
}

/**
 * Bytes the vocabulary head holds in a pass over `tokens` tokens: 12 bytes × vocabulary a token (logits, log-softmax,
 * their gradient) while the pass's logits stay within CHUNK_ABOVE_FLOATS; past that the head runs in row chunks
 * (model/chunkedHead.ts) and holds CHUNKED_HEAD_BYTES whatever the tokens. Counts every token, trained or not: it
 * errs high where prompts are long.
 */
export function headPassBytes(c: PassConfig, tokens: number): number {
  return tokens * c.vocab_size > CHUNK_ABOVE_FLOATS ? CHUNKED_HEAD_BYTES : 12 * c.vocab_size * tokens;
}

/**
 * How many times `layerBytesPerToken` a token keeps on TensorFlow.js's stock ops, without the native fused ones (RMSNorm,
 * SwiGLU and RoPE each one op, tensor/native/fused.ts): MARS_LAB_NATIVE=0, or no native build. Measured as a pass's
 * peak tensor bytes a token on wasm (issue 30): 8.6 against 4.6 MiB for SmolLM2-135M under LoRA, 4.63 against 2.34 MB
 * for the medium model trained fully.
 */
export const UNFUSED_LAYER_FACTOR = 2;

/**
 * Bytes a token keeps in the layers on the path a pass runs: `layerBytesPerToken`, times UNFUSED_LAYER_FACTOR on wasm
 * without the native fused ops (`fused` false). Off wasm the figure stays the fused one: the factor was measured on
 * wasm, whose stock Identity copies every tensor a gradient saves (tensor/native/kernels.ts useSharedIdentity).
 */
export function passLayerBytesPerToken(backend: string | undefined, c: PassConfig, fused = true): number {
  return layerBytesPerToken(c) * (backend === 'wasm' && !fused ? UNFUSED_LAYER_FACTOR : 1);
}

/**
 * What one pass of `tokens` tokens keeps for its backward pass, attention scores aside (memoryBudget.ts adds them), on
 * `backend` with or without the fused ops (passLayerBytesPerToken; the fused figure when neither is given).
 */
export function passActivationBytes(c: PassConfig, tokens: number, backend?: string, fused = true): number {
  return tokens * passLayerBytesPerToken(backend, c, fused) + headPassBytes(c, tokens);
}

/**
 * Padded tokens per forward/backward pass (engine/rl/policyUpdate.ts defaultTokensPerPass): 4096, or fewer on wasm,
 * where one pass's activations are kept within 40% of the 4 GiB heap after the weights, the reference copy, Adam's two
 * moments and the gradients (5 × the parameters); the rest of the heap goes to Adam's and the summed gradients'
 * temporaries and to fragmentation. Small models keep 4096; a real vocabulary's head, chunked, takes a fixed share.
 * `fused`: whether the native fused ops run the pass (else UNFUSED_LAYER_FACTOR × the layers' bytes).
 */
export function tokensPerPass(backend: string | undefined, c: PassConfig, params: number, fused = true): number {
  if (backend !== 'wasm') return MAX_TOKENS_PER_PASS;
  const room = 0.4 * WASM_HEAP_BYTES - 5 * 4 * params;
  const layer = passLayerBytesPerToken(backend, c, fused);
  // The most tokens that fit with the head whole, and with it chunked (a pass past the threshold): the larger that holds.
  const whole = Math.floor(room / (layer + 12 * c.vocab_size));
  const chunked = Math.floor((room - CHUNKED_HEAD_BYTES) / layer);
  const n = chunked * c.vocab_size > CHUNK_ABOVE_FLOATS ? Math.max(whole, chunked) : whole;
  return Math.max(64, Math.min(MAX_TOKENS_PER_PASS, n));
}
