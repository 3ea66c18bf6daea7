/**
 * How a run is doing, for the run page and the Runs table: progress (step of total, ETA), why it failed (from its
 * events, in words), and collapse warnings computed from its metrics with the thresholds stated in HEALTH_RULES.
 * Pure functions of what the host sends (run summaries, events, getRunsMetricSeries' progress), no calls of their own.
 */
import { seconds } from './format';

type Stats = { last: number | null; min: number | null; max: number | null };

/** "40 of 200 steps (20 %)", or "40 steps" without a known total. */
export function stepOfTotal(step: number | null | undefined, total: number | null | undefined): string {
  const s = step ?? 0;
  if (!total) return `${s} step${s === 1 ? '' : 's'}`;
  return `${s} of ${total} steps (${Math.floor((100 * s) / total)} %)`;
}

/** Seconds left at the recent pace, or null when it cannot be told (no total, no pace, or done). */
export function etaSeconds(
  step: number | null | undefined,
  total: number | null | undefined,
  secondsPerStep: number | null | undefined,
): number | null {
  if (!total || secondsPerStep === null || secondsPerStep === undefined || !Number.isFinite(secondsPerStep)) {
    return null;
  }
  const left = total - (step ?? 0);
  return left > 0 ? left * secondsPerStep : null;
}

export function etaText(eta: number | null): string {
  return eta === null ? '' : `about ${seconds(eta).replace(/^≈/, '')} left`;
}

/** The recorded reason a run failed or was interrupted: the last status event's error or message. */
export function failureReason(
  events: readonly Record<string, unknown>[],
): { status: string; reason: string; step: number | null } | null {
  for (let i = events.length - 1; i >= 0; i--) {
    const e = events[i]!;
    if (e.type !== 'status') continue;
    if (e.status !== 'failed' && e.status !== 'interrupted') return null;
    const reason =
      typeof e.error === 'string' ? e.error : typeof e.message === 'string' ? e.message : 'no reason was recorded';
    return { status: String(e.status), reason, step: typeof e.step === 'number' ? e.step : null };
  }
  return null;
}

/** A value from a JSON record as text: objects and arrays as JSON (never "[object Object]"), the rest as String() writes it. */
export function valueText(v: unknown): string {
  if (
    typeof v === 'string' ||
    typeof v === 'number' ||
    typeof v === 'boolean' ||
    typeof v === 'bigint' ||
    v === undefined
  ) {
    return String(v);
  }
  return JSON.stringify(v) ?? typeof v;
}

/** One events.jsonl line in words, for the events table (what the raw JSON said, readable). */
export function describeEvent(record: Record<string, unknown>): string {
  const { time: _time, type, ...rest } = record;
  const step = typeof rest.step === 'number' ? ` at step ${rest.step}` : '';
  if (type === 'status') {
    const why =
      typeof rest.error === 'string' ? `: ${rest.error}` : typeof rest.message === 'string' ? `: ${rest.message}` : '';
    const pid = typeof rest.pid === 'number' && rest.status === 'running' ? ` (process ${rest.pid})` : '';
    return `${String(rest.status)}${step}${pid}${why}`;
  }
  if (type === 'resumed') {
    return `resumed from step ${valueText(rest.fromStep ?? '?')}${typeof rest.pid === 'number' ? ` (process ${rest.pid})` : ''}`;
  }
  if (type === 'warning' && typeof rest.message === 'string') return rest.message;
  if (type === 'checkpoint' && typeof rest.step === 'number') return `checkpoint written${step}`;
  const parts = Object.entries(rest).map(([k, v]) => `${k} ${valueText(v)}`);
  return parts.join(', ');
}

export interface HealthRule {
  metric: string;
  /** The threshold, in words, as shown with the warning. */
  threshold: string;
  check(stats: Stats): string | null;
}

const pct = (x: number) => `${Math.round(x * 100)} %`;

/**
 * Collapse warnings: each reads one metric's summary (last, min, max over the run) and says what it sees, with its
 * threshold. Thresholds are rules of thumb, stated so a reader can judge them.
 */
export const HEALTH_RULES: readonly HealthRule[] = [
  {
    metric: 'zeroAdvantageShare',
    threshold: 'last value ≥ 90 %',
    check: (s) =>
      s.last !== null && s.last >= 0.9
        ? `${pct(s.last)} of samples have zero advantage: their groups scored alike, so the step teaches almost nothing (the task is solved, or too hard at this temperature)`
        : null,
  },
  {
    metric: 'eval.div.distinctPrograms',
    threshold: 'last ≤ half the run’s highest',
    check: (s) =>
      s.last !== null && s.max !== null && s.max > 0 && s.last <= s.max / 2
        ? `program diversity is falling: distinct programs ${pct(s.last)}, down from ${pct(s.max)}`
        : null,
  },
  {
    metric: 'eval.div.tokenEntropy',
    threshold: 'last ≤ half the run’s highest',
    check: (s) =>
      s.last !== null && s.max !== null && s.max > 0 && s.last <= s.max / 2
        ? `token entropy collapsed to ${s.last.toFixed(3)} nats, from ${s.max.toFixed(3)}: the policy samples nearly the same program every time`
        : null,
  },
  {
    metric: 'loss',
    threshold: 'last value NaN or infinite',
    check: (s) =>
      s.last === null ? 'the loss went NaN or infinite at the last step: lower rl.lr, or clip gradients harder' : null,
  },
  {
    metric: 'overflow',
    threshold: 'last value ≥ 50 %',
    check: (s) =>
      s.last !== null && s.last >= 0.5
        ? `${pct(s.last)} of episodes overflow the context: raise the context length or lower mars.maxTurns`
        : null,
  },
  {
    metric: 'truncatedShare',
    threshold: 'last value ≥ 50 %',
    check: (s) =>
      s.last !== null && s.last >= 0.5
        ? `${pct(s.last)} of programs were cut before their end token: their tests score a fragment; raise task.maxProgramTokens`
        : null,
  },
  {
    metric: 'clipFraction',
    threshold: 'last value ≥ 30 %',
    check: (s) =>
      s.last !== null && s.last >= 0.3
        ? `${pct(s.last)} of tokens were clipped: updates are too large for rl.clipEps (lower rl.lr)`
        : null,
  },
];

export interface HealthWarning {
  metric: string;
  threshold: string;
  message: string;
}

/** The warnings a run's metrics raise (summary statistics by name, as listRuns and getRun send them). */
export function healthWarnings(metrics: Readonly<Record<string, Stats>>): HealthWarning[] {
  const out: HealthWarning[] = [];
  for (const rule of HEALTH_RULES) {
    if (!Object.hasOwn(metrics, rule.metric)) continue;
    const message = rule.check(metrics[rule.metric]!);
    if (message) out.push({ metric: rule.metric, threshold: rule.threshold, message });
  }
  return out;
}
