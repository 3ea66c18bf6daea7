/**
 * Queries over one run's indexed trajectories.jsonl (trajectoryIndex.ts) for the inspectors: lines by position (the
 * newest page, older pages), one step's lines directly, or the lines that pass a filter (step range, reward, family,
 * agent, outcome, malformed, text), scanned newest first within a byte budget per request so a search over a file of
 * gigabytes answers in bounded time and memory; the answer says where to continue (`next`).
 *
 * What a filter means for each record kind (the trainers' records: engine/mars/trainer.ts trajectoryRecord,
 * engine/marti/trainer.ts treeRecord):
 * - MARS episode: reward = its reward; family = its question family; solved = reward 1; malformed = a turn with
 *   neither a search nor an answer; agent never matches (MARS has two systems, not agents).
 * - MARTI tree: reward = its best node score; agent = some node written by that agent; solved = some node passes all
 *   private tests; malformed = some node's program did not parse; family never matches.
 * - text: a case-insensitive substring of the record's texts (question, answer, gold, turns, System 1 outputs; the
 *   statement, task, programs, completions, feedback).
 */
import { linesOfStep, readTrajectoryLines, stepSpan, type TrajectoryIndex } from './trajectoryIndex';

export interface TrajectoryFilter {
  stepMin?: number | undefined;
  stepMax?: number | undefined;
  rewardMin?: number | undefined;
  rewardMax?: number | undefined;
  family?: string | undefined;
  agent?: string | undefined;
  outcome?: 'solved' | 'unsolved' | undefined;
  malformed?: boolean | undefined;
  text?: string | undefined;
}

export interface TrajectoryFacts {
  reward: number | null;
  family: string | null;
  agents: string[];
  solved: boolean;
  malformed: boolean;
  texts: string[];
}

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string[] => (typeof v === 'string' ? [v] : []);

/** What the filters look at in one record; null for a record of no known kind (or an unreadable line). */
export function trajectoryFacts(r: unknown): TrajectoryFacts | null {
  if (!isRec(r)) return null;
  if (r['kind'] === 'mars.episode') {
    const turns = arr(r['turns']).filter(isRec);
    const reward = typeof r['reward'] === 'number' ? r['reward'] : null;
    return {
      reward,
      family: typeof r['family'] === 'string' ? r['family'] : null,
      agents: [],
      solved: reward === 1,
      malformed: turns.some(
        (t) => t['query'] === null && !(typeof t['text'] === 'string' && t['text'].includes('<answer>')),
      ),
      texts: [
        ...str(r['questionId']),
        ...str(r['question']),
        ...str(r['answer']),
        ...arr(r['gold']).flatMap(str),
        ...turns.flatMap((t) => [
          ...str(t['text']),
          ...str(t['info']),
          ...arr(t['bins'])
            .filter(isRec)
            .flatMap((b) => str(b['output'])),
        ]),
      ],
    };
  }
  if (r['kind'] === 'marti.tree') {
    const nodes = arr(r['nodes']).filter(isRec);
    const scores = nodes
      .filter((n) => n['parentId'] !== null)
      .map((n) => (typeof n['score'] === 'number' ? n['score'] : 0));
    return {
      reward: scores.length ? Math.max(...scores) : null,
      family: null,
      agents: [...new Set(nodes.flatMap((n) => str(n['agent'])))],
      solved: nodes.some(
        (n) => isRec(n['private']) && typeof n['private']['score'] === 'number' && n['private']['score'] >= 1,
      ),
      malformed: nodes.some((n) => typeof n['parseError'] === 'string'),
      texts: [
        ...str(r['treeId']),
        ...str(r['taskId']),
        ...str(r['statement']),
        ...nodes.flatMap((n) => [...str(n['completion']), ...str(n['program']), ...str(n['feedback'])]),
      ],
    };
  }
  return null;
}

/** Whether a filter needs a record's content (beyond its step). */
export function filtersContent(f: TrajectoryFilter): boolean {
  return (
    f.rewardMin !== undefined ||
    f.rewardMax !== undefined ||
    f.family !== undefined ||
    f.agent !== undefined ||
    f.outcome !== undefined ||
    f.malformed !== undefined ||
    f.text !== undefined
  );
}

export function matchesFilter(r: unknown, f: TrajectoryFilter): boolean {
  if (!filtersContent(f)) return true;
  const x = trajectoryFacts(r);
  if (!x) return false;
  if (f.rewardMin !== undefined && (x.reward === null || x.reward < f.rewardMin)) return false;
  if (f.rewardMax !== undefined && (x.reward === null || x.reward > f.rewardMax)) return false;
  if (f.family !== undefined && x.family !== f.family) return false;
  if (f.agent !== undefined && !x.agents.includes(f.agent)) return false;
  if (f.outcome !== undefined && x.solved !== (f.outcome === 'solved')) return false;
  if (f.malformed !== undefined && x.malformed !== f.malformed) return false;
  if (f.text !== undefined) {
    const needle = f.text.toLowerCase();
    if (!x.texts.some((t) => t.toLowerCase().includes(needle))) return false;
  }
  return true;
}

