/**
 * The `marti` member of the run configuration: the shared sections, the coding world (`task`) and the MARTI-MARS²
 * switches (`marti`), with docs/algorithms.md §4's mars-lab defaults. Every [D] of §3 and every arm of §6 is a field.
 *
 * MARTI's RL defaults differ from the shared ones (§3.7, §4): gspo loss, k3 KL 1e-3 against a frozen reference per
 * parameter set, z-score eps 1e-9. They are defaults of this member's `rl` section, so a partial `rl` keeps them.
 */
import { z } from 'zod';
import { policySourceSchema } from '../policy/policySource';
import {
  LOSS_KINDS,
  MODEL_SIZE_NAMES,
  checkCommon,
  commonFields,
  field,
  modelSourceSchema,
  rlSchema,
  seedNumber,
} from '../training/configSections';
import { textTokens } from './lang/text';
import { targetPoolBound } from './tasks/generator';
import { martiVocabulary } from './tasks/vocabulary';

/**
 * Words a role prompt may use beyond the world's vocabulary. The tokenizer is fixed (it does not depend on the
 * config), so a base checkpoint made once fits every MARTI run; a role prompt with other words is a config error.
 */
export const ROLE_WORDS = [
  'role',
  'agent',
  'generator',
  'refiner',
  'solver',
  'checker',
  'careful',
  'quick',
  'short',
  'alpha',
  'beta',
  'gamma',
  'delta',
  'you',
  'are',
  'a',
  'the',
  'write',
  'fix',
  'think',
  'first',
  'second',
  'third',
] as const;

let vocab: Set<string> | null = null;
function knownWord(w: string): boolean {
  vocab ??= new Set([...martiVocabulary(), ...ROLE_WORDS]);
  return vocab.has(w);
}

const count = (min: number, max: number, dflt: number) => z.int().min(min).max(max).default(dflt);

export const martiAgentSchema = z.strictObject({
  id: field(
    z.string().regex(/^[A-Za-z][A-Za-z0-9_-]{0,31}$/, { error: 'a letter, then letters, digits, _ or -' }),
    'Agent id',
    'Name of the agent in metrics and trees.',
  ),
  rolePrompt: field(
    z.string().max(200).default(''),
    'Role prompt',
    `Prefix of every prompt this agent gets (§3.1, mars-lab's own); words from the task vocabulary or ${ROLE_WORDS.join(', ')}.`,
  ),
  size: field(
    z.enum(MODEL_SIZE_NAMES).optional(),
    'Model size',
    'Heterogeneous only: this agent’s own architecture when it starts from random weights (default: model.size).',
  ),
  from: field(
    modelSourceSchema.optional(),
    'Initial weights',
    'Heterogeneous only: this agent’s own starting checkpoint (default: model.from).',
  ),
  policy: field(
    policySourceSchema.optional(),
    'Policy source',
    'Evaluation only (mars-lab eval): where this agent’s programs come from, its parameter set’s own model ({"kind": "model"}, the default) or an OpenAI-compatible endpoint ({"kind": "endpoint", "baseUrl", "model", "apiKeyEnv", …}).',
  ),
});

