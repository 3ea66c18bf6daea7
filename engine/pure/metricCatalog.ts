/**
 * What every metric an algorithm logs means: a one-line description, its unit, and the dashboard panel it belongs to.
 * The charts draw their grouped default dashboards from these declarations, the run page shows the line and unit next
 * to each chart, and `mars-lab show` prints the line next to the summary. It lives in engine/pure/, the floor of
 * pure modules that import nothing outside it (no Node, no zod, no model code), so the renderer may import it at run
 * time as well as the engine; `npm run deps` enforces that.
 *
 * A declaration's name is a metrics.jsonl key, or a pattern with one placeholder (<agent>, <family>, <set>) for the
 * families of metrics that the trainers log per agent, per question family or per parameter set; every member of a
 * pattern is drawn on one chart. tests/unit/runs/metricCatalog.test.ts checks that every metric a short real run of
 * each algorithm logs is declared here: a new metric without a declaration fails it.
 *
 * No imports at all: the renderer's type check must not reach the engine's Node modules through this file. Each
 * algorithm's headline metric (engine/runs/summary/headlineMetric.ts) is declared right after `reward`, so declaration order puts reward
 * and the held-out score first; the test checks that it is the headline metric.
 *
 * Sources: engine/seqgrpo/trainer.ts, engine/mars/trainer.ts, engine/marti/trainer.ts, engine/chatgrpo/trainer.ts,
 * engine/marti/python/trainer.ts (trainStep and evaluate), and engine/runs/runLoop.ts, which logs each evaluation metric as `eval.<name>`.
 */

export type MetricUnit =
  'fraction' | 'score' | 'count' | 'tokens' | 'ms' | 'nats' | 'ratio' | 'steps' | 'edits' | 'value' | 'lr';

/** What a unit reads as next to a chart's title. */
export const UNIT_TEXT: Record<MetricUnit, string> = {
  fraction: 'share, 0–1',
  score: 'score, 0–1',
  count: 'count',
  tokens: 'tokens',
  ms: 'milliseconds',
  nats: 'nats',
  ratio: 'ratio',
  steps: 'steps',
  edits: 'edit distance',
  value: 'value',
  lr: 'learning rate',
};

/** Units whose values lie in [0, 1]: a chart of them never shows a range outside it. */
export const BOUNDED_UNITS: readonly MetricUnit[] = ['fraction', 'score'];

export type PanelId =
  | 'headline'
  | 'eval'
  | 'sys2'
  | 'sys1'
  | 'agents'
  | 'families'
  | 'tree'
  | 'diversity'
  | 'optimisation'
  | 'timing'
  | 'other';

/** Panels in the order the dashboard shows them: reward and held-out score first, timing last. */
export const PANELS: readonly { id: PanelId; title: string }[] = [
  { id: 'headline', title: 'Reward and held-out score' },
  { id: 'eval', title: 'Held-out evaluation' },
  { id: 'sys2', title: 'System 2 (the agent that searches and answers)' },
  { id: 'sys1', title: 'System 1 (the reader that distils pages)' },
  { id: 'agents', title: 'Per agent' },
  { id: 'families', title: 'Per question family' },
  { id: 'tree', title: 'Search trees' },
  { id: 'diversity', title: 'Diversity of programs' },
  { id: 'optimisation', title: 'Optimisation' },
  { id: 'timing', title: 'Timing' },
  { id: 'other', title: 'Other metrics (no declaration)' },
];

export interface MetricDecl {
  /** A metrics.jsonl key, or a pattern with one of <agent>, <family>, <set>. */
  name: string;
  description: string;
  unit: MetricUnit;
  panel: PanelId;
}

type D = [name: string, unit: MetricUnit, panel: PanelId, description: string];
const decls = (rows: D[]): MetricDecl[] =>
  rows.map(([name, unit, panel, description]) => ({ name, unit, panel, description }));

