/**
 * The trajectories.jsonl records the inspectors read, as the trainers write them, plus the run loop's `step`: their
 * types are the records' schemas' (engine/records/, `import type` only, so zod never reaches the page). The host sends
 * them as unknown JSON; the guards below check the few fields the views rely on, so a record of another kind (or a
 * damaged line, which the host sends as { unreadable, line }) is skipped rather than drawn wrong.
 */
import type {
  MarsBin,
  MarsTurn,
  PosteriorSummary,
  StoredTrajectoryLineOf,
  TestOutcome,
  MartiNode,
} from '../../../engine/records';

export type { MarsBin, MarsTurn, MartiNode, PosteriorSummary, TestOutcome };

// ---- seqgrpo and chatgrpo -------------------------------------------------------------------------------------------

/** A group of G replies to one prompt at one step (engine/records/seqgrpo.ts): seqgrpo's symbols, chatgrpo's text. */
export type ReplyGroup = StoredTrajectoryLineOf<'seqgrpo.group'>;

export function isReplyGroup(r: unknown): r is ReplyGroup {
  const x = r as Partial<ReplyGroup> | null;
  return (
    !!x &&
    x.kind === 'seqgrpo.group' &&
    typeof x.step === 'number' &&
    typeof x.input === 'string' &&
    Array.isArray(x.rollouts)
  );
}

// ---- MARS ------------------------------------------------------------------------------------------------------------

/**
 * A MARS episode as trajectories.jsonl holds it (engine/records/mars.ts), with the run loop's `step`. Evaluation
 * episodes, shown in Compare, come without one.
 */
export type MarsEpisode = StoredTrajectoryLineOf<'mars.episode'>;

export function isMarsEpisode(r: unknown): r is MarsEpisode {
  const x = r as Partial<MarsEpisode> | null;
  return (
    !!x &&
    x.kind === 'mars.episode' &&
    typeof x.step === 'number' &&
    typeof x.questionId === 'string' &&
    Array.isArray(x.turns)
  );
}

/** The settings of a run's config the inspector needs to redraw System 1's windows (with the schema's defaults). */
export interface MarsWindowSettings {
  sys1PromptMax: number;
  purposeMax: number;
  missingPurpose: 'query' | 'empty';
  sepCost: number;
  packing: string;
}

export function marsWindowSettings(config: unknown): MarsWindowSettings {
  const m = (config as { mars?: Record<string, unknown> } | null)?.mars ?? {};
  const n = (v: unknown, d: number): number => (typeof v === 'number' && Number.isFinite(v) ? v : d);
  return {
    sys1PromptMax: n(m['sys1PromptMax'], 256),
    purposeMax: n(m['purposeMax'], 24),
    missingPurpose: m['missingPurpose'] === 'empty' ? 'empty' : 'query',
    sepCost: n(m['sepCost'], 1),
    packing: typeof m['packing'] === 'string' ? m['packing'] : 'ffd',
  };
}

/**
 * System 1's window capacity for one search (docs/algorithms.md §2.3), as the trainer recorded it (the host fills it in
 * for older records: engine/runs/trajectories/trajectoryPages.ts withCapacities), and the purpose's share of the window; null
 * when the record has none (a search without results).
 */
export function sys1Capacity(
  turn: Pick<MarsTurn, 'capacity'>,
  s: MarsWindowSettings,
): { capacity: number | null; purposeTokens: number | null } {
  if (typeof turn.capacity === 'number') {
    return { capacity: turn.capacity, purposeTokens: s.sys1PromptMax - 3 - turn.capacity };
  }
  return { capacity: null, purposeTokens: null };
}

/** The G rollouts of one question at one step. */
export interface EpisodeGroup {
  key: string;
  step: number;
  questionId: string;
  question: string;
  family: string;
  episodes: MarsEpisode[];
  meanReward: number;
}

export const groupKey = (step: number, questionId: string): string => `${step}|${questionId}`;

/** Groups episodes by (step, question), in the order their first episode appears. */
export function groupEpisodes(episodes: readonly MarsEpisode[]): EpisodeGroup[] {
  const groups = new Map<string, EpisodeGroup>();
  for (const e of episodes) {
    const key = groupKey(e.step, e.questionId);
    let g = groups.get(key);
    if (!g) {
      groups.set(
        key,
        (g = {
          key,
          step: e.step,
          questionId: e.questionId,
          question: e.question,
          family: e.family,
          episodes: [],
          meanReward: 0,
        }),
      );
    }
    g.episodes.push(e);
  }
  for (const g of groups.values()) g.meanReward = g.episodes.reduce((s, e) => s + e.reward, 0) / g.episodes.length;
  return [...groups.values()];
}

