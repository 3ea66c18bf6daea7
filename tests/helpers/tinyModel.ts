import { parseLlamaConfig, type LlamaConfig } from '../../engine/model/config';
import { initHfTensors, modelFromHf } from '../../engine/model/formats/hfWeights';
import type { LlamaModel } from '../../engine/model/llama';
import { Rng } from '../../engine/random/prng';

export function tinyConfig(over: Partial<LlamaConfig> = {}): LlamaConfig {
  return parseLlamaConfig({
    vocab_size: 40,
    hidden_size: 32,
    intermediate_size: 48,
    num_hidden_layers: 2,
    num_attention_heads: 4,
    num_key_value_heads: 2,
    max_position_embeddings: 96,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: false,
    ...over,
  });
}

/** A random model; std 0.3 (not HF's 0.02) so logits are far from uniform and mistakes show. */
export function tinyModel(seed = 1, over: Partial<LlamaConfig> = {}, std = 0.3): LlamaModel {
  const cfg = tinyConfig(over);
  const rng = new Rng(seed);
  return modelFromHf(
    cfg,
    initHfTensors(cfg, () => rng.normal(), std),
  );
}