/** A MARTI team's agents and parameter sets (the toy MARTI and martipy log them alike). */
const PARAM_SETS: D[] = [
  ['agentShare.<agent>', 'fraction', 'agents', 'share of the step’s nodes written by one agent'],
  ['agentStep', 'steps', 'optimisation', 'updates applied to the parameters so far'],
  ['agentStep.<set>', 'steps', 'agents', 'updates applied to one parameter set so far'],
  ['loss.<set>', 'value', 'agents', 'loss of one parameter set’s update'],
  ['clipFraction.<set>', 'fraction', 'agents', 'clipped share of one parameter set’s tokens'],
  ['gradNorm.<set>', 'value', 'agents', 'gradient norm of one parameter set’s update'],
  ['lr.<set>', 'lr', 'agents', 'learning rate of one parameter set'],
];

const OPTIMISATION: D[] = [
  [
    'loss',
    'value',
    'optimisation',
    'policy-gradient loss of the update (clipped surrogate, plus KL when rl.klCoef > 0)',
  ],
  ['clipFraction', 'fraction', 'optimisation', 'share of tokens whose probability ratio was clipped by rl.clipEps'],
  ['gradNorm', 'value', 'optimisation', 'global L2 norm of the gradient before clipping'],
  ['lr', 'lr', 'optimisation', 'learning rate used by the update (after warm-up and schedule)'],
  ['kl', 'nats', 'optimisation', 'mean per-token KL divergence from the reference (initial) policy'],
  [
    'zeroAdvantageShare',
    'fraction',
    'optimisation',
    'share of samples whose advantage is 0 (their group scored alike): no learning signal',
  ],
  ['timing.rolloutMs', 'ms', 'timing', 'wall-clock time of the step’s rollouts'],
  ['timing.updateMs', 'ms', 'timing', 'wall-clock time of the step’s policy update'],
  // logged by the run loop (engine/runs/runLoop.ts) for every algorithm; split by engine/pure/timeSplit.ts
  [
    'timing.stepMs',
    'ms',
    'timing',
    'wall-clock time since the previous step’s line: the step, its evaluation and the checkpoint before it',
  ],
  ['timing.evalMs', 'ms', 'timing', 'wall-clock time of the held-out evaluation (steps that evaluate)'],
  ['timing.checkpointMs', 'ms', 'timing', 'wall-clock time writing the checkpoint after the previous step'],
  ['timing.rolloutTokens', 'tokens', 'timing', 'tokens the step’s rollouts processed (prompts and outputs)'],
];

const SEQGRPO: MetricDecl[] = decls([
  ['reward', 'score', 'headline', 'mean reward of the step’s rollouts (share of positions right)'],
  ['eval.accuracy', 'fraction', 'headline', 'held-out accuracy: share of held-out sequences output exactly (greedy)'],
  ['eval.positionAccuracy', 'fraction', 'eval', 'held-out share of positions right'],
  ['exact', 'fraction', 'headline', 'share of the step’s rollouts that are exactly right'],
  ...OPTIMISATION,
]);

const CHATGRPO: MetricDecl[] = decls([
  [
    'reward',
    'score',
    'headline',
    'mean reward of the step’s replies (0.5 for the right sum anywhere, 0.5 more for the sum alone)',
  ],
  ['eval.accuracy', 'fraction', 'headline', 'held-out share of replies that are the sum and nothing else (greedy)'],
  ['eval.answerCorrect', 'fraction', 'eval', 'held-out share of replies stating the right sum anywhere'],
  ['eval.reward', 'score', 'eval', 'held-out mean reward'],
  ['exact', 'fraction', 'headline', 'share of the step’s replies that are the sum and nothing else'],
  ['correct', 'fraction', 'headline', 'share of the step’s replies stating the right sum anywhere'],
  ['replyTokens', 'tokens', 'optimisation', 'mean tokens of a reply, its end-of-turn token included'],
  [
    'truncatedShare',
    'fraction',
    'optimisation',
    'share of replies cut at task.maxNewTokens before their end-of-turn token',
  ],
  ...OPTIMISATION,
]);

/** What System 1's outputs and System 2's <info> hold (engine/mars/sys1Measures.ts), in training, evaluation and the
 * purpose-stripped evaluation (mars.evalPurposeStripped). */
