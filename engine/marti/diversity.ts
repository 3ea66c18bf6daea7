/**
 * Diversity measures for MARTI-MARS² (docs/algorithms.md §3.11 [D]; issue 5 "Diversity"), per agent and between agents.
 *
 * Everything works on a flat list of `DiversityNode`s tagged with their problem, so the same code serves the
 * `system` mode (one joint tree per problem) and the `agent` mode (one tree per agent per problem). Comparisons of
 * programs are only ever made within one problem. Nodes whose program is null (unparsable) take no part in the
 * program and behaviour measures; they still count as unsolved.
 *
 * Choices:
 * - Edit distance is on **token arrays** (see `tokenizeProgram`), computed with `fastest-levenshtein` by mapping each
 *   distinct token of a pair to one UTF-16 code unit, normalised by the longer length (0 for two empty programs).
 * - Pair means are **pooled** over all pairs of all problems (each pair counts once), not averaged per problem.
 * - Token entropy has two forms: `tokenEntropyFromLogProbs` (mean −log π of the sampled tokens, a Monte Carlo estimate
 *   of the per-token policy entropy, in nats) and `unigramEntropy` (Shannon entropy of the token counts, in nats).
 */
import { distance } from 'fastest-levenshtein';
import { nonRootNodes, type SearchTree } from './search/abmcts';
import { pass1, passN } from './search/metrics';

export interface DiversityNode {
  problemId: string;
  agentId: string;
  /** Creation order within its tree (for pass1's newest-wins tie-break); optional elsewhere. */
  id?: number;
  program: string | null;
  publicScore?: number;
  privateScore?: number | null;
}

/** The non-root nodes of a tree as `DiversityNode`s (problemId defaults to the treeId). */
export function diversityNodesOf(tree: SearchTree<unknown>, problemId: string = tree.treeId): DiversityNode[] {
  return nonRootNodes(tree).map((n) => ({
    problemId,
    agentId: n.agentId!,
    id: n.id,
    program: n.program,
    publicScore: n.publicScore,
    privateScore: n.privateScore,
  }));
}

/**
 * Language-agnostic default tokenizer: identifiers, numbers, double- or single-quoted strings, then any other
 * non-space character on its own. Whitespace is dropped.
 */