export const martiTaskSchema = z
  .strictObject({
    taskSeed: field(
      seedNumber().default(1),
      'Task seed',
      'Base seed of the training and held-out task streams (disjoint seeds and targets).',
    ),
    trainTasks: field(
      count(1, 100_000, 2000),
      'Training tasks',
      'Size of the training task pool problems are drawn from.',
    ),
    minOps: field(count(1, 5, 2), 'Fewest operations', 'Fewest operations in a hidden target program.'),
    maxOps: field(count(1, 5, 5), 'Most operations', 'Most operations in a hidden target program (issue 5: 2–5).'),
    publicTests: field(
      count(1, 8, 3),
      'Public tests',
      'Tests shown to agents; the search and the reward use only these (§3.3).',
    ),
    privateTests: field(count(1, 50, 10), 'Private tests', 'Tests used only for metrics (§3.3).'),
    vagueShare: field(
      z.number().min(0).max(1).default(0.3),
      'Vague share',
      'Chance that a statement leaves an operation’s number out, so it must be read off the examples (and feedback matters).',
    ),
    rewardMode: field(
      z.enum(['allPass', 'fraction']).default('allPass'),
      'Reward',
      'allPass: 1 if every public test passes (the release); fraction: the share passed (§3.3).',
    ),
    feedback: field(
      z.enum(['perTest', 'binary', 'rich']).default('perTest'),
      'Feedback',
      'What a refining agent reads about its parent: per-test verdicts (default), one verdict, or rich errors (T+) (§3.2).',
    ),
    maxProgramTokens: field(count(4, 400, 48), 'Program length', 'New tokens an agent may write for one program.'),
    file: field(
      z.string().min(1).max(4096).optional(),
      'Task file',
      'Held-out problems from this JSONL file (one task a line: id, statement, publicTests, privateTests, optional target; MARTI’s words) instead of generated ones; evaluation takes the first eval.items.',
    ),
  })
  .superRefine((t, ctx) => {
    if (t.minOps > t.maxOps) {
      ctx.addIssue({ code: 'custom', path: ['minOps'], message: `must be ≤ task.maxOps (${t.maxOps})` });
    } else {
      // Caught here, not when the trainer builds its pool minutes into a launch (issue 19).
      const bound = targetPoolBound('train', t.minOps, t.maxOps);
      if (t.trainTasks > bound) {
        ctx.addIssue({
          code: 'custom',
          path: ['trainTasks'],
          message: `at most ${bound} distinct training targets of ${t.minOps}–${t.maxOps} operations exist (fewer once degenerate ones are dropped): ask for fewer, or raise task.maxOps — ${t.trainTasks} asked for`,
          params: { whole: true },
        });
      }
    }
  });

export const tplusSchema = z.strictObject({
  enabled: field(
    z.boolean().default(true),
    'T+ evaluation',
    'Also evaluate with MARS²-T+ (larger budget, rich feedback, depth weighting) (§3.10).',
  ),
  when: field(
    z.enum(['everyEval', 'final']).default('everyEval'),
    'When T+ runs',
    'everyEval: at every evaluation of a run; final: only at the run’s last step (T+ trees are the costliest part of an evaluation). A checkpoint evaluation (`eval --checkpoint`) includes T+ whenever T+ is enabled.',
  ),
  nodes: field(count(1, 256, 16), 'T+ node budget', 'Nodes per tree at test time (§3.10: 16).'),
  feedback: field(
    z.enum(['perTest', 'binary', 'rich']).default('rich'),
    'T+ feedback',
    'Feedback of T+ trees (§3.10 a: rich).',
  ),
  depthWeighting: field(
    z.boolean().default(true),
    'Depth weighting',
    'Re-weight GEN credit by ω(d, c) = (1 + α·d)/(1 + β·c) (§3.10 b).',
  ),
  alpha: field(z.number().min(0).max(10).default(0.5), 'α', 'Depth term of ω.'),
  beta: field(z.number().min(0).max(10).default(0.25), 'β', 'Crowding term of ω.'),
});

