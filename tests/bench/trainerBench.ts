/**
 * Step breakdowns of the MARS and MARTI trainers on their tiny presets (the suite's "MARS/MARTI step" part): a short
 * real run from the preset, in a temporary home, whose per-step `timing.*` metrics are summarised over the steps after
 * the first (which pays for compilation and caches): each phase's mean ms per step (means add up; MARTI updates only on
 * steps that filled its training batch, so a median would hide them), and the median, min and max of the whole step.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolvePresetConfig } from '../../engine/runs/presets/presets';
import { runFilePaths } from '../../engine/runs/folder/runFolder';
import { startRun } from '../../engine/runs/runLoop';
import { stat, type Stat } from './stats';

/** Each algorithm's phases, in the order of a step; `total` is their sum per step. */
export const PHASES = {
  mars: ['sys2GenerationMs', 'searchMs', 'packingMs', 'sys1GenerationMs', 'updateMs'],
  marti: ['selectionMs', 'generationMs', 'testMs', 'updateMs'],
} as const;

export interface StepBreakdown {
  preset: string;
  steps: number;
  /** Mean ms per step of each phase. */
  phases: Record<string, number>;
  /** Wall-clock ms per step: the gap between consecutive metrics lines. */
  total: Stat;
  /** Mean ms per step outside the named phases (bookkeeping, advantages, records, live trees, writing the step). */
  otherMs: number;
}

export async function benchTrainer(
  algorithm: keyof typeof PHASES,
  preset: string,
  steps: number,
): Promise<StepBreakdown> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), `mars-lab-bench-${algorithm}-`));
  try {
    const cfg = resolvePresetConfig(preset, ['eval.every=0']);
    const r = await startRun(home, cfg, { stopAfterStep: steps + 1 });
    const lines = fs
      .readFileSync(runFilePaths(r.dir).metrics, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, number>);
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
    const phases: Record<string, number> = {};
    for (const p of PHASES[algorithm]) phases[p] = mean(lines.slice(1).map((l) => l[`timing.${p}`] ?? 0));
    const walls = lines.slice(1).map((l, i) => 1000 * (l.time! - lines[i]!.time!));
    const named = Object.values(phases).reduce((a, b) => a + b, 0);
    return { preset, steps: walls.length, phases, total: stat(walls), otherMs: mean(walls) - named };
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}