export function tokenizeProgram(program: string): string[] {
  return program.match(/[A-Za-z_][A-Za-z0-9_]*|\d+(?:\.\d+)?|"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|\S/g) ?? [];
}

/** Default canonical form: whitespace runs collapsed to one space and trimmed. Pass the language's own to also
 * rename identifiers (§3.11). */
export function collapseWhitespace(program: string): string {
  return program.replace(/\s+/g, ' ').trim();
}

/** Levenshtein distance between two token arrays. */
export function tokenEditDistance(a: readonly string[], b: readonly string[]): number {
  const codes = new Map<string, string>();
  const enc = (toks: readonly string[]) => {
    let s = '';
    for (const t of toks) {
      let c = codes.get(t);
      if (c === undefined) {
        if (codes.size >= 0x10000) throw new Error('tokenEditDistance: more than 65536 distinct tokens in one pair.');
        c = String.fromCharCode(codes.size);
        codes.set(t, c);
      }
      s += c;
    }
    return s;
  };
  return distance(enc(a), enc(b));
}

/** Edit distance divided by the longer length, in [0, 1]; 0 when both are empty. */
export function normalizedTokenEditDistance(a: readonly string[], b: readonly string[]): number {
  const m = Math.max(a.length, b.length);
  return m === 0 ? 0 : tokenEditDistance(a, b) / m;
}

export interface DiversityOptions {
  tokenize?: (program: string) => string[];
  canonical?: (program: string) => string;
}

function groupBy<T>(xs: readonly T[], key: (x: T) => string): Map<string, T[]> {
  const m = new Map<string, T[]>();
  for (const x of xs) {
    const k = key(x);
    const l = m.get(k);
    if (l) l.push(x);
    else m.set(k, [x]);
  }
  return m;
}

function agentsOf(nodes: readonly DiversityNode[]): string[] {
  return [...new Set(nodes.map((n) => n.agentId))];
}

const meanOrNull = (sum: number, n: number): number | null => (n === 0 ? null : sum / n);

export interface EditDistanceReport {
  /** Per agent: mean over pairs of that agent's programs for the same problem. null = no pair. */
  withinAgent: Record<string, number | null>;
  /** Mean over pairs written by different agents for the same problem. */
  acrossAgents: number | null;
  /** Mean over all pairs for the same problem. */
  all: number | null;
}

/** Mean pairwise normalised token edit distance (§3.11), within each agent, across agents, and overall. */
export function pairwiseEditDistance(nodes: readonly DiversityNode[], opts: DiversityOptions = {}): EditDistanceReport {
  const tok = opts.tokenize ?? tokenizeProgram;
  const within: Record<string, { s: number; n: number }> = {};
  for (const a of agentsOf(nodes)) within[a] = { s: 0, n: 0 };
  let across = { s: 0, n: 0 };
  let all = { s: 0, n: 0 };
  for (const group of groupBy(nodes, (n) => n.problemId).values()) {
    const progs = group.filter((n) => n.program !== null).map((n) => ({ agent: n.agentId, toks: tok(n.program!) }));
    for (let i = 0; i < progs.length; i++) {
      for (let j = i + 1; j < progs.length; j++) {
        const d = normalizedTokenEditDistance(progs[i]!.toks, progs[j]!.toks);
        all = { s: all.s + d, n: all.n + 1 };
        if (progs[i]!.agent === progs[j]!.agent) {
          const w = within[progs[i]!.agent]!;
          w.s += d;
          w.n += 1;
        } else across = { s: across.s + d, n: across.n + 1 };
      }
    }
  }
  const withinAgent: Record<string, number | null> = {};
  for (const [a, w] of Object.entries(within)) withinAgent[a] = meanOrNull(w.s, w.n);
  return { withinAgent, acrossAgents: meanOrNull(across.s, across.n), all: meanOrNull(all.s, all.n) };
}

export interface RatioReport {
  /** Per agent: mean over problems (where the agent has ≥ 1 program) of distinct/total. */
  perAgent: Record<string, number | null>;
  /** Mean over problems (with ≥ 1 program) of distinct/total over all agents. */
  all: number | null;
}

function distinctRatio(nodes: readonly DiversityNode[], keyOf: (n: DiversityNode) => string): RatioReport {
  const byProblem = [
    ...groupBy(
      nodes.filter((n) => n.program !== null),
      (n) => n.problemId,
    ).values(),
  ];
  const ratio = (xs: readonly DiversityNode[]) => new Set(xs.map(keyOf)).size / xs.length;
  const perAgent: Record<string, number | null> = {};
  for (const a of agentsOf(nodes)) {
    const rs = byProblem
      .map((g) => g.filter((n) => n.agentId === a))
      .filter((g) => g.length > 0)
      .map(ratio);
    perAgent[a] = meanOrNull(
      rs.reduce((s, x) => s + x, 0),
      rs.length,
    );
  }
  const rs = byProblem.map(ratio);
  return {
    perAgent,
    all: meanOrNull(
      rs.reduce((s, x) => s + x, 0),
      rs.length,
    ),
  };
}

/** §3.11 distinct-program ratio per tree: distinct canonical programs / programs, averaged over problems. */
export function distinctProgramRatio(nodes: readonly DiversityNode[], opts: DiversityOptions = {}): RatioReport {
  const canon = opts.canonical ?? collapseWhitespace;
  return distinctRatio(nodes, (n) => canon(n.program!));
}

/**
 * Behavioural diversity: distinct output signatures / programs, averaged over problems. `outputsOf` returns the
 * program's outputs on the problem's probe inputs as one string (errors included, e.g. "E:step-limit"); it is given
 * the node so probe inputs can depend on its problem.
 */
export function behaviouralDiversity(
  nodes: readonly DiversityNode[],
  outputsOf: (program: string, node: DiversityNode) => string,
): RatioReport {
  const cache = new Map<DiversityNode, string>();
  return distinctRatio(nodes, (n) => {
    let s = cache.get(n);
    if (s === undefined) cache.set(n, (s = outputsOf(n.program!, n)));
    return s;
  });
}

export interface CorrectSolutionsReport {
  /** Per agent: mean over all problems of that agent's distinct correct (privateScore = 1) canonical programs. */
  perAgent: Record<string, number>;
  /** Mean over all problems of distinct correct canonical programs (all agents together). */
  all: number;
}

/** Distinct correct solutions per problem (correct = privateScore = 1), averaged over every problem in `nodes`. */
export function distinctCorrectSolutions(
  nodes: readonly DiversityNode[],
  opts: DiversityOptions = {},
): CorrectSolutionsReport {
  const canon = opts.canonical ?? collapseWhitespace;
  const problems = [...groupBy(nodes, (n) => n.problemId).values()];
  const count = (xs: readonly DiversityNode[]) =>
    new Set(xs.filter((n) => n.program !== null && n.privateScore === 1).map((n) => canon(n.program!))).size;
  const perAgent: Record<string, number> = {};
  for (const a of agentsOf(nodes)) {
    perAgent[a] =
      problems.length === 0
        ? 0
        : problems.reduce((s, g) => s + count(g.filter((n) => n.agentId === a)), 0) / problems.length;
  }
  const all = problems.length === 0 ? 0 : problems.reduce((s, g) => s + count(g), 0) / problems.length;
  return { perAgent, all };
}

export interface UniqueSolvesReport {
  /** Per agent: problems that this agent, and no other, solved (privateScore = 1 on some node). */
  perAgent: Record<string, number>;
  /** Problems solved by exactly one agent. */
  total: number;
  /** Problems solved by at least one agent. */
  solved: number;
  problems: number;
}

/** Problems solved by only one agent (§3.11 per-agent unique solves). */
export function uniqueSolves(nodes: readonly DiversityNode[]): UniqueSolvesReport {
  const perAgent: Record<string, number> = {};
  for (const a of agentsOf(nodes)) perAgent[a] = 0;
  let total = 0;
  let solved = 0;
  const problems = groupBy(nodes, (n) => n.problemId);
  for (const g of problems.values()) {
    const solvers = new Set(g.filter((n) => n.privateScore === 1).map((n) => n.agentId));
    if (solvers.size > 0) solved++;
    if (solvers.size === 1) {
      total++;
      perAgent[[...solvers][0]!]! += 1;
    }
  }
  return { perAgent, total, solved, problems: problems.size };
}

export interface PassGapReport {
  pass1: number;
  passN: number;
  /** mean(passN − pass1) = passN − pass1 of the means. */
  gap: number;
}

/** pass@N − pass@1 (§3.9 definitions) averaged over problems; each problem's nodes form one tree. */
export function passGap(nodes: readonly DiversityNode[]): PassGapReport {
  const problems = [...groupBy(nodes, (n) => n.problemId).values()];
  if (problems.length === 0) return { pass1: 0, passN: 0, gap: 0 };
  let p1 = 0;
  let pn = 0;
  for (const g of problems) {
    const ev = g.map((n, i) => ({
      id: n.id ?? i,
      publicScore: n.publicScore ?? 0,
      privateScore: n.privateScore ?? null,
    }));
    p1 += pass1(ev);
    pn += passN(ev);
  }
  return { pass1: p1 / problems.length, passN: pn / problems.length, gap: (pn - p1) / problems.length };
}

/** Shannon entropy (nats) of a count vector; 0 for an empty or all-zero one. */
export function entropy(counts: readonly number[]): number {
  const total = counts.reduce((s, c) => s + c, 0);
  if (!(total > 0)) return 0;
  let h = 0;
  for (const c of counts) {
    if (c < 0 || !Number.isFinite(c)) throw new Error(`entropy: counts must be finite and ≥ 0, got ${c}.`);
    if (c > 0) h -= (c / total) * Math.log(c / total);
  }
  return h;
}

/** §3.11 entropy of the agent-selection counts over the nodes (nats; ln K when all agents are chosen equally). */
export function agentSelectionEntropy(nodes: readonly DiversityNode[], agents?: readonly string[]): number {
  const ids = agents ?? agentsOf(nodes);
  return entropy(ids.map((a) => nodes.filter((n) => n.agentId === a).length));
}

/**
 * Per-token policy entropy estimated from the log-probs of sampled tokens: mean over all tokens of −log π(y_t).
 * For tokens sampled from π at temperature 1 this is an unbiased Monte Carlo estimate of the mean per-token entropy.
 * Returns 0 when there are no tokens.
 */
export function tokenEntropyFromLogProbs(sequences: readonly (readonly number[] | Float32Array)[]): number {
  let s = 0;
  let n = 0;
  for (const seq of sequences) {
    for (let i = 0; i < seq.length; i++) {
      const lp = seq[i]!;
      if (!(lp <= 0) || !Number.isFinite(lp)) {
        throw new Error(`tokenEntropyFromLogProbs: log-prob ${lp} is not a finite number ≤ 0.`);
      }
      s -= lp;
      n++;
    }
  }
  return n === 0 ? 0 : s / n;
}

/** Shannon entropy (nats) of the empirical token distribution of the given token sequences (ids or strings). */
export function unigramEntropy(sequences: readonly (readonly (string | number)[])[]): number {
  const counts = new Map<string | number, number>();
  for (const seq of sequences) for (const t of seq) counts.set(t, (counts.get(t) ?? 0) + 1);
  return entropy([...counts.values()]);
}

export interface DiversityReport {
  editDistance: EditDistanceReport;
  distinctPrograms: RatioReport;
  behaviour: RatioReport | null;
  distinctCorrect: CorrectSolutionsReport;
  uniqueSolves: UniqueSolvesReport;
  passGap: PassGapReport;
  agentSelectionEntropy: number;
}

/** All program-level measures at once (token entropy needs log-probs, so it is computed separately). */
export function diversityReport(
  nodes: readonly DiversityNode[],
  opts: DiversityOptions & {
    outputsOf?: (program: string, node: DiversityNode) => string;
    agents?: readonly string[];
  } = {},
): DiversityReport {
  return {
    editDistance: pairwiseEditDistance(nodes, opts),
    distinctPrograms: distinctProgramRatio(nodes, opts),
    behaviour: opts.outputsOf ? behaviouralDiversity(nodes, opts.outputsOf) : null,
    distinctCorrect: distinctCorrectSolutions(nodes, opts),
    uniqueSolves: uniqueSolves(nodes),
    passGap: passGap(nodes),
    agentSelectionEntropy: agentSelectionEntropy(nodes, opts.agents),
  };
}