function sys1Measures(prefix: string): D[] {
  const where = prefix === '' ? '' : prefix === 'eval.' ? 'held-out ' : 'held-out, purpose stripped: ';
  return [
    [
      `${prefix}sys1GoldAnswerShare`,
      'fraction',
      'sys1',
      `${where}share of System 1 outputs containing the gold answer`,
    ],
    [
      `${prefix}sys1SupportShare`,
      'fraction',
      'sys1',
      `${where}share of System 1 outputs containing a support-fact sentence`,
    ],
    [`${prefix}sys1OutputTokens`, 'tokens', 'sys1', `${where}mean tokens of one System 1 output`],
    [
      `${prefix}infoGoldAnswerShare`,
      'fraction',
      'sys1',
      `${where}share of searches whose <info> holds the gold answer`,
    ],
    [
      `${prefix}infoSupportShare`,
      'fraction',
      'sys1',
      `${where}share of searches whose <info> holds a support-fact sentence`,
    ],
  ];
}

const MARS: MetricDecl[] = decls([
  ['reward', 'score', 'headline', 'mean exact-match reward of the step’s episodes'],
  ['eval.exactMatch', 'fraction', 'headline', 'held-out exact match: share of held-out questions answered exactly'],
  ['f1', 'score', 'headline', 'mean token F1 of the step’s answers against the gold answers'],
  ['eval.f1', 'score', 'eval', 'held-out mean token F1 of the answers'],
  ['eval.answered', 'fraction', 'eval', 'held-out share of episodes that ended with an answer'],
  ['eval.searchesPerQuestion', 'count', 'eval', 'held-out mean searches per question'],
  ['eval.sys1CallsPerSearch', 'count', 'eval', 'held-out mean System 1 calls per search'],
  ['eval.sys2TokensPerQuestion', 'tokens', 'eval', 'held-out mean System 2 tokens per question'],
  ['eval.sys1TokensPerQuestion', 'tokens', 'eval', 'held-out mean System 1 output tokens per question'],
  [
    'eval.singleHopExactMatch',
    'fraction',
    'eval',
    'held-out exact match on single-hop families (direct, paraphrase, longTail)',
  ],
  [
    'eval.multiHopExactMatch',
    'fraction',
    'eval',
    'held-out exact match on multi-hop families (bridge, comparison, threeHop, compositional)',
  ],
  ['eval.exactMatch.<family>', 'fraction', 'families', 'held-out exact match of one question family'],
  ['eval.f1.<family>', 'score', 'families', 'held-out token F1 of one question family'],
  ['answered', 'fraction', 'sys2', 'share of episodes that ended with an answer (not out of turns or context)'],
  ['malformedTurns', 'count', 'sys2', 'mean turns per episode that were neither a search nor an answer'],
  ['overflow', 'fraction', 'sys2', 'share of episodes cut off by the context length'],
  ['searchesPerQuestion', 'count', 'sys2', 'mean searches System 2 made per question'],
  ['sys2Tokens', 'tokens', 'sys2', 'mean System 2 tokens trained on per episode'],
  ['sys2Samples', 'count', 'sys2', 'System 2 samples in the step’s update'],
  [
    'droppedQuestions',
    'count',
    'sys2',
    'questions whose group had no advantage and were dropped (mars.dropZeroAdvGroups)',
  ],
  ['sys1CallsPerSearch', 'count', 'sys1', 'mean System 1 calls per search (one per packed bin of pages)'],
  ['sys1Tokens', 'tokens', 'sys1', 'mean System 1 output tokens per episode'],
  ['sys1Samples', 'count', 'sys1', 'System 1 samples in the step’s update, after balancing'],
  ['sys1SamplesBeforeBalance', 'count', 'sys1', 'mean System 1 samples per question before balancing'],
  ['sys1DuplicateRatio', 'fraction', 'sys1', 'share of System 1 samples that repeat another after balancing'],
  ['sys1Loss', 'value', 'sys1', 'loss of the separate System 1 model’s update (mars.sys1Params = separate)'],
  ['sys1GradNorm', 'value', 'sys1', 'gradient norm of the separate System 1 model’s update'],
  [
    'sys1Kl',
    'nats',
    'sys1',
    'mean per-token KL divergence of the separate System 1 model from the reference (initial) policy',
  ],
  ...sys1Measures(''),
  ...sys1Measures('eval.'),
  ...sys1Measures('eval.purposeStripped.'),
  [
    'eval.purposeStripped.exactMatch',
    'fraction',
    'eval',
    'held-out exact match with System 1 prompted without the purpose',
  ],
  ['timing.sys2GenerationMs', 'ms', 'timing', 'wall-clock time System 2 spent generating'],
  ['timing.searchMs', 'ms', 'timing', 'wall-clock time spent searching the corpus'],
  ['timing.packingMs', 'ms', 'timing', 'wall-clock time packing pages into System 1 bins'],
  ['timing.sys1GenerationMs', 'ms', 'timing', 'wall-clock time System 1 spent generating'],
  ...OPTIMISATION,
]);

