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

/**
 * Keep the numeric fields (null as NaN); strings and nested values are not metrics. Every name is an own property
 * (defined, not assigned): a metric named "__proto__" stays a metric instead of a prototype change, and one named
 * "constructor" or "toString" is found by own-property lookups (see `hasMetric`).
 */
export function toMetricPoint(record: Record<string, unknown>): MetricPoint {
  const point: MetricPoint = { step: Number(record.step), time: NaN };
  for (const [name, value] of Object.entries(record)) {
    if (typeof value === 'number') setMetric(point, name, value);
    else if (value === null) setMetric(point, name, NaN);
  }
  return point;
}

/** Sets a field of a record used as a map by name as an own data property, whatever the name ("__proto__" included). */
export function setOwn<T>(map: Record<string, T>, name: string, value: T): void {
  Object.defineProperty(map, name, { value, writable: true, enumerable: true, configurable: true });
}

export function setMetric(point: Record<string, number>, name: string, value: number): void {
  setOwn(point, name, value);
}

/** A point's own value for a metric, or undefined: never an inherited member such as `constructor` or `toString`. */
export function metricValue(point: Readonly<Record<string, unknown>>, name: string): unknown {
  return Object.hasOwn(point, name) ? point[name] : undefined;
}

/** Metric names of a point, i.e. every field but step and time. */
export function metricNames(point: Readonly<Record<string, unknown>>): string[] {
  return Object.keys(point).filter((k) => k !== 'step' && k !== 'time');
}

/**
 * The own entry `name` of a record used as a map by metric name, created with `make()` when absent. Defined, not
 * assigned, and looked up as an own property: "constructor" is not Object, "__proto__" is not the prototype.
 */
export function ownEntry<T>(map: Record<string, T>, name: string, make: () => T): T {
  if (Object.hasOwn(map, name)) return map[name]!;
  const value = make();
  setOwn(map, name, value);
  return value;
}
