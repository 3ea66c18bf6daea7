/**
 * JSON at the host's edges: numbers JSON cannot carry (NaN, infinities) become null before they leave the host, as JSON
 * would make them, so IPC and the socket carry the same values; and the check that a parsed line is an object. Apart
 * from the methods because the host's events and several resources' answers share them.
 */
import type { MetricPoint } from '../../runs/summary/metricPoint';
import type { RunEvent } from '../../runs/watch/watcher';
import type { ApiEvent, ApiMetricPoint } from '../contract/contract';

// Compile-time tie between the watcher's events and the contract's: every RunEvent, with its metrics made JSON-safe,
// is an ApiEvent. If the watcher grows a member, this fails until contract.ts describes it.
type JsonSafe<E> = E extends { type: 'metrics'; points: MetricPoint[] }
  ? Omit<E, 'points'> & { points: ApiMetricPoint[] }
  : E;
const runEventFits: (event: JsonSafe<RunEvent>) => ApiEvent = (event) => event;
void runEventFits;

/** NaN and infinities become null, as JSON would make them, so IPC and the socket carry the same values. */
function jsonSafePoint(point: MetricPoint): ApiMetricPoint {
  const out: ApiMetricPoint = { step: point.step, time: Number.isFinite(point.time) ? point.time : null };
  for (const [name, value] of Object.entries(point)) {
    if (name !== 'step' && name !== 'time') out[name] = Number.isFinite(value) ? value : null;
  }
  return out;
}

export function jsonSafeNumbers<T extends Record<string, number>>(record: T): Record<string, number | null> {
  return Object.fromEntries(Object.entries(record).map(([k, v]) => [k, Number.isFinite(v) ? v : null]));
}

export function toApiEvent(event: RunEvent): ApiEvent {
  if (event.type === 'metrics') return { ...event, points: event.points.map(jsonSafePoint) };
  return event;
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
