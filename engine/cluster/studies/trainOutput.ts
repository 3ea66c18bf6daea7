/**
 * Reading what a study's runs say: the `mars-lab train --json` lines (progress, done) a child process or a Ray job's
 * log carries, the `mars-lab: …` line a failed run leaves on stderr, and a finished run's headline score from its
 * folder when that folder is readable here.
 */
import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import { readMetrics } from '../../runs/folder/metricsLog';
import { headlineScore, type HeadlineScore } from '../../runs/summary/headlineMetric';
import { runsDir } from '../../runs/folder/home';
import { headlineFromMetrics } from './studyPlan';

const progressLine = z.object({
  type: z.literal('progress'),
  runId: z.string(),
  step: z.number(),
  totalSteps: z.number(),
});
const doneLine = z.object({
  type: z.literal('done'),
  runId: z.string(),
  status: z.string(),
  step: z.number(),
  metrics: z.record(z.string(), z.unknown()),
});

export type TrainEvent = z.infer<typeof progressLine> | z.infer<typeof doneLine> | { type: 'error'; message: string };

/** One line of a train process's output as an event, or null for anything else (Ray's own lines, warnings). */
export function parseTrainLine(line: string): TrainEvent | null {
  const t = line.trim();
  if (t.startsWith('mars-lab: ')) return { type: 'error', message: t.slice('mars-lab: '.length) };
  if (!t.startsWith('{')) return null;
  let json: unknown;
  try {
    json = JSON.parse(t);
  } catch {
    return null;
  }
  const p = progressLine.safeParse(json);
  if (p.success) return p.data;
  const d = doneLine.safeParse(json);
  return d.success ? d.data : null;
}

/** Splits a stream of text chunks into whole lines. */
export function lineSplitter(onLine: (line: string) => void): { push: (text: string) => void; end: () => void } {
  let rest = '';
  return {
    push(text) {
      const parts = (rest + text).split('\n');
      rest = parts.pop()!;
      for (const p of parts) onLine(p);
    },
    end() {
      if (rest) onLine(rest);
      rest = '';
    },
  };
}

/** A run's headline score from its folder under `home`, when it exists here; else from its done line's metrics. */
export function runHeadline(
  home: string,
  runId: string,
  algorithm: string,
  doneMetrics?: Record<string, unknown>,
): HeadlineScore | null {
  const dir = path.join(runsDir(home), runId);
  if (fs.existsSync(path.join(dir, 'metrics.jsonl'))) {
    try {
      const { records } = readMetrics(dir);
      return headlineScore(algorithm, (key) => records.findLast((r) => Number.isFinite(r[key]))?.[key]) ?? null;
    } catch {
      // an unreadable folder: fall back to what the run printed
    }
  }
  return doneMetrics ? headlineFromMetrics(algorithm, doneMetrics) : null;
}
