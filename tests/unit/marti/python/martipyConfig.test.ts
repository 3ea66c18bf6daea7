/**
 * The `martipy` run config (engine/marti/python/trainConfig.ts) and its team (trainSets.ts): the parameter sets each
 * configuration trains, and the refusals that name their field — a heterogeneous team without LoRA (its agents train
 * adapters of their own on one frozen base), an own base model outside a heterogeneous team, a team too small for its
 * configuration, repeated agent ids, and an operation range upside down.
 */
import { describe, expect, it } from 'vitest';
import { martipyConfigSchema } from '../../../../engine/marti/python/trainConfig';
import { paramIdsOf, teamOf } from '../../../../engine/marti/python/trainSets';

const parse = (c: object) => martipyConfigSchema.safeParse({ algorithm: 'martipy', ...c });
const issues = (c: object) => {
  const r = parse(c);
  return r.success ? [] : r.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`);
};
const two = [{ id: 'alpha' }, { id: 'beta' }];

describe('martipy config', () => {
  it('defaults to one agent with LoRA on SmolLM2, 1–2 operation problems and HumanEval for evaluation', () => {
    const c = martipyConfigSchema.parse({ algorithm: 'martipy' });
    expect(c.model).toMatchObject({ path: 'smollm2-135m-instruct', lora: { rank: 8, alpha: 16 } });
    expect(c.task).toMatchObject({ minOps: 1, maxOps: 2, evalTasks: 'humaneval', unsafeNoSandbox: false });
    expect(paramIdsOf(c)).toEqual(['policy']);
  });

  it('gives single one set, homogeneous one shared set, heterogeneous one set per agent', () => {
    const single = martipyConfigSchema.parse({ algorithm: 'martipy', team: { agents: two } });
    expect(teamOf(single).map((a) => a.id)).toEqual(['alpha']);
    expect(paramIdsOf(single)).toEqual(['policy']);
    const homo = martipyConfigSchema.parse({
      algorithm: 'martipy',
      team: { configuration: 'homogeneous', agents: two },
    });
    expect(teamOf(homo).map((a) => a.paramId)).toEqual(['shared', 'shared']);
    const hetero = martipyConfigSchema.parse({
      algorithm: 'martipy',
      team: { configuration: 'heterogeneous', agents: [{ id: 'alpha' }, { id: 'beta', model: '/models/other.gguf' }] },
    });
    expect(paramIdsOf(hetero)).toEqual(['alpha', 'beta']);
    expect(teamOf(hetero)[1]).toMatchObject({ paramId: 'beta', model: '/models/other.gguf' });
  });

  it('refuses what cannot train, naming the field', () => {
    expect(issues({ team: { configuration: 'heterogeneous', agents: two }, model: { lora: null } })).toEqual([
      'model.lora: heterogeneous agents train LoRA adapters of their own on a frozen base: set model.lora',
    ]);
    expect(
      issues({ team: { configuration: 'homogeneous', agents: [{ id: 'a', model: 'x.gguf' }, { id: 'b' }] } }),
    ).toEqual(['team.agents.0.model: an own base model is for heterogeneous teams (one parameter set per agent)']);
    expect(issues({ team: { configuration: 'heterogeneous', agents: [{ id: 'a' }] } })).toEqual([
      'team.agents: heterogeneous needs at least two agents',
    ]);
    expect(issues({ team: { configuration: 'homogeneous', agents: [{ id: 'a' }, { id: 'a' }] } })).toEqual([
      'team.agents: agent ids must be distinct',
    ]);
    expect(issues({ task: { minOps: 3, maxOps: 2 } })).toEqual(['task.maxOps: must be ≥ task.minOps (3)']);
    expect(issues({ search: { nodesPerTree: 1 } })[0]).toMatch(/^search\.nodesPerTree: a tree of one node/);
  });
});
