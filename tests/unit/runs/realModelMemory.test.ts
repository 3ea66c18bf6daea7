/**
 * A real-model run's memory check (chatgrpo; engine/training/memoryBudget.ts realModelMemoryProblem): a run that fits
 * is let through, one that does not is refused before the weights are loaded, naming the fields to lower and the
 * figure; LoRA needs less than training every weight; the check can be switched off. On the real SmolLM2 file (when
 * fetched) the refusal comes from the model's header alone, through chatgrpo's own start; martipy's plan counts every
 * node of a step's trees, each with its refinement-sized prompt.
 */
import os from 'node:os';
import { describe, expect, it } from 'vitest';
import type { LlamaConfig } from '../../../engine/model/config';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { chatgrpo } from '../../../engine/chatgrpo/trainer';
import type { MartipyConfig } from '../../../engine/marti/python/trainConfig';
import { martipyMemoryPlan } from '../../../engine/marti/python/trainEval';
import { modelMemory, realModelMemoryProblem } from '../../../engine/training/memoryBudget';
import type { ChatGrpoConfig } from '../../../engine/chatgrpo/configSchema';
import { realModelOrSkipReason, SMOLLM2_SHAPE } from '../../fixtures/gguf/ggufKit';

const GiB = 2 ** 30;
/** SmolLM2-135M's architecture (its GGUF header / config.json). */
const SMOLLM2 = {
  ...SMOLLM2_SHAPE,
  rms_norm_eps: 1e-5,
  rope_theta: 100000,
  tie_word_embeddings: true,
} as LlamaConfig;

const run = (rows: number, loraRank: number | null, replyTokens = 160) => ({
  rows,
  replyTokens,
  loraRank,
  rowsField: 'task.groupSize × task.promptsPerStep',
});

describe("a real-model run's memory check", () => {
  it('lets the preset shape through on 16 GiB and refuses 256 replies trained fully, naming fields and figure', () => {
    // chatgrpo-addition: 16 replies of at most 16 tokens, LoRA rank 8
    expect(realModelMemoryProblem(SMOLLM2, run(16, 8, 16), 16 * GiB)).toBeUndefined();
    const msg = realModelMemoryProblem(SMOLLM2, run(256, null), 16 * GiB)!;
    expect(msg).toMatch(/^task\.groupSize × task\.promptsPerStep: 256 replies of up to 256 tokens/);
    expect(msg).toMatch(/every weight trained\) need ≈ \d+(\.\d)? GB a step; this machine has 16\.0 GiB/);
    // LoRA saves optimizer state, not activations: at this shape it does not fit either, so it is not offered
    expect(msg).toMatch(/lower the reply budget or the rows, or use a smaller model/);
    expect(msg).toMatch(/budget\.ignoreMemoryCheck/);
  });

  it('names the one change that makes it fit: the most rows that fit, or LoRA', () => {
    const limit = 16 * GiB;
    const msg = realModelMemoryProblem(SMOLLM2, { ...run(256, null), fewerRows: (r) => `rows ${r}` }, limit)!;
    const rows = Number(/it fits with rows (\d+)/.exec(msg)![1]);
    expect(rows).toBeGreaterThan(0);
    expect(realModelMemoryProblem(SMOLLM2, run(rows, null), limit)).toBeUndefined();
    expect(realModelMemoryProblem(SMOLLM2, run(rows + 1, null), limit)).toBeDefined();
    // LoRA is offered only when it fits at the same rows
    const lora = realModelMemoryProblem(SMOLLM2, run(256, 8), limit) === undefined;
    expect(msg.includes('or with LoRA adapters (model.lora, rank 8)')).toBe(lora);
  });

  it('needs less with LoRA than with every weight, and the figure is the one model info shows', () => {
    const full = modelMemory(SMOLLM2, { trainRows: 64, sampleRows: 16, seq: 256, loraRank: 8 });
    expect(full.lora).toBeLessThan(full.full);
    // a limit between the two: LoRA fits, full training does not
    const between = (full.lora + full.full) / 2;
    expect(realModelMemoryProblem(SMOLLM2, run(64, 8), between)).toBeUndefined();
    expect(realModelMemoryProblem(SMOLLM2, run(64, null), between)).toMatch(
      /; it fits with LoRA adapters \(model\.lora, rank 8\); or set budget\.ignoreMemoryCheck/,
    );
  });

  it('is off under budget.ignoreMemoryCheck', () => {
    expect(realModelMemoryProblem(SMOLLM2, { ...run(4096, null), ignoreMemoryCheck: true }, GiB)).toBeUndefined();
  });

  const { path: MODEL } = realModelOrSkipReason();
  it.skipIf(!MODEL)('refuses a chatgrpo run that does not fit here before loading SmolLM2', async (ctx) => {
    const task = { groupSize: 256, promptsPerStep: 8, maxNewTokens: 4096 };
    const figure = realModelMemoryProblem(SMOLLM2, run(task.groupSize * task.promptsPerStep, null, task.maxNewTokens));
    if (!figure) return ctx.skip(`this machine (${os.totalmem()} bytes) would hold even this run`);
    const refusal =
      /^task\.groupSize × task\.promptsPerStep: 2048 replies of up to 4192 tokens .* need ≈ [\d.]+ GB a step; this machine has/;
    const cfg = parseRunConfig({ algorithm: 'chatgrpo', model: { path: MODEL, lora: null }, task }) as ChatGrpoConfig;
    const t0 = performance.now();
    await expect(chatgrpo.createTrainer(cfg, undefined)).rejects.toThrow(refusal);
    expect(performance.now() - t0, 'refused from the header, not after loading 135M weights').toBeLessThan(5_000);
  });

  it.skipIf(!MODEL)(
    'refuses a martipy run whose trees do not fit, naming its rows and the fewer problems that fit',
    async () => {
      const cfg = parseRunConfig({
        algorithm: 'martipy',
        model: { path: MODEL },
        search: { problemsPerStep: 64, nodesPerTree: 64 },
        task: { maxNewTokens: 4096, maxTrainTokens: 65_536 },
      }) as MartipyConfig;
      const plan = (await martipyMemoryPlan(cfg, 16 * GiB))!;
      // every node trains: 4096 rows, each its prompt bound (512 + the parent's reply) and its reply
      expect(plan.problem).toMatch(
        /^search\.problemsPerStep × search\.nodesPerTree: 4096 replies of up to 8704 tokens .*LoRA rank 8\) need ≈ [\d.]+ [GT]B a step; this machine has 16\.0 GiB/,
      );
      const fewer = /it fits with search\.problemsPerStep (\d+) \(at search\.nodesPerTree 64\)/.exec(plan.problem!);
      if (fewer) {
        const smaller = parseRunConfig({ ...cfg, search: { ...cfg.search, problemsPerStep: Number(fewer[1]) } });
        expect((await martipyMemoryPlan(smaller as MartipyConfig, 16 * GiB))!.problem).toBeUndefined();
      }
      // the pilot's shape fits
      const pilot = parseRunConfig({ algorithm: 'martipy', model: { path: MODEL } }) as MartipyConfig;
      expect((await martipyMemoryPlan(pilot, 16 * GiB))!.problem).toBeUndefined();
    },
  );
});
