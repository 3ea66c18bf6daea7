/**
 * Generated Python training problems (engine/marti/python/generatedTasks.ts): 300 of them, each canonical solution run
 * in the sandbox against its own tests (public and private), all pass: the Python translation of every target means
 * what the toy interpreter computed for the tests. The file round-trips through the task-file reader; a seed gives the
 * same problems; and the normalised-text hash finds a HumanEval problem planted in a training set (whitespace and case
 * changed) while the generated set shares none with HumanEval. With its tests as asserts (what martipy trains on),
 * a problem shows the same stub, each canonical solution passes every assert, and a program right on some inputs scores
 * their share under `fraction`.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { detectIsolation, findExecutable } from '../../../../engine/code/sandbox/isolation';
import { DEFAULT_LIMITS } from '../../../../engine/code/sandbox/limits';
import { checkTasks, loadTaskFile } from '../../../../engine/code/tasks/taskFile';
import { artefactPath } from '../../../../engine/fetch/cache';
import { knownArtefact } from '../../../../engine/fetch/catalogue';
import {
  generatePythonTasks,
  humanEvalLine,
  overlapping,
  pyValue,
} from '../../../../engine/marti/python/generatedTasks';
import { scorePrograms } from '../../../../engine/marti/python/pythonNodes';
import { problemText } from '../../../../engine/marti/python/pythonPrompts';
import { generateTasks } from '../../../../engine/marti/tasks/generator';

describe('generated Python training problems', () => {
  it('every canonical solution passes its own tests in the sandbox (300 problems)', async (ctx) => {
    if (!findExecutable('bwrap')) {
      if (process.env.MARS_LAB_EXPECT_PEERS === '1') throw new Error('MARS_LAB_EXPECT_PEERS=1 but bwrap is absent');
      return ctx.skip('bubblewrap is absent (apt-get install bubblewrap)');
    }
    const tasks = generatePythonTasks(300, 11);
    const broken = await checkTasks(tasks, await detectIsolation(), { ...DEFAULT_LIMITS, timeoutS: 5 }, 2);
    expect(broken.map((b) => `${b.task.id}: ${b.result.reason}\n${b.task.canonical}`)).toEqual([]);
  }, 300_000);

  it('with its tests as asserts: the same stub, a verdict per test, and a share of them under fraction', async (ctx) => {
    if (!findExecutable('bwrap')) {
      if (process.env.MARS_LAB_EXPECT_PEERS === '1') throw new Error('MARS_LAB_EXPECT_PEERS=1 but bwrap is absent');
      return ctx.skip('bubblewrap is absent (apt-get install bubblewrap)');
    }
    const one = generatePythonTasks(40, 11, { minOps: 1, maxOps: 2 });
    const each = generatePythonTasks(40, 11, { minOps: 1, maxOps: 2 }, 'train', 'asserts');
    expect(each.map((t) => [t.id, t.prompt, t.entryPoint])).toEqual(one.map((t) => [t.id, t.prompt, t.entryPoint]));
    expect(each[0]!.tests).toHaveLength(13); // 3 public + 10 private, as the check asserts
    expect(problemText(each[0]!)).toBe(problemText(one[0]!));
    const iso = await detectIsolation();
    const limits = { ...DEFAULT_LIMITS, timeoutS: 5 };
    expect((await checkTasks(each, iso, limits, 2)).map((b) => `${b.task.id}: ${b.result.reason}`)).toEqual([]);
    // a program right on some inputs only (the identity) scores their share; the one-check form scores it 0
    const identity = 'def solve(x):\n    return x\n';
    const task = each.find((t) => t.tests.some((a) => /^assert solve\((.*)\) == \1$/.test(a)))!;
    const right = task.tests.filter((a) => /^assert solve\((.*)\) == \1$/.test(a)).length;
    const [fraction] = await scorePrograms([{ task, code: identity }], iso, limits, 'fraction');
    expect(fraction!.passed).toBe(right);
    expect(fraction!.score).toBeCloseTo(right / 13, 12);
    const [whole] = await scorePrograms([{ task: one[each.indexOf(task)]!, code: identity }], iso, limits, 'fraction');
    expect(right).toBeLessThan(13);
    expect(whole!.score).toBe(0);
  }, 120_000);

  it('shows the statement and the public tests, asserts the private ones too, and round-trips as a task file', () => {
    const [raw] = generateTasks('train', 11, 1);
    const [t] = generatePythonTasks(1, 11);
    expect(t!.prompt).toMatch(/^def solve\(x: (list\[int\]|str)\) -> \S+:\n {4}"""[A-Z]/);
    for (const c of raw!.publicTests) {
      expect(t!.prompt).toContain(`>>> solve(${pyValue(c.input)})\n    ${pyValue(c.expected)}\n`);
    }
    for (const c of raw!.privateTests) {
      expect(t!.test).toContain(`assert candidate(${pyValue(c.input)}) == ${pyValue(c.expected)}`);
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-gen-'));
    try {
      const file = path.join(dir, 'train.jsonl');
      const tasks = generatePythonTasks(20, 11);
      fs.writeFileSync(file, tasks.map(humanEvalLine).join('\n') + '\n');
      const back = loadTaskFile(file);
      expect(back.map((b) => [b.id, b.prompt, b.canonical, b.test, b.entryPoint])).toEqual(
        tasks.map((b) => [b.id, b.prompt, b.canonical, b.test, b.entryPoint]),
      );
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expect(generatePythonTasks(5, 11)).toEqual(generatePythonTasks(5, 11));
    expect(generatePythonTasks(5, 12).map((x) => x.prompt)).not.toEqual(
      generatePythonTasks(5, 11).map((x) => x.prompt),
    );
  });

  it('finds an evaluated problem planted in the training set, and none of HumanEval among the generated ones', (ctx) => {
    const file = artefactPath(knownArtefact('humaneval'));
    if (!fs.existsSync(file)) {
      if (process.env.MARS_LAB_EXPECT_MODELS === '1') throw new Error(`MARS_LAB_EXPECT_MODELS=1 but ${file} is absent`);
      return ctx.skip('HumanEval is not fetched');
    }
    const humaneval = loadTaskFile(file);
    const train = generatePythonTasks(500, 11);
    expect(overlapping(train, humaneval)).toEqual([]);
    const he = humaneval[23]!;
    const planted = { ...he, id: 'train-planted', prompt: he.prompt.replace(/ {4}/g, '\t').toUpperCase() };
    expect(overlapping([...train, planted], humaneval)).toEqual([{ train: 'train-planted', evaluated: he.id }]);
  });
});