/** MARTI's diversity measures, logged for the evaluation tree (eval.div.*) and for T+ (eval.tplus.div.*). */
function diversity(prefix: string, what: string): D[] {
  const p = `eval.${prefix}`;
  return [
    [`${p}editDistance`, 'edits', 'diversity', `${what}: mean normalised edit distance between programs of a tree`],
    [
      `${p}editDistance.acrossAgents`,
      'edits',
      'diversity',
      `${what}: mean edit distance between programs of different agents`,
    ],
    [`${p}editDistance.<agent>`, 'edits', 'diversity', `${what}: mean edit distance between one agent’s programs`],
    [`${p}distinctPrograms`, 'fraction', 'diversity', `${what}: share of programs in a tree that are distinct`],
    [
      `${p}distinctPrograms.<agent>`,
      'fraction',
      'diversity',
      `${what}: share of one agent’s programs that are distinct`,
    ],
    [
      `${p}behaviour`,
      'fraction',
      'diversity',
      `${what}: share of behaviourally distinct programs (distinct outputs on the tests)`,
    ],
    [`${p}behaviour.<agent>`, 'fraction', 'diversity', `${what}: behavioural diversity of one agent’s programs`],
    [`${p}distinctCorrect`, 'count', 'diversity', `${what}: mean distinct correct programs per problem`],
    [
      `${p}distinctCorrect.<agent>`,
      'count',
      'diversity',
      `${what}: mean distinct correct programs per problem by one agent`,
    ],
    [`${p}uniqueSolves`, 'count', 'diversity', `${what}: problems solved by exactly one agent`],
    [`${p}uniqueSolves.<agent>`, 'count', 'diversity', `${what}: problems only this agent solved`],
    [`${p}passGap`, 'fraction', 'diversity', `${what}: best-of-tree minus pass@1 (what the search adds)`],
    [`${p}agentSelectionEntropy`, 'nats', 'diversity', `${what}: entropy of which agent the search chose`],
    [`${p}tokenEntropy`, 'nats', 'diversity', `${what}: mean per-token entropy of the programs’ sampling distribution`],
    [`${p}tokenEntropy.<agent>`, 'nats', 'diversity', `${what}: per-token entropy of one agent’s programs`],
  ];
}

