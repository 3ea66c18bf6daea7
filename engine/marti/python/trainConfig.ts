/**
 * The `martipy` member of the run configuration (issues 30 and 31, item 6): MARTI-MARS² trained on Python with a real
 * pretrained model. Each step the team grows one AB-MCTS tree of programs per generated Python problem (the toy
 * generator's tasks rendered as Python functions, engine/marti/python/generatedTasks.ts), the sandbox scores every node
 * with the problem's tests, all nodes of a tree form one GRPO group, and each parameter set learns from the nodes its
 * agents wrote. Evaluation is greedy pass@1 on held-out problems of a task file (HumanEval by default), which never
 * overlap the training problems (checked by normalised-text hash when the run starts).
 *
 * Parameter sets, as in the toy MARTI (engine/marti/team.ts): `single` one agent, one set; `homogeneous` K agents
 * (role prompts) sharing one set; `heterogeneous` one set per agent: LoRA adapters of its own, on the run's base model or
 * on a base of its own (`agents[].model`), trained apart. The model section is chatgrpo's: a real model and LoRA.
 */
import { z } from 'zod';
import { checkCommon, commonFields, field, seedNumber } from '../../training/configSections';
import { chatModelSchema } from '../../training/realModelSection';

const AGENT_ID = /^[a-z][a-z0-9_-]{0,31}$/;

export const martipyAgentSchema = z.strictObject({
  id: field(
    z.string().regex(AGENT_ID, { error: 'lower-case letters, digits, - and _, starting with a letter (≤ 32)' }),
    'Agent id',
    'Names the agent in metrics, records and (heterogeneous) its adapter folder.',
  ),
  rolePrompt: field(
    z.string().max(2000).default(''),
    'Role prompt',
    "Text put before the agent's every chat (empty: none, as in the released MARTI scripts).",
  ),
  model: field(
    z.string().min(1).max(4096).optional(),
    'Own base model',
    "Heterogeneous only: this agent's own real model (a name `model fetch` knows, a .gguf or an HF folder) under its LoRA adapters; unset: the run's model.",
  ),
});

export const martipyTeamSchema = z
  .strictObject({
    configuration: field(
      z.enum(['single', 'homogeneous', 'heterogeneous']).default('single'),
      'Configuration',
      'single: one agent, one parameter set; homogeneous: the agents share one set; heterogeneous: each agent trains its own LoRA adapters.',
    ),
    agents: field(
      z
        .array(martipyAgentSchema)
        .min(1)
        .max(8)
        .default(() => [{ id: 'policy', rolePrompt: '' }]),
      'Agents',
      'Who writes the nodes: id, role prompt and (heterogeneous) an own base model. single uses the first.',
    ),
  })
  .superRefine((t, ctx) => {
    const ids = t.agents.map((a) => a.id);
    if (new Set(ids).size !== ids.length) {
      ctx.addIssue({ code: 'custom', path: ['agents'], message: 'agent ids must be distinct' });
    }
    if (t.configuration !== 'single' && t.agents.length < 2) {
      ctx.addIssue({ code: 'custom', path: ['agents'], message: `${t.configuration} needs at least two agents` });
    }
    if (t.configuration !== 'heterogeneous') {
      t.agents.forEach((a, i) => {
        if (a.model !== undefined) {
          ctx.addIssue({
            code: 'custom',
            path: ['agents', i, 'model'],
            message: 'an own base model is for heterogeneous teams (one parameter set per agent)',
          });
        }
      });
    }
  });

export const martipySearchSchema = z.strictObject({
  nodesPerTree: field(
    z.int().min(2, { error: 'a tree of one node has no baseline; docs/algorithms.md §2.9' }).max(64).default(4),
    'Nodes per tree',
    'Programs a tree grows per problem: its GRPO group.',
  ),
  problemsPerStep: field(
    z.int().min(1).max(64).default(2),
    'Problems per step',
    'Distinct training problems a step, one tree each.',
  ),
  posterior: field(
    z.enum(['beta', 'gaussian']).default('beta'),
    'Posterior',
    "AB-MCTS-A's node posterior (Thompson sampling over GEN and refinements).",
  ),
  tplus: field(
    z.boolean().default(false),
    'T+',
    "T+: refinements read the tests' errors and output (rich feedback) and the search credits depth; off: the released per-test verdicts.",
  ),
});

