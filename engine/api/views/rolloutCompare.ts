/**
 * Compare two runs (or two steps of one) on the rollouts they logged, paired by prompt (issue 18: runs imported from
 * verl or MARTI have no checkpoints, so compareCheckpoints cannot evaluate them; their logged samples can still be
 * compared). No model runs: each run's trajectories.jsonl is read once (streamed, so the host keeps answering) into
 * per-step, per-prompt sums of scores, kept while the file is unchanged (an imported run never changes).
 *
 * A prompt is what a group shares: a MARS episode's question (questionId; verl's imported samples: the prompt's hash),
 * a seqgrpo group's input, a MARTI tree's task (taskId). Its score on a side is the mean score of that side's samples
 * of it (episode rewards; rollout rewards; the scores of a tree's nodes that have one), over one step or every step.
 * Only prompts both sides have are paired. Statistics are the project's own (engine/scoring/pairedStats.ts): McNemar's
 * exact test when every paired score is 0 or 1 (one 0/1 sample per prompt and side), and always the paired bootstrap
 * interval of the mean difference B − A, resampling prompts (a fixed seed, so the same question gives the same answer).
 */
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { mcnemar, pairedBootstrap } from '../../scoring/pairedStats';
import { Rng } from '../../random/prng';
import { RUN_FILES } from '../../runs/folder/home';
import { openHomeFile } from '../../runs/folder/homeFile';
import { UserError } from '../../base/userError';
import type { ApiParsedRequest, ApiResponse } from '../contract/contract';

/** Prompts listed in an answer, the largest differences first. */
export const PROMPTS_LISTED = 500;
/** A prompt's text as listed. */
const TEXT_KEEP = 300;
/** Runs whose rollouts are kept in memory. */
const RUNS_KEPT = 8;

interface Sums {
  sum: number;
  n: number;
}

export interface RunRollouts {
  /** The records' kind (mars.episode, seqgrpo.group, marti.tree); null when none could be read. */
  kind: string | null;
  /** Per step, per prompt key, the sum and count of sample scores. */
  byStep: Map<number, Map<string, Sums>>;
  /** A prompt's text by key (cut to TEXT_KEEP characters). */
  texts: Map<string, string>;
  records: number;
  /** Lines that were not JSON, or records of another kind than the first. */
  skipped: number;
}

interface Sample {
  kind: string;
  key: string;
  text: string;
  scores: number[];
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);

/** One trajectories.jsonl record as a prompt and its sample scores, or null for a record with none. */
export function promptSamples(record: unknown): Sample | null {
  if (!isObj(record)) return null;
  switch (record.kind) {
    case 'mars.episode':
      if (typeof record.questionId !== 'string' || !finite(record.reward)) return null;
      return {
        kind: record.kind,
        key: record.questionId,
        text: typeof record.question === 'string' ? record.question : record.questionId,
        scores: [record.reward],
      };
    case 'seqgrpo.group': {
      if (typeof record.input !== 'string' || !Array.isArray(record.rollouts)) return null;
      const scores = record.rollouts.flatMap((r) => (isObj(r) && finite(r.reward) ? [r.reward] : []));
      return { kind: record.kind, key: record.input, text: `${record.input} → ${String(record.target)}`, scores };
    }
    case 'marti.tree': {
      if (typeof record.taskId !== 'string' || !Array.isArray(record.nodes)) return null;
      // the root holds the problem (no program, score 0 by convention): only the nodes the search made count
      const scores = record.nodes.flatMap((n) => (isObj(n) && n.parentId !== null && finite(n.score) ? [n.score] : []));
      return {
        kind: record.kind,
        key: record.taskId,
        text: typeof record.statement === 'string' ? record.statement : record.taskId,
        scores,
      };
    }
    default:
      return null;
  }
}

/** Reads a run's trajectories.jsonl into per-step, per-prompt sums (complete lines only). */
export async function readRollouts(file: string): Promise<RunRollouts> {
  const out: RunRollouts = { kind: null, byStep: new Map(), texts: new Map(), records: 0, skipped: 0 };
  // a FIFO would block the host in open(), a link out of the run's folder be read elsewhere: refused (homeFile.ts)
  const fd = openHomeFile(file);
  if (fd === null) return out;
  const lines = readline.createInterface({
    input: fs.createReadStream('', { fd, encoding: 'utf8' }),
    crlfDelay: Infinity,
  });
  for await (const line of lines) {
    if (!line.trim()) continue;
    let record: unknown;
    try {
      record = JSON.parse(line);
    } catch {
      out.skipped++;
      continue;
    }
    const s = promptSamples(record);
    const step = isObj(record) && finite(record.step) ? record.step : null;
    if (!s || step === null || (out.kind !== null && s.kind !== out.kind)) {
      out.skipped++;
      continue;
    }
    out.kind = s.kind;
    out.records++;
    if (s.scores.length === 0) continue;
    let prompts = out.byStep.get(step);
    if (!prompts) out.byStep.set(step, (prompts = new Map<string, Sums>()));
    const sums = prompts.get(s.key) ?? { sum: 0, n: 0 };
    for (const x of s.scores) {
      sums.sum += x;
      sums.n++;
    }
    prompts.set(s.key, sums);
    if (!out.texts.has(s.key)) out.texts.set(s.key, s.text.slice(0, TEXT_KEEP));
  }
  return out;
}

/** The per-prompt sums of one step, or of every step pooled. */
function promptsOf(r: RunRollouts, step: number | undefined): Map<string, Sums> {
  if (step !== undefined) return r.byStep.get(step) ?? new Map<string, Sums>();
  const all = new Map<string, Sums>();
  for (const prompts of r.byStep.values()) {
    for (const [key, s] of prompts) {
      const t = all.get(key) ?? { sum: 0, n: 0 };
      t.sum += s.sum;
      t.n += s.n;
      all.set(key, t);
    }
  }
  return all;
}

