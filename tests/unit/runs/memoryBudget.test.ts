/**
 * Memory is checked before it is spent (engine/training/memoryBudget.ts): configs no machine here can hold are refused at
 * validation with one line naming the fields and the figure, every shipped preset is accepted, and the check can be
 * overridden.
 */
import { describe, expect, it } from 'vitest';
import { checkRunConfig, parseRunConfig } from '../../../engine/runs/config/configSchema';
import { estimateRunMemory, memoryProblem } from '../../../engine/training/memoryBudget';
import { listPresets } from '../../../engine/runs/presets/presets';

const GiB = 2 ** 30;
/** The largest model the schema's bounds allow: 68.7 billion parameters. */
const HUGE = {
  hidden_size: 8192,
  intermediate_size: 32768,
  num_hidden_layers: 64,
  num_attention_heads: 128,
  num_key_value_heads: 128,
};

describe('memory check', () => {
  it('accepts every shipped preset, on a 16 GiB machine too, and the -small presets on a GPU backend', () => {
    const presets = listPresets();
    expect(presets.length).toBeGreaterThan(5);
    for (const p of presets) {
      const checked = checkRunConfig(p.config);
      expect(checked.success ? '' : JSON.stringify(checked.issues), p.name).toBe('');
      const config = parseRunConfig(p.config);
      expect(memoryProblem(config, 16 * GiB), p.name).toBeUndefined();
      for (const backend of ['tensorflow', 'webgpu']) {
        expect(memoryProblem({ ...config, backend }, 16 * GiB), `${p.name} on ${backend}`).toBeUndefined();
      }
    }
  });

  it('refuses a 68.7-billion-parameter model, naming the model fields and the figure', () => {
    const checked = checkRunConfig({ algorithm: 'seqgrpo', model: HUGE });
    expect(checked.success).toBe(false);
    if (checked.success) return;
    expect(checked.issues).toHaveLength(1);
    const [issue] = checked.issues;
    expect(issue!.path).toBe('model');
    expect(issue!.message).toMatch(
      /model\.hidden_size.*model\.num_hidden_layers: 68\.7e9 parameters .*≈ 1\.\d TB.*weights, Adam state and gradients; this machine has/,
    );
    expect(issue!.message).toContain('budget.ignoreMemoryCheck');
    expect(issue!.message).not.toContain('\n');
  });

  it('refuses MARS group size 1024 on the medium model (≈ 200 GB of key/value cache), naming the group fields', () => {
    const config = { algorithm: 'mars', model: { size: 'medium' }, task: { groupSize: 1024 } };
    const parsed = parseRunConfig({ ...config, budget: { ignoreMemoryCheck: true } });
    expect(estimateRunMemory(parsed)!.rollout).toBeGreaterThan(150e9);
    const problem = memoryProblem({ ...parsed, budget: { steps: parsed.budget.steps } }, 128 * GiB);
    expect(problem).toMatchObject({
      path: 'task.groupSize',
      message: expect.stringMatching(
        /^task\.questionsPerStep × task\.groupSize .*≈ 2\d\d GB.*key\/value cache; this machine has 128 GiB/,
      ),
    });
    const checked = checkRunConfig(config);
    expect(checked.success).toBe(false);
    if (!checked.success) expect(checked.issues.map((i) => i.path)).toEqual(['task.groupSize']);
    // the default group size on the same model fits
    expect(
      memoryProblem(parseRunConfig({ algorithm: 'mars', model: { size: 'medium' }, pretrain: { batch: 8 } }), 16 * GiB),
    ).toBeUndefined();
  });

  it('the wasm backend is held to its 4 GiB heap', () => {
    const config = parseRunConfig({
      algorithm: 'seqgrpo',
      model: { size: 'medium' },
      task: { groupSize: 64, promptsPerStep: 64 },
    });
    expect(memoryProblem(config, 64 * GiB)).toBeUndefined();
    expect(
      memoryProblem(
        {
          ...config,
          backend: 'wasm',
          model: {
            ...config.model,
            num_hidden_layers: 32,
            hidden_size: 2048,
            intermediate_size: 8192,
            num_attention_heads: 16,
          },
        },
        64 * GiB,
      )?.message,
    ).toMatch(/the wasm backend has a 4 GiB heap/);
  });

  it('budget.ignoreMemoryCheck overrides', () => {
    expect(checkRunConfig({ algorithm: 'seqgrpo', model: HUGE, budget: { ignoreMemoryCheck: true } }).success).toBe(
      true,
    );
  });
});
