import { distance } from 'fastest-levenshtein';
import { describe, expect, it } from 'vitest';
import { WordTokenizer } from '../../../engine/model/tokenizers/wordTokenizer';
import { run } from '../../../engine/marti/lang/interpreter';
import { parse } from '../../../engine/marti/lang/parser';
import { textTokens } from '../../../engine/marti/lang/text';
import { valueEquals } from '../../../engine/marti/lang/values';
import { extractProgram, problemText, refinePrompt, rootPrompt } from '../../../engine/marti/prompts';
import { pretrainCorpus } from '../../../engine/marti/tasks/corpus';
import {
  DEFAULT_TASK_SPEC,
  TaskPoolExhaustedError,
  generateTask,
  generateTasks,
  targetSide,
  type MartiTask,
} from '../../../engine/marti/tasks/generator';
import { opById } from '../../../engine/marti/tasks/ops';
import { measureRepair } from '../../study/repairProbe';
import { evaluateProgram, feedbackText } from '../../../engine/marti/tasks/scoring';
import { martiVocabulary } from '../../../engine/marti/tasks/vocabulary';

const train = generateTasks('train', 11, 150);
const heldout = generateTasks('heldout', 11, 150);
const vocab = new Set(martiVocabulary());

function inVocabulary(text: string): string[] {
  return textTokens(text).filter((w) => !vocab.has(w));
}

describe('generateTasks', () => {
  it('is deterministic per seed, prefix-stable, and differs across splits and base seeds', () => {
    expect(JSON.stringify(generateTasks('train', 11, 150))).toBe(JSON.stringify(train));
    expect(generateTasks('train', 11, 20)).toEqual(train.slice(0, 20));
    const trainTargets = new Set(train.map((t) => t.target));
    expect(heldout.filter((t) => trainTargets.has(t.target))).toEqual([]);
    const other = generateTasks('train', 12, 150).map((t) => t.target);
    expect(other.filter((t) => trainTargets.has(t)).length).toBeLessThan(30);
    expect(new Set(train.map((t) => t.seed % 2))).toEqual(new Set([0]));
    expect(new Set(heldout.map((t) => t.seed % 2))).toEqual(new Set([1]));
  });

  it('ends with an error naming how many distinct targets exist when the spec has fewer than asked, not a loop for ever', () => {
    const oneOp = { ...DEFAULT_TASK_SPEC, minOps: 1, maxOps: 1 };
    let err: unknown = null;
    try {
      generateTasks('heldout', 11, 500, oneOp);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TaskPoolExhaustedError);
    const found = (err as TaskPoolExhaustedError).found;
    expect(found).toBeGreaterThan(10);
    expect(found).toBeLessThan(500);
    expect((err as Error).message).toMatch(
      new RegExp(`only ${found} distinct heldout targets of 1–1 operations exist \\(500 asked for`),
    );
    // Exactly that many is still a valid request.
    expect(new Set(generateTasks('heldout', 11, found, oneOp).map((t) => t.target)).size).toBe(found);
  });

  it("puts every target on its split's side, so held-out targets never occur in training at any size", () => {
    for (const t of train) expect(targetSide(t.target)).toBe(0);
    for (const t of heldout) expect(targetSide(t.target)).toBe(1);
    expect(new Set(heldout.map((t) => t.target)).size).toBe(heldout.length);
  });

  it('gives targets of 2–5 ops that pass all their own public and private tests', () => {
    for (const t of [...train, ...heldout]) {
      expect(t.ops.length).toBeGreaterThanOrEqual(2);
      expect(t.ops.length).toBeLessThanOrEqual(5);
      expect(t.publicTests).toHaveLength(3);
      expect(t.privateTests).toHaveLength(10);
      const ev = evaluateProgram(t.target, t);
      expect(ev.publicScore, t.target).toBe(1);
      expect(ev.privateScore, t.target).toBe(1);
      expect(ev.program).toBe(t.target);
    }
    const lengths = new Set(train.map((t) => t.ops.length));
    expect(lengths).toEqual(new Set([2, 3, 4, 5]));
  });

  it('rejects degenerate targets: no constant output, and no op can be dropped without changing some output', () => {
    for (const t of train) {
      const tests = [...t.publicTests, ...t.privateTests];
      expect(new Set(tests.map((c) => JSON.stringify(c.expected))).size).toBeGreaterThan(1);
      expect(new Set(t.publicTests.map((c) => JSON.stringify(c.expected))).size).toBeGreaterThan(1);
      const chain = t.ops.map(opById);
      for (let drop = 0; drop < chain.length; drop++) {
        const shorter = chain
          .filter((_, i) => i !== drop)
          .map((o) => o.spec.code(o.param))
          .join(' | ');
        const same = tests.every((c) => {
          const r = run(shorter, c.input);
          return r.ok && valueEquals(r.value, c.expected);
        });
        expect(same, `${t.target} without op ${drop}`).toBe(false);
      }
    }
  });

  it('writes statements, targets, prompts and feedback only in the declared vocabulary', () => {
    for (const t of train.slice(0, 60)) {
      expect(inVocabulary(t.statement)).toEqual([]);
      expect(inVocabulary(t.target)).toEqual([]);
      expect(inVocabulary(rootPrompt(t))).toEqual([]);
      const ev = evaluateProgram('reverse | apply (x + "cat")', t);
      for (const mode of ['perTest', 'binary', 'rich'] as const) {
        expect(inVocabulary(refinePrompt(t, ev.program, feedbackText(ev, mode)))).toEqual([]);
      }
    }
    expect(train.some((t) => t.statement.includes('some number') || t.statement.includes('few'))).toBe(true);
    expect(train.some((t) => t.inputKind === 'text')).toBe(true);
  });

  it("writes text in the word tokenizer's normal form, so decode(encode(text)) is the text", () => {
    const words = martiVocabulary();
    const specials = { pad: '<pad>', bos: '<bos>', eos: '<eos>', unk: '<unk>' };
    const tok = new WordTokenizer({
      type: 'word',
      version: 1,
      specials,
      tokens: [...Object.values(specials), ...words],
    });
    for (const t of train.slice(0, 40)) {
      const ev = evaluateProgram(t.target.replace('|', '| reverse |'), t);
      for (const text of [rootPrompt(t), refinePrompt(t, ev.program, feedbackText(ev, 'rich')), t.target]) {
        const ids = tok.encode(text);
        expect(ids).not.toContain(tok.specials.unk);
        expect(tok.decode(ids)).toBe(text);
      }
    }
    expect(words.length).toBeLessThan(200);
  });
});