export const martiSchema = z
  .strictObject({
    configuration: field(
      z.enum(['single', 'homogeneous', 'heterogeneous']).default('homogeneous'),
      'Team',
      'single: one agent, one parameter set; homogeneous: K agents (role prompts) sharing one parameter set; heterogeneous: K agents with K separate parameter sets (§3.1).',
    ),
    singleSearch: field(
      z.enum(['tree', 'none']).default('tree'),
      'Single-agent search',
      'With configuration single: tree = single-model tree search (homogeneous K = 1); none = vanilla GRPO, N independent samples grouped together (§6.7).',
    ),
    agents: field(
      z
        .array(martiAgentSchema)
        .min(1)
        .max(8)
        .default(() => [
          { id: 'alpha', rolePrompt: 'agent alpha :' },
          { id: 'beta', rolePrompt: 'agent beta :' },
        ]),
      'Agents',
      'The agents (§3.1): id, role prompt and, when heterogeneous, optionally their own size or checkpoint. single uses the first.',
    ),
    nodesPerTree: field(
      z.int().min(2, { error: 'a tree of one node has no baseline; docs/algorithms.md §3.12' }).max(256).default(8),
      'Nodes per tree (N)',
      'Programs written per problem per step; all of a tree’s nodes form one GRPO group (§3.7, §3.8).',
    ),
    problemsPerStep: field(
      count(1, 1024, 16),
      'Problems per step',
      'Trees grown per training step, expanded in parallel (§3.8).',
    ),
    trainBatch: field(
      count(1, 4096, 8),
      'Train batch',
      'A parameter set updates once its buffer holds this many samples, in minibatches of this size (§3.7).',
    ),
    agentUpdate: field(
      z.enum(['whenFull', 'everyStep']).default('whenFull'),
      'Agent update',
      'whenFull: update a parameter set when its buffer is full (the release); everyStep: whenever it holds any sample (§3.7).',
    ),
    posterior: field(
      z.enum(['beta', 'gaussian']).default('beta'),
      'Posterior',
      'Thompson-sampling posterior of GEN/CONT and children: Beta (default) or Normal-Inverse-Gamma (the release) (§3.5).',
    ),
    agentSelect: field(
      z.enum(['thompson', 'ucb']).default('thompson'),
      'Agent choice',
      'How the agent expanding a node is chosen from its scores in the tree (§3.4).',
    ),
    treeShaping: field(
      z.boolean().default(false),
      'Tree shaping',
      'r′ = r + γ_s(r − b) with parent and sibling baselines, γ_s = λ_s = 0.5 (§3.7; inactive in the release).',
    ),
    dynamicFiltering: field(
      z.boolean().default(false),
      'Dynamic filtering',
      'Drop trees whose rewards are all equal: they give no policy gradient (§3.7, §3.12).',
    ),
    overlongPenalty: field(
      z
        .strictObject({
          buffer: field(
            count(1, 400, 8),
            'Buffer',
            'L_buf: tokens before the program limit where the penalty ramps up.',
          ),
          factor: field(z.number().min(0).max(10).default(1), 'Factor', 'Penalty at the limit.'),
        })
        .nullable()
        .default(null),
      'Overlong penalty',
      'DAPO-style penalty on programs near task.maxProgramTokens (§3.7); null = off.',
    ),
    evalNodes: field(
      count(1, 256, 8),
      'Evaluation tree size',
      'Nodes per held-out tree for best-of-tree and diversity (§4: 1 and 8).',
    ),
    evalSearchTemperature: field(
      z.number().min(0).max(10).default(1),
      'Evaluation search temperature',
      'Sampling temperature of evaluation trees (pass@1 with one node uses eval.temperature); seeded, so evaluations are repeatable.',
    ),
    pretrainRefineShare: field(
      z.number().min(0).max(1).default(0.25),
      'Pretraining refine share',
      'Share of base-model pretraining examples in the refine layout (a broken parent, its feedback, the fixed program); 0 teaches only fresh writing.',
    ),
    pretrainNoisyParents: field(
      z.number().min(0).max(1).default(0),
      'Pretraining noisy parents',
      'Share of the refine examples whose broken parent is a noisy read of the statement (each operation misread with probability 0.5, as a weak policy writes) instead of one random edit of the answer; 0 reproduces the shipped base.',
    ),
    tplus: field(
      tplusSchema.prefault({}),
      'T+',
      'Test-time scaling MARS²-T+ (§3.10); the learned verifier (c) is not implemented.',
    ),
  })
  .superRefine((m, ctx) => {
    const ids = m.agents.map((a) => a.id);
    if (new Set(ids).size !== ids.length) {
      ctx.addIssue({ code: 'custom', path: ['agents'], message: 'agent ids must be distinct' });
    }
    if (m.configuration === 'heterogeneous' && m.agents.length < 2) {
      ctx.addIssue({ code: 'custom', path: ['agents'], message: 'heterogeneous needs at least two agents (§3.1)' });
    }
    m.agents.forEach((a, i) => {
      const bad = textTokens(a.rolePrompt).filter((w) => !knownWord(w));
      if (bad.length) {
        ctx.addIssue({
          code: 'custom',
          path: ['agents', i, 'rolePrompt'],
          message: `unknown words ${bad.map((w) => JSON.stringify(w)).join(', ')}: use task words or ${ROLE_WORDS.join(', ')}`,
        });
      }
      if (m.configuration !== 'heterogeneous' && (a.size !== undefined || a.from !== undefined)) {
        ctx.addIssue({
          code: 'custom',
          path: ['agents', i],
          message: 'size and from are per-agent only when configuration is heterogeneous; use model.size / model.from',
        });
      }
    });
  });

