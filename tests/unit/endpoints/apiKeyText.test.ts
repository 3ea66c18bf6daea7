/**
 * What a key-variable field takes (engine/pure/apiKeyText.ts): names of environment variables, as people write them,
 * pass; keys typed there by mistake (with a provider's prefix, base64 tails, or long mixed-case alphanumerics) do not.
 */
import { describe, expect, it } from 'vitest';
import { looksLikeKey } from '../../../engine/pure/apiKeyText';

describe('looksLikeKey', () => {
  it('lets the names of variables through', () => {
    for (const name of ['OPENAI_API_KEY', 'HF_TOKEN', 'VLLM_KEY', 'my_key', 'MARS_LAB_RAY_TOKEN', 'KEY_A', 'X', '']) {
      expect(looksLikeKey(name), name).toBe(false);
    }
  });
  it('refuses keys', () => {
    for (const key of [
      'sk-proj-Q7wE9rT2yU4iO6pA8sD0fG1hJ3kL5zX',
      'sk-abcdef1234567890',
      'hf_AbCdEfGhIjKlMnOpQrStUv',
      'gsk_1234567890abcdef',
      'AKIAIOSFODNN7EXAMPLE',
      'Zx81kQ2mN4vB7rT0pL5sW9yH3',
      '3f9a1c0e7b2d4a6f8e1c3b5d7f9a2c4e6b8d0f1a',
      'abc.def/ghi+jkl==',
    ]) {
      expect(looksLikeKey(key), key).toBe(true);
    }
  });
});