describe('prompts', () => {
  const task: MartiTask = generateTask(4, 'train');

  it('lay out the root and refine prompts per §3.2: the refine prompt always holds the problem and the parent', () => {
    const root = rootPrompt(task);
    expect(root).toBe(`${problemText(task)} program:`);
    const fb = feedbackText(evaluateProgram('sum', task));
    const refine = refinePrompt(task, 'sum', fb, { rolePrompt: 'you fix' });
    expect(refine).toBe(`you fix ${problemText(task)} previous program: sum feedback: ${fb} program:`);
    expect(refinePrompt(task, null, 'no valid program.')).toContain(
      'previous program: none feedback: no valid program.',
    );
    for (const t of task.privateTests) expect(problemText(task).includes(JSON.stringify(t.input))).toBe(false);
  });

  it('extract the program span of a completion', () => {
    expect(extractProgram('  sort | sum \nmore')).toBe('sort | sum');
    expect(extractProgram('   ')).toBeNull();
  });
});

describe('pretrainCorpus', () => {
  const corpus = pretrainCorpus(5, 200);

  it('is deterministic, holds well-formed programs on the training side, and both prompt layouts', () => {
    expect(pretrainCorpus(5, 50)).toEqual(corpus.slice(0, 50));
    const heldTargets = new Set(generateTasks('heldout', 5, 100).map((t) => t.target));
    for (const ex of corpus) {
      const p = parse(ex.completion);
      expect(p.ok, ex.completion).toBe(true);
      expect(targetSide(ex.completion)).toBe(0);
      expect(heldTargets.has(ex.completion)).toBe(false);
      expect(inVocabulary(ex.prompt)).toEqual([]);
      expect(ex.prompt.endsWith('program:')).toBe(true);
    }
    const refine = corpus.filter((e) => e.kind === 'refine');
    expect(refine.length).toBeGreaterThan(20);
    expect(refine.length).toBeLessThan(100);
    for (const ex of refine) expect(ex.prompt).toContain('previous program:');
  });

  it('refine parents are one edit from the answer, or with noisyParents noisy reads of the statement that are often several edits away', () => {
    // Edit distance counted in pipeline stages ("filter (x > 3) | sum" has two).
    const stageDistance = (a: string, b: string) => {
      const ids = new Map<string, string>();
      const enc = (p: string) =>
        p
          .split(' | ')
          .map((x) => ids.get(x) ?? (ids.set(x, String.fromCharCode(65 + ids.size)), ids.get(x)!))
          .join('');
      return distance(enc(a), enc(b));
    };
    const parentDistances = (noisyParents: number) =>
      pretrainCorpus(5, 800, { noisyParents })
        .filter((e) => e.kind === 'refine')
        .map((e) => stageDistance(/previous program: (.*) feedback:/.exec(e.prompt)![1]!, e.completion));
    const single = parentDistances(0);
    expect(Math.max(...single)).toBeLessThanOrEqual(2); // a swap of two stages is the farthest single edit
    expect(pretrainCorpus(5, 200, { noisyParents: 0 })).toEqual(corpus);
    const noisy = parentDistances(1);
    expect(noisy.length).toBeGreaterThan(100);
    expect(noisy.filter((d) => d >= 3).length / noisy.length).toBeGreaterThan(0.2);
    expect(noisy.every((d) => d >= 1)).toBe(true); // a parent always fails, so it is never the answer
  });
});

describe('refinement from feedback (repair probe)', () => {
  it('beats programs that ignore the statement, and blind edits beat random programs at equal budget', () => {
    const r = measureRepair({ tasks: 200, p: 0.6, budget: 8, seed: 3 });
    const f = Object.fromEntries(r.figures.map((x) => [x.strategy, x]));
    expect(r.parents).toBeGreaterThan(150);
    expect(f.refine!.publicPass).toBeGreaterThan(f.randomProgram!.publicPass + 0.1);
    expect(f.refine!.privatePass).toBeGreaterThan(f.randomProgram!.privatePass + 0.1);
    expect(f.randomEdit!.publicPass).toBeGreaterThan(f.randomProgram!.publicPass);
    // Near misses (feedback "correct for k of M", k ≥ 1) are a proper subset of the failing parents.
    expect(r.nearMisses.parents).toBeGreaterThan(0);
    expect(r.nearMisses.parents).toBeLessThan(r.parents);
    const near = Object.fromEntries(r.nearMisses.figures.map((x) => [x.strategy, x]));
    expect(near.refine!.publicPass).toBeGreaterThan(near.randomProgram!.publicPass);
  });
});
