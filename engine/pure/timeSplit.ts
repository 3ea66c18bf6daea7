/**
 * Where a training step's time goes (issue 33, item 4): each metrics.jsonl line's wall-clock time split into the parts
 * a person acts on — sampling (the policy generating), search (MARS's corpus search and page packing, MARTI's choice
 * of where the trees grow), scoring (MARTI's unit tests), the update, evaluation, checkpointing, and the rest — from the
 * `timing.*` metrics the trainers and the run loop (engine/runs/runLoop.ts) log. `timing.stepMs` is the time since the
 * previous line was written, so the checkpoint written after the previous step is part of this line's time
 * (`timing.checkpointMs`) and the parts add up to the line's interval; `other` is what no part measured (prompt
 * building, rewards, trajectory records, the live view), never negative.
 *
 * Pure (no imports): `mars-lab show` prints the mean split and the run page draws it per step as a stacked chart.
 */

export const TIME_PARTS = ['sampling', 'search', 'scoring', 'update', 'evaluation', 'checkpoint', 'other'] as const;
export type TimePart = (typeof TIME_PARTS)[number];

export type TimeSplit = Record<TimePart, number>;

/** What each part means, for a chart's legend and `show`. */
export const TIME_PART_TEXT: Record<TimePart, string> = {
  sampling: 'the policy generating (rollouts)',
  search: 'MARS: searching the corpus and packing pages; MARTI: choosing where the trees grow',
  scoring: 'running unit tests (MARTI)',
  update: 'the policy update',
  evaluation: 'held-out evaluation (on steps that evaluate)',
  checkpoint: 'writing the checkpoint after the previous step',
  other: 'the rest: prompts, rewards, records, the live view',
};

type Line = Readonly<Record<string, number>>;

const ms = (line: Line, key: string): number => {
  const v = line[key];
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : 0;
};

/** The line's time split in ms, or null for a line without `timing.stepMs` (logged before the split existed). */
export function timeSplitOf(algorithm: string | undefined, line: Line): TimeSplit | null {
  const step = ms(line, 'timing.stepMs');
  if (step === 0) return null;
  const parts: TimeSplit = {
    sampling: 0,
    search: 0,
    scoring: 0,
    update: ms(line, 'timing.updateMs'),
    evaluation: ms(line, 'timing.evalMs'),
    checkpoint: ms(line, 'timing.checkpointMs'),
    other: 0,
  };
  if (algorithm === 'mars') {
    parts.sampling = ms(line, 'timing.sys2GenerationMs') + ms(line, 'timing.sys1GenerationMs');
    parts.search = ms(line, 'timing.searchMs') + ms(line, 'timing.packingMs');
  } else if (algorithm === 'marti') {
    parts.sampling = ms(line, 'timing.generationMs');
    parts.search = ms(line, 'timing.selectionMs');
    parts.scoring = ms(line, 'timing.testMs');
  } else {
    parts.sampling = ms(line, 'timing.rolloutMs');
  }
  const measured = TIME_PARTS.reduce((s, p) => s + parts[p], 0);
  parts.other = Math.max(0, step - measured);
  return parts;
}

export interface MeanTimeSplit {
  /** Lines that carried a split. */
  steps: number;
  /** Mean ms per line of each part. */
  meanMs: TimeSplit;
  /** Each part's share of the summed time (0–1). */
  share: TimeSplit;
  /** Rollout tokens per second of sampling time, over the lines that logged both; null when none did. */
  tokensPerSec: number | null;
}

/** The mean split over a run's lines, or null when no line has one. */
export function meanTimeSplit(algorithm: string | undefined, lines: readonly Line[]): MeanTimeSplit | null {
  const sum = Object.fromEntries(TIME_PARTS.map((p) => [p, 0])) as TimeSplit;
  let steps = 0;
  let tokens = 0;
  let samplingMs = 0;
  for (const line of lines) {
    const split = timeSplitOf(algorithm, line);
    if (!split) continue;
    steps++;
    for (const p of TIME_PARTS) sum[p] += split[p];
    const t = ms(line, 'timing.rolloutTokens');
    if (t > 0 && split.sampling > 0) {
      tokens += t;
      samplingMs += split.sampling;
    }
  }
  if (steps === 0) return null;
  const total = TIME_PARTS.reduce((s, p) => s + sum[p], 0);
  const of = (f: (p: TimePart) => number) => Object.fromEntries(TIME_PARTS.map((p) => [p, f(p)])) as TimeSplit;
  return {
    steps,
    meanMs: of((p) => sum[p] / steps),
    share: of((p) => (total > 0 ? sum[p] / total : 0)),
    tokensPerSec: samplingMs > 0 ? tokens / (samplingMs / 1000) : null,
  };
}
