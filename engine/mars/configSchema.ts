/**
 * The `mars` member of the run configuration: the shared sections, the research world (`task`) and the algorithm's
 * own switches (`mars`), with docs/algorithms.md §4's mars-lab defaults. Every [D] of §2 and every ablation of §6 is a field.
 */
import { z } from 'zod';
import { checkCommon, commonFields, field, seedNumber } from '../training/configSections';
import { policySourceSchema } from '../policy/policySource';
import { MARS_FAMILIES } from '../pure/marsFamilies';
import { NAME_POOL_SIZES } from './namePool';

export { MARS_FAMILIES };

const count = (min: number, max: number, dflt: number) => z.int().min(min).max(max).default(dflt);
const range = (min: number, max: number, dflt: [number, number]) =>
  z
    .tuple([z.int().min(min).max(max), z.int().min(min).max(max)])
    .refine(([a, b]) => a <= b, { error: 'must be [min, max] with min ≤ max' })
    .default(dflt);

export const marsWorldSchema = z.strictObject({
  // Upper bounds: the shared name pool has this many names of each type.
  people: field(count(4, NAME_POOL_SIZES.person, 40), 'People', 'People per generated world.'),
  cities: field(
    count(2, NAME_POOL_SIZES.city, 16),
    'Cities',
    'Cities per generated world (at least as many as countries: each country has a capital).',
  ),
  countries: field(count(2, NAME_POOL_SIZES.country, 6), 'Countries', 'Countries per generated world.'),
  organisations: field(
    count(2, NAME_POOL_SIZES.organisation, 12),
    'Organisations',
    'Organisations per generated world.',
  ),
  works: field(count(2, NAME_POOL_SIZES.work, 16), 'Works', 'Works (books, films…) per generated world.'),
  fillerSentencesPerPage: field(
    range(0, 100, [3, 8]),
    'Filler sentences',
    'Sentences without facts drawn for each entity page, [min, max]: the haystack around the needles.',
  ),
  pageTokens: field(
    range(0, 10_000, [40, 120]),
    'Page length',
    'Target length of entity pages in tokens, [min, max] (a page whose facts alone are longer stays longer).',
  ),
  distractorMentions: field(
    count(0, 100, 2),
    'Distractor mentions',
    'Short pages that name an entity without stating its facts, per entity.',
  ),
  // Optional, with no default, so that configs without it keep their world (and its evaluation identity) as it was.
  mentionPageTokens: field(
    z.int().min(0).max(10_000).optional(),
    'Distractor page length',
    'Pad each distractor (mention) page with filler sentences to at least this many tokens, so search results are long and mostly noise (mars-overflow); unset: as drawn, about 20–50 tokens.',
  ),
});

export const marsTaskSchema = z
  .strictObject({
    world: field(marsWorldSchema.prefault({}), 'World size', 'How many entities of each type a generated world has.'),
    worldSeed: field(
      seedNumber().default(1),
      'World seed',
      'Base seed from which training and evaluation world seeds are derived (disjoint sets).',
    ),
    trainWorlds: field(count(1, 10_000, 8), 'Training worlds', 'Worlds whose questions are trained on.'),
    evalWorlds: field(
      count(1, 1000, 2),
      'Evaluation worlds',
      'Worlds never trained on, whose questions are evaluated.',
    ),
    families: field(
      z
        .array(z.enum(MARS_FAMILIES))
        .min(1)
        .default(() => [...MARS_FAMILIES]),
      'Question families',
      'Which of the seven question families (three single-hop, four multi-hop) are asked.',
    ),
    questionsPerStep: field(
      count(1, 1024, 8),
      'Questions per step',
      'Distinct questions per training step (docs/algorithms.md §4: 8).',
    ),
    groupSize: field(
      z.int().min(2, { error: 'a group of one has no baseline; docs/algorithms.md §2.9' }).max(1024).default(8),
      'Group size (G)',
      'Trajectories per question; their rewards are normalised within the question (docs/algorithms.md §2.5).',
    ),
    corpus: field(
      z
        .strictObject({
          folder: field(
            z.string().min(1).max(4096),
            'Corpus folder',
            'A folder of .txt, .md and .jsonl documents ({"text", "title"?, "id"?} a line), searched with the worlds’ BM25.',
          ),
          questions: field(
            z.string().min(1).max(4096),
            'Questions file',
            'JSONL, one {"question", "answers": […], "id"?} a line; evaluation takes the first eval.items.',
          ),
        })
        .optional(),
      'Your corpus',
      'Evaluation with endpoint policies only: search your own documents and answer your own questions instead of the generated worlds’.',
    ),
  })
  .superRefine((t, ctx) => {
    if (t.evalWorlds + t.trainWorlds > 100_000) {
      ctx.addIssue({ code: 'custom', path: ['trainWorlds'], message: 'too many worlds' });
    }
  });