export const martipyTaskSchema = z
  .strictObject({
    trainSeed: field(seedNumber().default(1), 'Training-problem seed', 'Seed of the generated training problems.'),
    trainProblems: field(
      z.int().min(1).max(10_000).default(200),
      'Training problems',
      'Size of the generated training pool; each step draws its problems from it.',
    ),
    minOps: field(
      z.int().min(1).max(5).default(1),
      'Fewest operations',
      'A generated problem is a pipeline of this many to task.maxOps list or text operations.',
    ),
    maxOps: field(z.int().min(1).max(5).default(2), 'Most operations', 'See task.minOps.'),
    rewardMode: field(
      z.enum(['allPass', 'fraction']).default('allPass'),
      'Reward',
      "allPass: 1 when every test passes (the released MARTI's reward); fraction: the share of the problem's tests passed (each generated problem's tests run one by one).",
    ),
    maxNewTokens: field(
      z.int().min(8).max(4096).default(256),
      'Reply tokens',
      'Most tokens a reply may have; it ends earlier at the model’s end-of-turn token.',
    ),
    maxTrainTokens: field(
      z.int().min(64).max(65_536).default(512),
      'Longest trained node',
      "A node whose prompt and reply together pass this many tokens is recorded but left out of the update (counted in overlongSkipped): one such row's backward pass must fit the backend's memory (wasm's 4 GiB heap held ~500 tokens of SmolLM2-135M with LoRA; a 700-token refinement aborted it).",
    ),
    evalTasks: field(
      z.string().min(1).max(4096).default('humaneval'),
      'Evaluation tasks',
      'A HumanEval or MBPP task file (jsonl or jsonl.gz), or a data set `mars-lab data fetch` knows (humaneval): eval.items problems from its start.',
    ),
    evalGenerated: field(
      z.int().min(0).max(1000).default(16),
      'Held-out generated problems',
      "Also evaluate on this many generated problems of the generator's held-out split (target programs never trained on; same operations as task.minOps–maxOps); 0: none.",
    ),
    evalSeed: field(seedNumber().default(2), 'Held-out problem seed', 'Seed of the held-out generated problems.'),
    timeoutS: field(
      z.number().gt(0).max(600).default(10),
      'Test time limit',
      "Seconds a program may run against its tests in the sandbox before it scores 0 ('timeout').",
    ),
    python: field(
      z.string().min(1).max(4096).optional(),
      'Python',
      'The interpreter programs run under (default: python3 on PATH).',
    ),
    unsafeNoSandbox: field(
      z.boolean().default(false),
      'Run without a sandbox',
      'Only when bubblewrap is missing: run model-written programs with rlimits alone, able to read your files and use the network.',
    ),
  })
  .superRefine((t, ctx) => {
    if (t.minOps > t.maxOps) {
      ctx.addIssue({ code: 'custom', path: ['maxOps'], message: `must be ≥ task.minOps (${t.minOps})` });
    }
  });

export const martipyConfigSchema = z
  .strictObject({
    algorithm: field(
      z.literal('martipy'),
      'Algorithm',
      'martipy: MARTI-MARS² on Python with a real model; agents grow search trees of programs, unit tests in a sandbox score them, each tree is one GRPO group (arXiv 2602.07848).',
    ),
    ...commonFields,
    model: field(chatModelSchema.prefault({}), 'Model', 'The real model trained, and how (LoRA or every weight).'),
    team: field(martipyTeamSchema.prefault({}), 'Team', 'The agents and the parameter sets they train.'),
    search: field(martipySearchSchema.prefault({}), 'Search', 'The tree each problem grows (AB-MCTS-A).'),
    task: field(martipyTaskSchema.prefault({}), 'Task', 'Training problems, evaluation problems and the sandbox.'),
  })
  .superRefine((c, ctx) => {
    checkCommon(c, ctx);
    if (c.team?.configuration === 'heterogeneous' && c.model?.lora === null) {
      ctx.addIssue({
        code: 'custom',
        path: ['model', 'lora'],
        message: 'heterogeneous agents train LoRA adapters of their own on a frozen base: set model.lora',
      });
    }
  });

export type MartipyConfig = z.output<typeof martipyConfigSchema>;