/** A group's rollouts sorted by reward, best first; ties by F1, then by their position in the group (stable). */
export function byReward(episodes: readonly MarsEpisode[]): { episode: MarsEpisode; index: number }[] {
  return episodes
    .map((episode, index) => ({ episode, index }))
    .sort((a, b) => b.episode.reward - a.episode.reward || b.episode.f1 - a.episode.f1 || a.index - b.index);
}

/** The MARS question families: the engine's one list (engine/pure/marsFamilies.ts). */
export { MARS_FAMILIES } from '../../../engine/pure/marsFamilies';

/** The text of a page a search found, as the host sends it (getTrajectories `pages`, by `w<seed>:<page id>`). */
export interface PageText {
  title: string;
  text: string;
}
export type PageTexts = Readonly<Record<string, PageText>>;

/** A page's key in PageTexts: its world's seed (the `w<seed>:` of the question id) and its id. */
export function pageTextKey(questionId: string, pageId: string): string {
  return `${questionId.split(':')[0]}:${pageId}`;
}

/** A piece of text, marked where it is (part of) a gold answer. */
export interface MarkedPiece {
  text: string;
  gold: boolean;
}

const words = (text: string): string[] => text.toLowerCase().split(/\s+/).filter(Boolean);

/**
 * Splits `text` (the worlds' texts are space-separated words) into pieces, marking every occurrence of a gold answer
 * as whole words, case-insensitively; the longest answer wins where several start at the same word.
 */
export function markGold(text: string, gold: readonly string[]): MarkedPiece[] {
  const tokens = text.split(/(\s+)/);
  const wordsAt: { word: string; index: number }[] = [];
  tokens.forEach((t, index) => {
    if (t && !/^\s+$/.test(t)) wordsAt.push({ word: t.toLowerCase(), index });
  });
  const answers = gold
    .map(words)
    .filter((a) => a.length > 0)
    .sort((a, b) => b.length - a.length);
  const marked = new Set<number>();
  for (let i = 0; i < wordsAt.length; i++) {
    for (const a of answers) {
      if (i + a.length <= wordsAt.length && a.every((w, k) => wordsAt[i + k]!.word === w)) {
        for (let k = 0; k < a.length; k++) marked.add(i + k);
        break;
      }
    }
  }
  const pieces: MarkedPiece[] = [];
  const markedToken = new Set([...marked].map((i) => wordsAt[i]!.index));
  tokens.forEach((t, index) => {
    if (!t) return;
    // a space between two marked words belongs to the mark
    const gold =
      markedToken.has(index) || (/^\s+$/.test(t) && markedToken.has(index - 1) && markedToken.has(index + 1));
    const last = pieces.at(-1);
    if (last && last.gold === gold) last.text += t;
    else pieces.push({ text: t, gold });
  });
  return pieces;
}

/** Whether a gold answer appears in `text` (as whole words). */
export function hasGold(text: string | null | undefined, gold: readonly string[]): boolean {
  return !!text && markGold(text, gold).some((p) => p.gold);
}

/** The first `take` words of a page (what System 1 read of it) and the rest (cut off by the window). */
export function splitTaken(text: string, take: number): { read: string; cut: string } {
  const all = text.split(' ');
  return { read: all.slice(0, take).join(' '), cut: all.slice(take).join(' ') };
}

// ---- MARTI -----------------------------------------------------------------------------------------------------------

/**
 * A MARTI search tree as trajectories.jsonl or live.json holds it (engine/records/marti.ts), with the run loop's
 * `step`; a live tree has `live: true` and its node `budget`. Evaluation trees, shown in Compare, come without a step.
 */
export type MartiTreeRecord = StoredTrajectoryLineOf<'marti.tree'>;

export function isMartiTree(r: unknown): r is MartiTreeRecord {
  const x = r as Partial<MartiTreeRecord> | null;
  return (
    !!x &&
    x.kind === 'marti.tree' &&
    typeof x.step === 'number' &&
    typeof x.treeId === 'string' &&
    Array.isArray(x.nodes)
  );
}

/** Nodes of a tree after the first k expansions: the root and nodes 1…k (node ids are the expansion order). */
export function nodesUpTo(tree: MartiTreeRecord, k: number): MartiNode[] {
  return tree.nodes.filter((n) => n.parentId === null || n.id <= k);
}

export interface PlacedNode {
  node: MartiNode;
  x: number;
  y: number;
}

/**
 * A tidy top-down layout: leaves take consecutive columns in child order, a parent sits over the middle of its
 * children, rows are depths. Coordinates are in column/row units; the view scales them.
 */
