/**
 * `model generate` and `model tokenize` on the real SmolLM2-135M-Instruct (issue 30's command line), run as a user
 * runs them: by the catalogue name, through the CLI.
 *
 *   - `--chat` goes through the model's own chat template and stops at its end-of-turn token: greedy, the model
 *     answers the capital question with Paris (as transformers does on these weights: REAL-MODELS.md);
 *   - `--json` gives ids and one log-prob per id, each ≤ 0; the answer's text is the ids' decoding without the stop;
 *   - `--prompt` continues raw text; giving both, or neither, is refused in one line;
 *   - `model tokenize --json` gives ids that decode back to the text.
 *
 * Skips when the model is absent (`mars-lab model fetch smollm2-135m-instruct`) unless MARS_LAB_EXPECT_MODELS=1.
 */
import { describe, expect, it } from 'vitest';
import { loadGgufTokenizer } from '../../../engine/model/tokenizers/hf/ggufTokenizer';
import { cli } from '../../helpers/cli';
import { realModelOrSkipReason } from '../../fixtures/gguf/ggufKit';

const model = realModelOrSkipReason();

describe('model generate / tokenize on SmolLM2', () => {
  it('answers through its chat template, greedy, and stops at the end of its turn', async (ctx) => {
    if (!model.path) return ctx.skip(model.reason);
    const r = await cli([
      'model',
      'generate',
      'smollm2-135m-instruct',
      '--chat',
      'What is the capital of France?',
      '--max-tokens',
      '24',
      '--json',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const out = JSON.parse(r.stdout) as { text: string; ids: number[]; logProbs: number[]; finish: string };
    expect(out.text).toMatch(/Paris/);
    expect(out.finish).toBe('stop');
    expect(out.logProbs).toHaveLength(out.ids.length);
    expect(out.logProbs.every((lp) => lp <= 0)).toBe(true);
    const tokenizer = await loadGgufTokenizer(model.path);
    expect(tokenizer.decode(out.ids.slice(0, -1))).toBe(out.text);
    expect(tokenizer.decode(out.ids.slice(-1))).toBe('<|im_end|>');
  }, 120_000);

  it('continues a raw prompt; refuses both or neither of --prompt and --chat', async (ctx) => {
    if (!model.path) return ctx.skip(model.reason);
    const r = await cli(['model', 'generate', model.path, '--prompt', 'The capital of France is', '--max-tokens', '4']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout.startsWith(' Paris')).toBe(true);
    const both = await cli(['model', 'generate', model.path, '--prompt', 'x', '--chat', 'y', '--max-tokens', '1']);
    expect(both.code).not.toBe(0);
    expect(both.stderr).toMatch(/give exactly one of --prompt TEXT \(raw\) and --chat TEXT/);
  }, 120_000);

  it('tokenize gives ids that decode to the text', async (ctx) => {
    if (!model.path) return ctx.skip(model.reason);
    const text = 'Tessaly lies on the Mirel.\n\tdef f(x):  return 12345';
    const r = await cli(['model', 'tokenize', 'smollm2-135m-instruct', '--text', text, '--json']);
    expect(r.code, r.stderr).toBe(0);
    const { ids } = JSON.parse(r.stdout) as { ids: number[] };
    expect((await loadGgufTokenizer(model.path)).decode(ids)).toBe(text);
  }, 60_000);
});