export const marsSchema = z
  .strictObject({
    maxTurns: field(count(1, 64, 4), 'Max turns', 'Tool turns before the trajectory must answer (§2.2; paper 10).'),
    topK: field(count(1, 100, 5), 'Search results', 'Pages one search returns (full pages).'),
    sys1PromptMax: field(
      count(16, 100_000, 256),
      'System 1 prompt budget',
      'Tokens of System 1’s window: template, purpose and one bin (§2.3).',
    ),
    sys1ResponseMax: field(count(1, 100_000, 48), 'System 1 response budget', 'New tokens System 1 may write per bin.'),
    sys2PromptMax: field(
      count(8, 100_000, 64),
      'System 2 prompt budget',
      'Tokens of System 2’s prompt (template and question).',
    ),
    sys2ResponseMax: field(
      count(8, 100_000, 640),
      'System 2 response budget',
      'Tokens of System 2’s whole trajectory, inserted <info> included; beyond it the trajectory ends with reward 0 (§2.2).',
    ),
    sys2TurnMax: field(count(4, 10_000, 32), 'System 2 turn length', 'New tokens System 2 may write in one turn.'),
    purposeMax: field(count(0, 10_000, 24), 'Purpose cap', 'Tokens of the purpose kept for System 1 (§2.3).'),
    sepCost: field(count(0, 16, 1), 'Separator cost', 'Tokens each packed document costs beyond its length (§2.3).'),
    rawInfoBudget: field(
      count(1, 100_000, 128),
      'Raw info budget',
      'With System 1 off: tokens of raw pages System 2 sees per search (§6.1).',
    ),
    sys1Params: field(
      z.enum(['shared', 'separate', 'frozen', 'sharedUntrained', 'off', 'oracle']).default('shared'),
      'System 1 parameters',
      'shared: one policy plays both systems (the paper); separate: System 1 has its own weights; frozen: System 1 runs the initial weights, untrained; sharedUntrained: live weights, System 1 samples dropped; off: no System 1 (§6.1–6.3); oracle (evaluation only): each System 1 window returns the question’s support sentences its pages hold, the bound on what System 1 can give System 2.',
    ),
    packing: field(
      z.enum(['ffd', 'perDoc', 'truncate']).default('ffd'),
      'Packing',
      'How one search’s pages fill System 1 windows: First-Fit-Decreasing, one page per window, or one truncated window (§2.3, §6.5).',
    ),
    sys1Pool: field(
      z.enum(['separate', 'joint']).default('separate'),
      'Advantage pools',
      'Normalise System 1 and System 2 advantages separately (the paper) or in one pool (§2.5, §6.6).',
    ),
    balance: field(
      z.enum(['uniform', 'advWeighted', 'off']).default('uniform'),
      'Balancing',
      'Resample System 1 samples to G per question, uniformly or weighted by |A|, or keep all (§2.7, §6.4).',
    ),
    balanceDelta: field(
      z.number().gt(0).max(1).default(1e-3),
      'Balancing δ',
      'Added to |A| in advantage-weighted balancing.',
    ),
    precompute: field(
      z.boolean().default(true),
      'Advantages before balancing',
      'true: normalise on the full pools, then balance (the paper); false: balance first, then normalise (§6.4 ablation).',
    ),
    dropZeroAdvGroups: field(
      z.boolean().default(false),
      'Drop zero-advantage questions',
      'Leave out questions whose G rewards are all equal (§2.9).',
    ),
    missingPurpose: field(
      z.enum(['query', 'empty']).default('query'),
      'Missing purpose',
      'What System 1 is told when System 2 gives no purpose (§2.1).',
    ),
    evalPurposeStripped: field(
      z.boolean().default(false),
      'Purpose-stripped evaluation',
      'Evaluation also runs the held-out questions with System 1 prompted without System 2’s purpose, and logs purposeStripped.* beside the usual figures (issue 17: does the purpose change what System 1 writes?).',
    ),
    policies: field(
      z
        .strictObject({
          sys2: field(
            policySourceSchema.optional(),
            'System 2 policy',
            'Where System 2’s turns come from (default: the run’s own model).',
          ),
          sys1: field(
            policySourceSchema.optional(),
            'System 1 policy',
            'Where System 1’s summaries come from (default: System 2’s source).',
          ),
        })
        .optional(),
      'Policy sources',
      'Evaluation only (mars-lab eval): where each system’s text comes from, the run’s own model ({"kind": "model"}, the default) or an OpenAI-compatible endpoint ({"kind": "endpoint", "baseUrl", "model", "apiKeyEnv", …}); System 1 defaults to System 2’s source.',
    ),
  })
  .superRefine((m, ctx) => {
    if (!m.precompute && m.balance === 'advWeighted') {
      ctx.addIssue({
        code: 'custom',
        path: ['precompute'],
        message:
          'false cannot be combined with mars.balance = "advWeighted": weights need advantages, which this ablation computes after balancing',
      });
    }
    if (m.sys1PromptMax - 3 - m.purposeMax <= m.sepCost) {
      ctx.addIssue({
        code: 'custom',
        path: ['sys1PromptMax'],
        message: `leaves no room for documents: the window minus the template (3) and mars.purposeMax (${m.purposeMax}) must exceed mars.sepCost (${m.sepCost})`,
      });
    }
  });

export const marsConfigSchema = z
  .strictObject({
    algorithm: field(
      z.literal('mars'),
      'Algorithm',
      'mars: a dual-system deep-research agent (System 2 reasons and searches, System 1 distils the pages), trained with one shared reward (arXiv 2510.04935).',
    ),
    ...commonFields,
    task: field(
      marsTaskSchema.prefault({}),
      'Research world',
      'The generated worlds, their questions and the group size.',
    ),
    mars: field(
      marsSchema.prefault({}),
      'MARS',
      'Budgets and switches of the dual-system rollout and its training (docs/algorithms.md §2, §6).',
    ),
  })
  .superRefine(checkCommon);

export type MarsConfig = z.output<typeof marsConfigSchema>;
export type MarsTaskConfig = z.output<typeof marsTaskSchema>;
export type MarsSettings = z.output<typeof marsSchema>;
