/** The marti config member: MARTI's own RL defaults, and the team checks that name the field. */
import { describe, expect, it } from 'vitest';
import { checkRunConfig, parseRunConfig } from '../../../engine/runs/config/configSchema';
import { martiFormat } from '../../../engine/marti/format';
import { rootPrompt } from '../../../engine/marti/prompts';
import { generateTasks } from '../../../engine/marti/tasks/generator';
import { heldoutTasks } from '../../../engine/marti/problems';

const issues = (input: object) => {
  const r = checkRunConfig({ algorithm: 'marti', ...input });
  return r.success ? [] : r.issues.map((i) => `${i.path}: ${i.message}`);
};

describe('marti config', () => {
  it('defaults follow docs/algorithms.md §4: gspo, k3 KL 1e-3, eps 1e-9, N 8, 16 problems, batch 8, beta, thompson, perTest, T+ 16', () => {
    const c = parseRunConfig({ algorithm: 'marti' });
    if (c.algorithm !== 'marti') throw new Error('expected marti');
    expect(c.rl).toMatchObject({ loss: 'gspo', klCoef: 1e-3, zscoreEps: 1e-9, clipLow: 0.2, clipHigh: 0.2 });
    expect(c.marti).toMatchObject({
      nodesPerTree: 8,
      problemsPerStep: 16,
      trainBatch: 8,
      posterior: 'beta',
      agentSelect: 'thompson',
      agentUpdate: 'whenFull',
      evalNodes: 8,
    });
    expect(c.marti.tplus).toMatchObject({ nodes: 16, feedback: 'rich', depthWeighting: true, alpha: 0.5, beta: 0.25 });
    expect(c.task.feedback).toBe('perTest');
    // the shipped base's pretraining corpus: a quarter refine examples, all parents single edits of the answer
    expect(c.marti).toMatchObject({ pretrainRefineShare: 0.25, pretrainNoisyParents: 0 });
    // a partial rl section keeps MARTI's defaults
    const p = parseRunConfig({ algorithm: 'marti', rl: { lr: 1e-3 } });
    expect(p.rl).toMatchObject({ loss: 'gspo', klCoef: 1e-3, lr: 1e-3 });
  });

  it('rejects a tree of one node, a heterogeneous team of one, repeated ids, unknown role words and per-agent models outside heterogeneous', () => {
    expect(issues({ marti: { nodesPerTree: 1 } }).join('\n')).toMatch(/marti\.nodesPerTree: .*no baseline/);
    expect(issues({ marti: { configuration: 'heterogeneous', agents: [{ id: 'a' }] } }).join('\n')).toMatch(
      /marti\.agents: heterogeneous needs at least two agents/,
    );
    expect(issues({ marti: { agents: [{ id: 'a' }, { id: 'a' }] } }).join('\n')).toMatch(/agent ids must be distinct/);
    expect(issues({ marti: { agents: [{ id: 'a', rolePrompt: 'you are a wizard' }] } }).join('\n')).toMatch(
      /marti\.agents\.0\.rolePrompt: unknown words "wizard"/,
    );
    expect(
      issues({ marti: { configuration: 'homogeneous', agents: [{ id: 'a', size: 'micro' }] } }).join('\n'),
    ).toMatch(/marti\.agents\.0: size and from are per-agent only/);
    expect(
      issues({ marti: { configuration: 'heterogeneous', agents: [{ id: 'a', size: 'micro' }, { id: 'b' }] } }),
    ).toEqual([]);
  });

  it("a held-out set larger than the spec's pool of targets is an error that names eval.items", () => {
    // (the config check refuses this at once, configSchema's targetPoolBound; the trainer's own guard is tested past it)
    const c = parseRunConfig({
      algorithm: 'marti',
      task: { trainTasks: 30, minOps: 1, maxOps: 1 },
      eval: { items: 30 },
    });
    if (c.algorithm !== 'marti') throw new Error('expected marti');
    c.eval.items = 300;
    expect(() => heldoutTasks(c)).toThrow(
      /^eval\.items: only \d+ distinct heldout targets of 1–1 operations exist \(300 asked for.*\(task\.maxOps\)$/,
    );
  });

  it('every default role prompt and a task prompt encode without unknown words', () => {
    const fmt = martiFormat();
    const unk = fmt.tokenizer.idOf('<unk>');
    const c = parseRunConfig({ algorithm: 'marti' });
    if (c.algorithm !== 'marti') throw new Error('expected marti');
    const task = generateTasks('heldout', 1, 1)[0]!;
    for (const a of c.marti.agents) {
      const ids = fmt.prompt(rootPrompt(task, { rolePrompt: a.rolePrompt }));
      expect(ids.includes(unk)).toBe(false);
      expect(fmt.decodeCompletion(fmt.completion(task.target))).toBe(task.target);
    }
  });
});
