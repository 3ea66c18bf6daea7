/**
 * The base model's format primer (engine/mars/pretrainData.ts) copies at random from what the writer sees: queries
 * are content words of the question, answers are values from the inserted information. It must not encode the task
 * policy: queries name the question's entity only as often as a random pick of its content words does.
 */
import { describe, expect, it } from 'vitest';
import type { MarsConfig } from '../../../engine/mars/configSchema';
import { pretrainExamples } from '../../../engine/mars/pretrainData';
import { SearchIndex, SEARCH_STOP_WORDS } from '../../../engine/mars/search';
import { marsFormat } from '../../../engine/mars/questionSets';
import { generateWorld } from '../../../engine/mars/world';
import { Rng } from '../../../engine/random/prng';
import { resolvePresetConfig } from '../../../engine/runs/presets/presets';

// mars-tiny's worlds, budgets and one-hop families.
const cfg = resolvePresetConfig('mars-tiny', []) as MarsConfig;
const world = generateWorld(4, cfg.task.world);
const env = { world, index: new SearchIndex(world.pages) };
const format = marsFormat();
const examples = (seed: number, n: number) => pretrainExamples([env], cfg.task, cfg.mars, format, new Rng(seed), n);

/** The word spans between each `open` tag and the next `close` tag. */
function spans(words: readonly string[], open: string, close: string): string[][] {
  const out: string[][] = [];
  for (let i = words.indexOf(open); i >= 0; i = words.indexOf(open, i + 1)) {
    out.push(words.slice(i + 1, words.indexOf(close, i)));
  }
  return out;
}

describe('MARS pretraining primer', () => {
  it('is deterministic per seed', () => {
    expect(examples(3, 40)).toEqual(examples(3, 40));
    expect(examples(3, 40)).not.toEqual(examples(4, 40));
  });

  it('searches with content words of its question, names the entity at random, and answers from what it was shown', () => {
    const questions = world.questions.filter((q) => cfg.task.families.includes(q.family));
    const names = new Set(world.entities.map((e) => e.name));
    let queries = 0;
    let naming = 0;
    let answers = 0;
    for (const ex of examples(7, 600)) {
      const words = ex.tokens.map((id) => format.decode([id]));
      if (words[1] !== '<sys2>') continue;
      const asked = words.slice(2, words.indexOf('<sep>')).join(' ');
      const question = questions.find((q) => q.text === asked);
      expect(question, asked).toBeDefined();
      const content = question!.text.split(' ').filter((w) => w !== '?' && w !== ',' && !SEARCH_STOP_WORDS.has(w));
      const entity = content.find((w) => names.has(w));
      for (const q of spans(words, '<search>', '</search>')) {
        queries++;
        for (const w of q) expect(content, `query "${q.join(' ')}" for "${asked}"`).toContain(w);
        if (entity !== undefined && q.includes(entity)) naming++;
      }
      const info = spans(words, '<info>', '</info>').flat();
      const [answer] = spans(words, '<answer>', '</answer>');
      if (answer?.length === 1 && names.has(answer[0]!) && info.some((w) => names.has(w))) {
        answers++;
        expect(info, `answer "${answer[0]}"`).toContain(answer[0]);
      }
    }
    expect(queries).toBeGreaterThan(200);
    expect(answers).toBeGreaterThan(50);
    // A random pick of one or two of the question's two to four content words names the entity often, never always.
    expect(naming / queries).toBeGreaterThan(0.3);
    expect(naming / queries).toBeLessThan(0.85);
  });
});