const MARTI: MetricDecl[] = decls([
  ['reward', 'score', 'headline', 'mean public-test score of the step’s tree nodes'],
  ['eval.pass1', 'fraction', 'headline', 'held-out pass@1: one program per problem passes the private tests'],
  ['eval.pass1Greedy', 'fraction', 'headline', 'held-out pass@1 at temperature 0'],
  ['eval.bestOfTree', 'fraction', 'headline', 'held-out share of problems where some node of the tree passes (pass@N)'],
  ['eval.publicPass1', 'score', 'eval', 'held-out public-test score of the first program'],
  ['eval.validPrograms', 'fraction', 'eval', 'held-out share of programs that parse'],
  ['eval.pass1MCTS', 'fraction', 'eval', 'held-out pass@1 of the program the tree search picks'],
  ['eval.avgPass1', 'fraction', 'eval', 'held-out mean private pass over all nodes of the tree'],
  ['eval.treeReward', 'score', 'eval', 'held-out mean public score of the tree’s nodes'],
  ['eval.pass1.<agent>', 'fraction', 'agents', 'held-out pass@1 of one agent alone'],
  ['eval.tplus.pass1', 'fraction', 'eval', 'T+: held-out pass@1 of the node with the best public score'],
  ['eval.tplus.bestOfTree', 'fraction', 'eval', 'T+: held-out pass@N of the larger test-time tree'],
  ...diversity('div.', 'evaluation tree'),
  ...diversity('tplus.div.', 'T+ tree'),
  ['privatePass', 'score', 'tree', 'mean private-test score of the step’s nodes (not trained on)'],
  ['validPrograms', 'fraction', 'tree', 'share of the step’s programs that parse'],
  ['treePass1', 'fraction', 'tree', 'share of trees whose chosen program passes the private tests'],
  ['treePassN', 'fraction', 'tree', 'share of trees with some node passing the private tests'],
  ['treesSolvedPublic', 'fraction', 'tree', 'share of trees with a node scoring 1 on the public tests'],
  ['meanDepth', 'count', 'tree', 'mean depth of the step’s nodes (1 = a fresh program)'],
  ['maxDepth', 'count', 'tree', 'deepest node of the step'],
  ['refineShare', 'fraction', 'tree', 'share of nodes that refine a parent (depth > 1)'],
  ['refineGain', 'value', 'tree', 'mean public-score gain of a refinement over its parent'],
  ['programTokens', 'tokens', 'tree', 'mean tokens per program'],
  [
    'truncatedShare',
    'fraction',
    'tree',
    'share of programs cut before their end token (task.maxProgramTokens or the context)',
  ],
  ['droppedTrees', 'count', 'tree', 'trees dropped because no node had an advantage'],
  ['samples', 'count', 'tree', 'samples routed to the updates this step'],
  ['generateCalls', 'count', 'timing', 'batched generation calls of the step'],
  ['rounds', 'count', 'timing', 'search rounds of the step'],
  ['agentReward.<agent>', 'score', 'agents', 'mean public score of one agent’s nodes'],
  ...PARAM_SETS,
  ['buffered', 'count', 'optimisation', 'samples waiting in the buffer for the next update'],
  ['buffered.<set>', 'count', 'agents', 'samples waiting in one parameter set’s buffer'],
  ['optimizerSteps', 'count', 'optimisation', 'optimizer steps of this step’s update'],
  ['optimizerSteps.<set>', 'count', 'agents', 'optimizer steps of one parameter set this step'],
  ['timing.selectionMs', 'ms', 'timing', 'wall-clock time choosing where the trees grow'],
  ['timing.generationMs', 'ms', 'timing', 'wall-clock time generating programs'],
  ['timing.testMs', 'ms', 'timing', 'wall-clock time running the tests'],
  ['timing.liveMs', 'ms', 'timing', 'wall-clock time writing the live trees for the window'],
  ...OPTIMISATION,
]);

const MARTIPY: MetricDecl[] = decls([
  ['reward', 'score', 'headline', 'mean reward of the step’s nodes (task.rewardMode: every test passed, or the share)'],
  [
    'eval.pass1',
    'fraction',
    'headline',
    'held-out pass@1 of the first agent’s parameter set (eval.temperature; greedy at 0)',
  ],
  ['eval.pass1.<agent>', 'fraction', 'agents', 'held-out pass@1 of another agent’s parameter set (heterogeneous)'],
  ['eval.noCodeShare', 'fraction', 'eval', 'held-out share of replies with no code block'],
  [
    'eval.generatedPass1',
    'fraction',
    'eval',
    'pass@1 on generated problems of the held-out split (task.evalGenerated: programs never trained on)',
  ],
  ['eval.generatedPass1.<agent>', 'fraction', 'agents', 'the same for another agent’s parameter set'],
  ['passShare', 'fraction', 'tree', 'share of the step’s programs that pass every test'],
  ['treesSolved', 'fraction', 'tree', 'share of the step’s trees with some node passing every test'],
  ['firstNodePass', 'fraction', 'tree', 'share of trees whose first program passes (a sampled answer’s pass@1)'],
  ['refineShare', 'fraction', 'tree', 'share of nodes that refine a parent'],
  ['noCodeShare', 'fraction', 'tree', 'share of the step’s replies with no code block'],
  [
    'zeroSignalTrees',
    'fraction',
    'optimisation',
    'share of the step’s trees whose nodes all scored alike: advantage 0, left out of the update',
  ],
  ['replyTokens', 'tokens', 'optimisation', 'mean tokens of a reply, its end-of-turn token included'],
  [
    'overlongSkipped',
    'count',
    'optimisation',
    'nodes with signal left out of the update: prompt and reply longer than task.maxTrainTokens',
  ],
  ['truncatedShare', 'fraction', 'tree', 'share of replies cut at task.maxNewTokens before their end-of-turn token'],
  ['agentReward.<agent>', 'score', 'agents', 'mean reward of one agent’s nodes'],
  ...PARAM_SETS,
  ['timing.generationMs', 'ms', 'timing', 'wall-clock time writing programs (sampling)'],
  ['timing.testMs', 'ms', 'timing', 'wall-clock time running the tests in the sandbox'],
  ...OPTIMISATION,
]);

