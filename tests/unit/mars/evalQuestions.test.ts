/**
 * MARS's held-out set has exactly eval.items questions: mars-tiny said 240 (preset, README, the evaluation's identity)
 * while its 2 held-out worlds hold 164 questions of its families, and 164 were evaluated in silence. Now every MARS
 * preset evaluates what it says, and asking more than the held-out worlds hold is an error naming the fields, raised
 * when the trainer is built rather than at the run's first evaluation.
 */
import { describe, expect, it } from 'vitest';
import type { MarsConfig } from '../../../engine/mars/configSchema';
import { evalQuestions, heldOutQuestionsByWorld } from '../../../engine/mars/questionSets';
import { mars } from '../../../engine/mars/trainer';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import { loadPreset, resolvePresetConfig } from '../../../engine/runs/presets/presets';
import { UserError } from '../../../engine/base/userError';

const MARS_PRESETS = ['mars-tiny', 'mars-ablations', 'mars-small', 'mars-overflow', 'mars-overflow-long'];
/** The presets the MARS study runs (tests/study/marsStudy.ts): tested over worlds, so they need many. */
const STUDY_PRESETS = ['mars-overflow', 'mars-overflow-long'];

/** For each family, how many questions each held-out world gave to the evaluation set, and how many it had. */
function spread(cfg: MarsConfig): Map<string, { chosen: number; had: number }[]> {
  const chosen = new Set(evalQuestions(cfg).map((q) => q.id));
  const worlds = heldOutQuestionsByWorld(cfg);
  return new Map(
    cfg.task.families.map((f) => [
      f,
      worlds.map((qs) => {
        const of = qs.filter((q) => q.family === f);
        return { chosen: of.filter((q) => chosen.has(q.id)).length, had: of.length };
      }),
    ]),
  );
}

describe('the MARS held-out set', () => {
  it('has exactly eval.items questions for every MARS preset and variant', () => {
    for (const name of MARS_PRESETS) {
      const variants = [undefined, ...Object.keys(loadPreset(name).variants ?? {})];
      for (const variant of variants) {
        const cfg = resolvePresetConfig(name, [], undefined, variant) as MarsConfig;
        expect(evalQuestions(cfg).length, `${name}${variant ? ` --variant ${variant}` : ''}`).toBe(cfg.eval.items);
      }
    }
  });

  it('is balanced over the held-out worlds within every family (issue 32, defect 2), for every MARS preset', () => {
    for (const name of MARS_PRESETS) {
      const cfg = resolvePresetConfig(name) as MarsConfig;
      for (const [family, worlds] of spread(cfg)) {
        // a world gives fewer than another only when it has no more of that family
        for (const w of worlds) {
          for (const v of worlds) {
            expect(w.chosen, `${name}, ${family}`).toBeGreaterThanOrEqual(Math.min(w.had, v.chosen - 1));
          }
        }
      }
    }
  });

  it('the study presets evaluate at least 20 held-out worlds, each family from at least 20 of them', () => {
    for (const name of STUDY_PRESETS) {
      const cfg = resolvePresetConfig(name) as MarsConfig;
      expect(cfg.task.evalWorlds, name).toBeGreaterThanOrEqual(20);
      for (const [family, worlds] of spread(cfg)) {
        expect(worlds.filter((w) => w.chosen > 0).length, `${name}, ${family}`).toBeGreaterThanOrEqual(20);
      }
    }
  });

  it('mars-tiny evaluates the questions its description names: all of its 2 held-out worlds, every family', () => {
    const cfg = resolvePresetConfig('mars-tiny') as MarsConfig;
    expect(loadPreset('mars-tiny').description).toContain(`evaluated (greedily) on the ${cfg.eval.items} questions`);
    const qs = evalQuestions(cfg);
    expect(new Set(qs.map((q) => q.id)).size).toBe(qs.length);
    expect(new Set(qs.map((q) => q.family))).toEqual(new Set(cfg.task.families));
    // all of them: one more is more than the worlds hold
    expect(() => evalQuestions({ ...cfg, eval: { ...cfg.eval, items: cfg.eval.items + 1 } })).toThrow(UserError);
  });

  it('fewer held-out questions than eval.items is an error naming eval.items and task.evalWorlds', () => {
    const cfg = resolvePresetConfig('mars-tiny', ['eval.items=240']) as MarsConfig;
    let error: unknown;
    try {
      evalQuestions(cfg);
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(UserError);
    expect((error as Error).message).toMatch(
      /^eval\.items: 240 held-out questions asked, but .*task\.evalWorlds have 164 questions.*at most 164/,
    );
    // more held-out worlds hold enough
    expect(evalQuestions({ ...cfg, task: { ...cfg.task, evalWorlds: 3 } })).toHaveLength(240);
  });

  it('a smaller eval.items takes a prefix that still goes round the families', () => {
    const cfg = resolvePresetConfig('mars-tiny', ['eval.items=6']) as MarsConfig;
    const full = evalQuestions({ ...cfg, eval: { ...cfg.eval, items: 164 } });
    const six = evalQuestions(cfg);
    expect(six.map((q) => q.id)).toEqual(full.slice(0, 6).map((q) => q.id));
    expect(six.map((q) => q.family)).toEqual(['direct', 'paraphrase', 'longTail', 'direct', 'paraphrase', 'longTail']);
  });

  it('a trainer is refused when it is built, before any step, when the held-out worlds hold too few questions', async () => {
    const cfg = parseRunConfig({
      algorithm: 'mars',
      backend: 'wasm',
      model: { size: 'micro' },
      task: { trainWorlds: 1, evalWorlds: 1, families: ['direct'] },
      eval: { items: 10_000 },
    }) as MarsConfig;
    await expect(mars.createTrainer(cfg)).rejects.toThrow(/^eval\.items: 10000 held-out questions asked/);
  });
});