/** MARTI's rl section: the shared one with §4's MARTI defaults. */
export const martiRlSchema = rlSchema.safeExtend({
  loss: field(
    z.enum(LOSS_KINDS).default('gspo'),
    'Policy loss',
    'gspo clips the sequence-level ratio (MARTI release); ppoToken clips each token ratio (§1.3).',
  ),
  klCoef: field(
    z.number().min(0).max(10).default(1e-3),
    'KL coefficient',
    'Weight of the k3 KL penalty towards each parameter set’s frozen initial copy (§3.7: 1e-3).',
  ),
  zscoreEps: field(
    z.number().min(0).max(1).default(1e-9),
    'z-score epsilon',
    'Added to the tree’s standard deviation before dividing (MARTI: 1e-9).',
  ),
});

export const martiConfigSchema = z
  .strictObject({
    algorithm: field(
      z.literal('marti'),
      'Algorithm',
      'marti: MARTI-MARS², agents grow one search tree of programs per coding problem (AB-MCTS-A); all nodes of a tree form one GRPO group (arXiv 2602.07848).',
    ),
    ...commonFields,
    rl: field(
      martiRlSchema.prefault({}),
      'Reinforcement learning',
      'Loss, advantage normalisation and optimiser settings (docs/algorithms.md §1, §3.7, §4).',
    ),
    task: field(
      martiTaskSchema.prefault({}),
      'Coding world',
      'The generated coding tasks, their tests and the feedback agents read.',
    ),
    marti: field(
      martiSchema.prefault({}),
      'MARTI-MARS²',
      'Team, search and training switches (docs/algorithms.md §3, §6).',
    ),
  })
  .superRefine(checkCommon)
  .superRefine((c, ctx) => {
    const m = c.marti;
    if (m?.overlongPenalty && c.task && m.overlongPenalty.buffer > c.task.maxProgramTokens) {
      ctx.addIssue({
        code: 'custom',
        path: ['marti', 'overlongPenalty', 'buffer'],
        message: `must be ≤ task.maxProgramTokens (${c.task.maxProgramTokens})`,
      });
    }
    const t = c.task;
    if (t && c.eval && t.minOps <= t.maxOps) {
      const bound = targetPoolBound('heldout', t.minOps, t.maxOps);
      if (c.eval.items > bound) {
        ctx.addIssue({
          code: 'custom',
          path: ['eval', 'items'],
          message: `at most ${bound} distinct held-out targets of ${t.minOps}–${t.maxOps} operations exist (fewer once degenerate ones are dropped): ask for fewer, or raise task.maxOps — ${c.eval.items} asked for`,
          params: { whole: true },
        });
      }
    }
  });

export type MartiConfig = z.output<typeof martiConfigSchema>;
export type MartiTaskConfig = z.output<typeof martiTaskSchema>;
export type MartiSettings = z.output<typeof martiSchema>;
