/**
 * One line of metrics.jsonl: `{step, time, name: value, ...}`. JSON has no NaN, so a writer's NaN arrives as null;
 * it is read back as NaN because "the loss went NaN at step 500" is something a researcher needs to see.
 */

export interface MetricPoint {
  step: number;
  /** Seconds since the epoch when the step finished (NaN when the line had none). */
  time: number;
  [name: string]: number;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** For readJsonl's `validate`: the reason a parsed line is not a metrics record, or undefined. */
export function metricLineProblem(value: unknown): string | undefined {
  if (!isRecord(value)) return 'is not a JSON object';
  if (typeof value.step !== 'number' || !Number.isFinite(value.step)) return 'has no numeric "step"';
  return undefined;
}

/** Keep the numeric fields (null as NaN); strings and nested values are not metrics. */
export function toMetricPoint(record: Record<string, unknown>): MetricPoint {
  const point: MetricPoint = { step: Number(record.step), time: NaN };
  for (const [name, value] of Object.entries(record)) {
    if (typeof value === 'number') point[name] = value;
    else if (value === null) point[name] = NaN;
  }
  return point;
}

/** Metric names of a point, i.e. every field but step and time. */
export function metricNames(point: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(point).filter((k) => k !== 'step' && k !== 'time');
}