export function layoutTree(nodes: readonly MartiNode[]): { placed: PlacedNode[]; columns: number; rows: number } {
  const children = new Map<number, MartiNode[]>();
  let root: MartiNode | undefined;
  for (const n of nodes) {
    if (n.parentId === null) root = n;
    else {
      const list = children.get(n.parentId) ?? [];
      list.push(n);
      children.set(n.parentId, list);
    }
  }
  const placed: PlacedNode[] = [];
  if (!root) return { placed, columns: 0, rows: 0 };
  let next = 0;
  let rows = 0;
  const place = (n: MartiNode): number => {
    rows = Math.max(rows, n.depth + 1);
    const kids = (children.get(n.id) ?? []).sort((a, b) => a.id - b.id);
    let x: number;
    if (kids.length === 0) x = next++;
    else {
      const xs = kids.map(place);
      x = (xs[0]! + xs.at(-1)!) / 2;
    }
    placed.push({ node: n, x, y: n.depth });
    return x;
  };
  place(root);
  return { placed: placed.sort((a, b) => a.node.id - b.node.id), columns: Math.max(1, next), rows };
}

/** Which agent solved which problem in the loaded trees: per task, per agent, the best private score of its nodes. */
export function solvedMatrix(trees: readonly MartiTreeRecord[]): {
  agents: string[];
  rows: { taskId: string; statement: string; trees: number; best: Record<string, number | null> }[];
} {
  const agents = [...new Set(trees.flatMap((t) => t.agents))];
  const rows = new Map<
    string,
    { taskId: string; statement: string; trees: number; best: Record<string, number | null> }
  >();
  for (const t of trees) {
    let row = rows.get(t.taskId);
    if (!row) {
      rows.set(
        t.taskId,
        (row = {
          taskId: t.taskId,
          statement: t.statement,
          trees: 0,
          best: Object.fromEntries(agents.map((a) => [a, null])),
        }),
      );
    }
    row.trees++;
    for (const n of t.nodes) {
      if (n.agent === null) continue;
      const s = n.private?.score ?? 0;
      const before = row.best[n.agent];
      row.best[n.agent] = before === null || before === undefined ? s : Math.max(before, s);
    }
  }
  return {
    agents,
    rows: [...rows.values()].sort((a, b) => a.taskId.localeCompare(b.taskId, undefined, { numeric: true })),
  };
}

// ---- colours ---------------------------------------------------------------------------------------------------------

/** A colour for a score in [0, 1]: red (0) → amber → green (1). */
export function scoreColour(score: number | null | undefined): string {
  if (score === null || score === undefined || !Number.isFinite(score)) return '#c5cad3';
  const s = Math.max(0, Math.min(1, score));
  const hue = 4 + s * 126;
  return `hsl(${hue.toFixed(0)} 62% ${(46 + 6 * (1 - Math.abs(s - 0.5) * 2)).toFixed(0)}%)`;
}

/**
 * A background for a token's value. Log-probabilities: 0 (certain) is white, −6 and below full red. Advantages: blue
 * for positive, red for negative, saturated at ±2.
 */
export function tokenColour(value: number, mode: 'logProb' | 'advantage'): string {
  if (!Number.isFinite(value)) return 'transparent';
  if (mode === 'logProb') {
    const t = Math.max(0, Math.min(1, -value / 6));
    return `rgba(214, 69, 54, ${(0.05 + 0.6 * t).toFixed(3)})`;
  }
  const t = Math.max(-1, Math.min(1, value / 2));
  return t >= 0
    ? `rgba(31, 95, 191, ${(0.06 + 0.5 * t).toFixed(3)})`
    : `rgba(214, 69, 54, ${(0.06 - 0.5 * t).toFixed(3)})`;
}

/** The marker shapes agents get, in the order of the tree's agents. */
export const AGENT_MARKERS = ['circle', 'square', 'diamond', 'triangle', 'hexagon'] as const;
export type AgentMarker = (typeof AGENT_MARKERS)[number];
export function agentMarker(agents: readonly string[], agent: string | null): AgentMarker | 'root' {
  if (agent === null) return 'root';
  const i = agents.indexOf(agent);
  return AGENT_MARKERS[(i < 0 ? agents.length : i) % AGENT_MARKERS.length]!;
}

// ---- martipy ---------------------------------------------------------------------------------------------------------

/**
 * A martipy training step's tree of Python programs (engine/records/codeTree.ts `codeTreeRecordSchema`: the line
 * `mars-lab code tree --out` writes, each node with its advantage in the tree's GRPO group), with the run loop's `step`.
 */
export type CodeTreeStepRecord = StoredTrajectoryLineOf<'code.tree'>;

export function isCodeTreeStep(r: unknown): r is CodeTreeStepRecord {
  const x = r as Partial<CodeTreeStepRecord> | null;
  return (
    !!x &&
    x.kind === 'code.tree' &&
    typeof x.step === 'number' &&
    typeof x.task_id === 'string' &&
    Array.isArray(x.nodes) &&
    x.nodes.every((n) => typeof n.id === 'number' && typeof n.advantage === 'number')
  );
}
