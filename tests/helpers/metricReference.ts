/** The reference the fast metric readers are tested against: parse every complete line, as the host once did. */
import { metricSeries } from '../../engine/runs/summary/decimate';
import { metricLineProblem, toMetricPoint } from '../../engine/runs/summary/metricPoint';

/** One metric's (x, y) pairs from a metrics.jsonl text: complete lines only, unparsable or invalid lines skipped. */
export function parsedColumn(text: string, key: string, x: 'step' | 'time'): { x: number[]; y: number[] } {
  const complete = text.slice(0, text.lastIndexOf('\n') + 1);
  const points = complete
    .split('\n')
    .filter((l) => l.trim())
    .flatMap((l) => {
      try {
        const v = JSON.parse(l) as unknown;
        return metricLineProblem(v) ? [] : [toMetricPoint(v as Record<string, unknown>)];
      } catch {
        return [];
      }
    });
  const s = metricSeries(points, key, { x });
  return { x: s.map((p) => p.x), y: s.map((p) => p.y) };
}