/** Bytes of lines one filtered request reads at most before it answers with where to continue. */
export const FILTER_BYTE_BUDGET = 48 << 20;
/** Lines read per batch while filtering. */
const BATCH = 64;

export interface FilteredPage {
  /** Positions (0 = first line) of the matching lines, ascending, aligned with `records`. */
  positions: number[];
  records: unknown[];
  /** Where to continue towards older lines (pass as `before`); null when every line in range was looked at. */
  next: number | null;
  /** Lines looked at by this request. */
  scanned: number;
}

/**
 * Up to `limit` lines before position `before` (exclusive) that pass `filter`, newest first in the scan and returned
 * oldest first.
 */
export function filterTrajectories(
  index: TrajectoryIndex,
  filter: TrajectoryFilter,
  before: number,
  limit: number,
  budget = FILTER_BYTE_BUDGET,
): FilteredPage {
  const total = index.starts.length;
  let at = Math.min(before, total) - 1;
  const lo = filter.stepMin;
  const hi = filter.stepMax;
  const inRange = (p: number): boolean => {
    const s = index.steps[p]!;
    return (lo === undefined || s >= lo) && (hi === undefined || s <= hi);
  };
  const found: { position: number; record: unknown }[] = [];
  let bytes = 0;
  let scanned = 0;
  while (at >= 0 && found.length < limit && bytes < budget) {
    const batch: number[] = [];
    while (at >= 0 && batch.length < BATCH && bytes < budget) {
      if (inRange(at)) {
        batch.push(at);
        bytes += index.ends[at]! - index.starts[at]!;
      }
      at--;
    }
    if (batch.length === 0) continue;
    batch.reverse();
    const records = readTrajectoryLines(index, batch);
    scanned += batch.length;
    // newest first within the batch
    for (let k = records.length - 1; k >= 0 && found.length < limit; k--) {
      const record = records[k];
      if (matchesFilter(record, filter)) found.push({ position: batch[k]!, record });
      else continue;
      if (found.length === limit) at = batch[k]! - 1;
    }
  }
  found.reverse();
  // `at` is the next position not yet looked at (lines between the last match and the batch's start are looked at again next time: harmless)
  return {
    positions: found.map((f) => f.position),
    records: found.map((f) => f.record),
    next: at >= 0 ? at + 1 : null,
    scanned,
  };
}

export interface TrajectoryRequest {
  offset: number;
  limit: number;
  step?: number | undefined;
  filter?: TrajectoryFilter | undefined;
  before?: number | undefined;
}

export interface TrajectoryAnswer {
  total: number;
  offset: number;
  records: unknown[];
  steps: { first: number | null; last: number | null; count: number };
  step?: number | null;
  stepEnd?: number;
  positions?: number[];
  next?: number | null;
  scanned?: number;
}

/** One getTrajectories request over an up-to-date index (engine/api/contract/contract.ts describes the fields). */
export function queryTrajectories(index: TrajectoryIndex, req: TrajectoryRequest): TrajectoryAnswer {
  const total = index.starts.length;
  const steps = stepSpan(index);
  if (req.filter || (req.step !== undefined && req.before !== undefined)) {
    const filter: TrajectoryFilter = { ...req.filter };
    if (req.step !== undefined) {
      filter.stepMin = req.step;
      filter.stepMax = req.step;
    }
    const page = filterTrajectories(index, filter, req.before ?? total, req.limit);
    return {
      total,
      offset: page.positions[0] ?? 0,
      records: page.records,
      steps,
      positions: page.positions,
      next: page.next,
      scanned: page.scanned,
    };
  }
  if (req.step !== undefined) {
    const lines = linesOfStep(index, req.step);
    if (!lines) return { total, offset: total, records: [], steps, step: null, stepEnd: total };
    const end = Math.min(lines.end, lines.first + req.limit);
    const positions = Array.from({ length: end - lines.first }, (_, i) => lines.first + i);
    return {
      total,
      offset: lines.first,
      records: readTrajectoryLines(index, positions),
      steps,
      step: lines.step,
      stepEnd: lines.end,
    };
  }
  const end = Math.min(total, req.offset + req.limit);
  const positions = Array.from({ length: Math.max(0, end - req.offset) }, (_, i) => req.offset + i);
  return { total, offset: req.offset, records: readTrajectoryLines(index, positions), steps };
}
