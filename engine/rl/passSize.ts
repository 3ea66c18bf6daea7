/**
 * How many padded tokens one forward/backward pass of a policy update holds: the figures engine/rl/policyUpdate.ts
 * chunks its passes by and engine/training/memoryBudget.ts estimates a run's memory with. Plain arithmetic on the
 * model's config (no TensorFlow.js), so the config schema can load it in the app's main process.
 */
import type { LlamaConfig } from '../model/config';

/** The wasm backend's heap (32-bit addresses) cannot grow past 4 GiB. */
export const WASM_HEAP_BYTES = 2 ** 32;
/** Most padded tokens one forward/backward pass holds (policyUpdate's default off wasm; wasm takes fewer). */
export const MAX_TOKENS_PER_PASS = 4096;

/**
 * Bytes one token keeps for the backward pass: about 12 bytes × layers × (10·hidden + 4·intermediate), plus the
 * vocabulary head (measured on the medium model: 1.9 GB live for 16 × 64 tokens; engine/rl/policyUpdate.ts).
 */
export function activationBytesPerToken(
  c: Pick<LlamaConfig, 'num_hidden_layers' | 'hidden_size' | 'intermediate_size' | 'vocab_size'>,
): number {
  return 12 * c.num_hidden_layers * (10 * c.hidden_size + 4 * c.intermediate_size) + 12 * c.vocab_size;
}

/**
 * Padded tokens per forward/backward pass (engine/rl/policyUpdate.ts defaultTokensPerPass): 4096, or fewer on wasm,
 * where one pass's activations are kept within 40% of the 4 GiB heap after the weights, the reference copy, Adam's two
 * moments and the gradients (5 × the parameters); the rest of the heap goes to Adam's and the summed gradients'
 * temporaries and to fragmentation. Small models keep 4096.
 */
export function tokensPerPass(
  backend: string | undefined,
  c: Parameters<typeof activationBytesPerToken>[0],
  params: number,
): number {
  if (backend !== 'wasm') return MAX_TOKENS_PER_PASS;
  const room = 0.4 * WASM_HEAP_BYTES - 5 * 4 * params;
  return Math.max(64, Math.min(MAX_TOKENS_PER_PASS, Math.floor(room / activationBytesPerToken(c))));
}
