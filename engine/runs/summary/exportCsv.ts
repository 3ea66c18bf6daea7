/** metrics.jsonl as CSV, every line and every metric, for spreadsheets and pandas. */
import { metricNames, metricValue } from './metricPoint';

const NEEDS_QUOTES = /[",\r\n]|^\s|\s$/;

function csvField(text: string): string {
  return NEEDS_QUOTES.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function csvValue(value: unknown): string {
  if (value === undefined) return '';
  // A writer's NaN arrives as JSON null; "NaN" keeps it apart from "not logged at this step" (empty).
  if (value === null) return 'NaN';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string') return csvField(value);
  return csvField(JSON.stringify(value));
}

/** Columns: step, time, then every other field in the order first seen; a field a line lacks is left empty. */
export function metricsToCsv(records: readonly Readonly<Record<string, unknown>>[]): string {
  const names: string[] = [];
  const seen = new Set<string>();
  for (const r of records) {
    for (const name of metricNames(r)) {
      if (!seen.has(name)) {
        seen.add(name);
        names.push(name);
      }
    }
  }
  const columns = ['step', 'time', ...names];
  const lines = [columns.map(csvField).join(',')];
  // Own properties only: a line without a "toString" metric has an empty cell there, not Object's method.
  for (const r of records) lines.push(columns.map((c) => csvValue(metricValue(r, c))).join(','));
  return lines.join('\n') + '\n';
}
