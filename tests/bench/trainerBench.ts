/**
 * Step breakdowns of the MARS and MARTI trainers on their tiny presets (the suite's "MARS/MARTI step" part): a short
 * real run from the preset, in a temporary home, whose per-step `timing.*` metrics are summarised (medians over the
 * steps after the first, which pays for compilation and caches).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { resolvePresetConfig } from '../../engine/runs/presets';
import { runFilePaths } from '../../engine/runs/runFolder';
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
  /** Median ms per step of each phase, and of their sum. */
  phases: Record<string, Stat>;
  total: Stat;
  /** The rest of the rollout not inside a named phase (MARS: bookkeeping, advantages, records). */
  otherRolloutMs?: Stat;
}

export async function benchTrainer(algorithm: keyof typeof PHASES, preset: string, steps: number): Promise<StepBreakdown> {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), `mars-lab-bench-${algorithm}-`));
  try {
    const cfg = resolvePresetConfig(preset, ['eval.every=0']);
    const r = await startRun(home, cfg, { stopAfterStep: steps + 1 });
    const lines = fs
      .readFileSync(runFilePaths(r.dir).metrics, 'utf8')
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as Record<string, number>)
      .slice(1);
    const phases: Record<string, Stat> = {};
    for (const p of PHASES[algorithm]) phases[p] = stat(lines.map((l) => l[`timing.${p}`] ?? NaN));
    const total = stat(lines.map((l) => PHASES[algorithm].reduce((s, p) => s + (l[`timing.${p}`] ?? 0), 0)));
    const out: StepBreakdown = { preset, steps: lines.length, phases, total };
    if (algorithm === 'mars') {
      out.otherRolloutMs = stat(lines.map((l) => l['timing.rolloutMs']! - PHASES.mars.slice(0, 4).reduce((s, p) => s + l[`timing.${p}`]!, 0)));
    }
    return out;
  } finally {
    fs.rmSync(home, { recursive: true, force: true });
  }
}