type Side = { runId: string; step?: number | undefined };
type Answer = ApiResponse<'compareRollouts'>;

/** The comparison of side A and side B, given each side's rollouts. */
export function compareRolloutSides(a: Side, ra: RunRollouts, b: Side, rb: RunRollouts): Answer {
  for (const [side, r] of [
    [a, ra],
    [b, rb],
  ] as const) {
    if (r.kind === null) {
      throw new UserError(
        `run ${side.runId} logged no rollouts this view reads (trajectories.jsonl is empty or absent)`,
      );
    }
    if (r.byStep.size === 0) {
      throw new UserError(
        `run ${side.runId}: none of its ${r.records} ${r.kind} records has a score to pair${r.kind === 'marti.tree' ? ' (MARTI writes node scores only when it evaluates: import a save_path with all_public_scores.csv)' : ''}`,
      );
    }
    if (side.step !== undefined && !r.byStep.has(side.step)) {
      const have = [...r.byStep.keys()].sort((x, y) => x - y);
      throw new UserError(
        `run ${side.runId} has no rollouts at step ${side.step} (it has steps ${have.length > 12 ? `${have.slice(0, 12).join(', ')}, …` : have.join(', ')})`,
      );
    }
  }
  if (ra.kind !== rb.kind) {
    throw new UserError(
      `run ${a.runId} logged ${ra.kind} records and run ${b.runId} ${rb.kind}: rollouts pair only within one kind`,
    );
  }
  const pa = promptsOf(ra, a.step);
  const pb = promptsOf(rb, b.step);
  const shared = [...pa.keys()].filter((k) => pb.has(k));
  const meanOf = (s: Sums) => s.sum / s.n;
  const xs = shared.map((k) => meanOf(pa.get(k)!));
  const ys = shared.map((k) => meanOf(pb.get(k)!));
  const binary = shared.length > 0 && [...xs, ...ys].every((v) => v === 0 || v === 1);
  const avg = (v: number[]) => (v.length ? v.reduce((s, x) => s + x, 0) / v.length : null);
  const samples = (p: Map<string, Sums>) => [...p.values()].reduce((s, x) => s + x.n, 0);
  const rng = new Rng(0);
  const listed = shared
    .map((key, i) => ({
      key,
      text: ra.texts.get(key) ?? rb.texts.get(key) ?? key,
      a: { mean: xs[i]!, n: pa.get(key)!.n },
      b: { mean: ys[i]!, n: pb.get(key)!.n },
    }))
    .sort((p, q) => Math.abs(q.b.mean - q.a.mean) - Math.abs(p.b.mean - p.a.mean) || (p.key < q.key ? -1 : 1))
    .slice(0, PROMPTS_LISTED);
  return {
    kind: ra.kind!,
    a: { runId: a.runId, step: a.step ?? null, prompts: pa.size, samples: samples(pa) },
    b: { runId: b.runId, step: b.step ?? null, prompts: pb.size, samples: samples(pb) },
    shared: shared.length,
    onlyA: pa.size - shared.length,
    onlyB: pb.size - shared.length,
    meanA: avg(xs),
    meanB: avg(ys),
    outcome: binary ? 'binary' : 'real',
    mcnemar: binary
      ? mcnemar(
          xs.map((x) => x === 1),
          ys.map((y) => y === 1),
        )
      : null,
    scoreDiff: shared.length ? pairedBootstrap(xs, ys, { rng: () => rng.next() }) : null,
    prompts: listed,
  };
}

export interface RolloutCompareHost {
  handlers: {
    rolloutSteps: (req: ApiParsedRequest<'rolloutSteps'>) => Promise<ApiResponse<'rolloutSteps'>>;
    compareRollouts: (req: ApiParsedRequest<'compareRollouts'>) => Promise<ApiResponse<'compareRollouts'>>;
  };
}

/** The host's two methods over its run folders (`dirOf` names a run's folder or throws a UserError). */
export function createRolloutCompare(opts: { dirOf: (runId: string) => string }): RolloutCompareHost {
  const kept = new Map<string, { stamp: string; rollouts: Promise<RunRollouts> }>();
  const rolloutsOf = (runId: string): Promise<RunRollouts> => {
    const file = path.join(opts.dirOf(runId), RUN_FILES.trajectories);
    let stamp = 'absent';
    try {
      const st = fs.statSync(file);
      stamp = `${st.ino}:${st.size}:${st.mtimeMs}`;
    } catch {
      // no rollouts logged
    }
    const hit = kept.get(runId);
    if (hit && hit.stamp === stamp) {
      kept.delete(runId);
      kept.set(runId, hit); // most recently used last
      return hit.rollouts;
    }
    const rollouts = readRollouts(file);
    kept.set(runId, { stamp, rollouts });
    rollouts.catch(() => kept.delete(runId));
    while (kept.size > RUNS_KEPT) kept.delete(kept.keys().next().value!);
    return rollouts;
  };
  return {
    handlers: {
      async rolloutSteps({ runId }) {
        const r = await rolloutsOf(runId);
        return {
          kind: r.kind,
          steps: [...r.byStep.keys()].sort((x, y) => x - y),
          records: r.records,
          skipped: r.skipped,
        };
      },
      async compareRollouts({ a, b }) {
        const [ra, rb] = await Promise.all([rolloutsOf(a.runId), rolloutsOf(b.runId)]);
        return compareRolloutSides(a, ra, b, rb);
      },
    },
  };
}
