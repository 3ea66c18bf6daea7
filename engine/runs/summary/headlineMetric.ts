/**
 * Each algorithm's headline metric: the held-out score its runs are judged by, shown as "held-out score" in the Runs
 * table, `mars-lab ls` and `show`. It belongs with the algorithm contract (trainer.ts) and is declared here, not on
 * the trainers, so that what only lists runs (the run index, the host, the renderer, Electron main) reads it without
 * loading an algorithm's model code. The type makes every algorithm declare one. The key is a metrics line's
 * `eval.<metric>` (runLoop.ts logs each metric of an evaluation so); tests check that each evaluation reports it.
 */
import type { RunConfig } from '../config/configSchema';

export interface HeadlineMetric {
  /** The metrics.jsonl name, e.g. 'eval.exactMatch'. */
  key: string;
  /** A few words for a column or a line, e.g. 'exact match'. */
  label: string;
}

export const HEADLINE_METRICS: { readonly [A in RunConfig['algorithm']]: HeadlineMetric } = {
  seqgrpo: { key: 'eval.accuracy', label: 'accuracy' },
  mars: { key: 'eval.exactMatch', label: 'exact match' },
  marti: { key: 'eval.pass1', label: 'pass@1' },
  chatgrpo: { key: 'eval.accuracy', label: 'accuracy' },
  martipy: { key: 'eval.pass1', label: 'pass@1' },
};

/** The headline metric of a run of `algorithm` (as run.json names it); undefined for an unknown or missing name. */
export function headlineMetricOf(algorithm: string | undefined): HeadlineMetric | undefined {
  return algorithm !== undefined && Object.hasOwn(HEADLINE_METRICS, algorithm)
    ? HEADLINE_METRICS[algorithm as RunConfig['algorithm']]
    : undefined;
}

/** A run's held-out score: its headline metric, labelled, with the last value logged (null before an evaluation). */
export interface HeadlineScore extends HeadlineMetric {
  value: number | null;
}

/** The held-out score of a run of `algorithm`, given the last value of a metric (undefined when never logged). */
export function headlineScore(
  algorithm: string | undefined,
  lastValue: (key: string) => number | null | undefined,
): HeadlineScore | undefined {
  const h = headlineMetricOf(algorithm);
  return h && { ...h, value: lastValue(h.key) ?? null };
}