const CATALOG: Record<string, readonly MetricDecl[]> = {
  seqgrpo: SEQGRPO,
  mars: MARS,
  marti: MARTI,
  chatgrpo: CHATGRPO,
  martipy: MARTIPY,
};

/** The declarations of an algorithm (as run.json names it); empty for an unknown one. */
export function metricCatalog(algorithm: string | undefined): readonly MetricDecl[] {
  return algorithm !== undefined && Object.hasOwn(CATALOG, algorithm) ? CATALOG[algorithm]! : [];
}

const PLACEHOLDER = /<(agent|family|set)>/;

/** A name as matched: its declaration, the chart it is drawn on (the pattern) and its member (the placeholder's value). */
export interface MetricInfo extends MetricDecl {
  /** The declared name or pattern: metrics with the same `chart` share one chart. */
  chart: string;
  /** For a pattern, the placeholder's value (an agent id, a family, a set id). */
  member?: string;
}

function patternOf(name: string): RegExp | null {
  if (!PLACEHOLDER.test(name)) return null;
  const [before, after] = name.split(PLACEHOLDER.exec(name)![0]) as [string, string];
  const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`^${esc(before)}([A-Za-z0-9_-]+)${esc(after)}$`);
}

const compiled = new Map<string, RegExp | null>();

/** What a logged metric is: exact declarations first, then patterns; undefined when nothing declares it. */
export function describeMetric(algorithm: string | undefined, name: string): MetricInfo | undefined {
  const all = metricCatalog(algorithm);
  const exact = all.find((d) => d.name === name);
  if (exact) return { ...exact, chart: exact.name };
  for (const d of all) {
    if (!compiled.has(d.name)) compiled.set(d.name, patternOf(d.name));
    const m = compiled.get(d.name)?.exec(name);
    if (m) return { ...d, chart: d.name, member: m[1]! };
  }
  return undefined;
}

export interface DashboardChart {
  /** The declared name or pattern (for an undeclared metric, its name). */
  key: string;
  title: string;
  description: string;
  unit: MetricUnit | null;
  /** The logged metrics drawn on the chart; with members, one line each. */
  names: string[];
  members: (string | null)[];
}

export interface DashboardPanel {
  id: PanelId;
  title: string;
  charts: DashboardChart[];
}

/**
 * The default dashboard of a run: its logged metrics grouped into panels in PANELS order, each panel's charts in
 * declaration order (the headline panel: reward, then the algorithm's headline metric, as declared), patterns on one chart each.
 */
export function dashboard(algorithm: string | undefined, names: readonly string[]): DashboardPanel[] {
  const all = metricCatalog(algorithm);
  const rank = (key: string): number => {
    const i = all.findIndex((d) => d.name === key);
    return i < 0 ? all.length : i;
  };
  const charts = new Map<string, DashboardChart & { panel: PanelId }>();
  for (const name of names) {
    const info = describeMetric(algorithm, name);
    const key = info?.chart ?? name;
    let chart = charts.get(key);
    if (!chart) {
      chart = {
        key,
        title: key,
        description: info?.description ?? 'not declared in engine/pure/metricCatalog.ts',
        unit: info?.unit ?? null,
        names: [],
        members: [],
        panel: info?.panel ?? 'other',
      };
      charts.set(key, chart);
    }
    chart.names.push(name);
    chart.members.push(info?.member ?? null);
  }
  return PANELS.map(({ id, title }) => ({
    id,
    title,
    charts: [...charts.values()]
      .filter((c) => c.panel === id)
      .sort((a, b) => rank(a.key) - rank(b.key) || a.key.localeCompare(b.key))
      .map(({ panel: _panel, ...chart }) => chart),
  })).filter((p) => p.charts.length > 0);
}
