/**
 * A preset's promise, checked. A preset may declare `success`: the held-out metric its description promises, the
 * threshold, and the seeds it must hold at (a promise that holds at one lucky seed is no promise). This runs the preset
 * unchanged except for its seed, at each declared seed, and compares the last evaluation of the metric with the
 * threshold. `npm run check:presets` runs it for every preset that declares one (the slow ones take minutes to hours);
 * tests/integration/presetPromise.test.ts runs it for the fast ones on every `npm test`.
 */
import { resolvePresetConfig, type Preset } from './presets';
import { startRun } from '../runLoop';

export interface SeedOutcome {
  seed: number;
  runId: string;
  /** The metric at the run's last evaluation; null if the run never evaluated it (a wrong metric name). */
  value: number | null;
  /** The step of that evaluation. */
  step: number | null;
  passed: boolean;
  seconds: number;
}

export interface PromiseCheck {
  preset: string;
  metric: string;
  atLeast: number;
  outcomes: SeedOutcome[];
  /** Every seed reached the threshold. */
  passed: boolean;
}

export async function checkPresetPromise(
  home: string,
  preset: Preset,
  opts: { seeds?: readonly number[]; onSeed?: (o: SeedOutcome) => void } = {},
): Promise<PromiseCheck> {
  const success = preset.success;
  if (!success) throw new Error(`preset '${preset.name}' declares no success criterion`);
  const outcomes: SeedOutcome[] = [];
  for (const seed of opts.seeds ?? success.seeds) {
    const config = resolvePresetConfig(preset.name, [`seed=${seed}`]);
    let value: number | null = null;
    let step: number | null = null;
    const t0 = performance.now();
    const run = await startRun(home, config, {
      preset: preset.name,
      onProgress: (p) => {
        const v = p.metrics[success.metric];
        if (typeof v === 'number') [value, step] = [v, p.step];
      },
    });
    const outcome: SeedOutcome = {
      seed,
      runId: run.runId,
      value,
      step,
      passed: value !== null && value >= success.atLeast,
      seconds: (performance.now() - t0) / 1000,
    };
    outcomes.push(outcome);
    opts.onSeed?.(outcome);
  }
  return {
    preset: preset.name,
    metric: success.metric,
    atLeast: success.atLeast,
    outcomes,
    passed: outcomes.every((o) => o.passed),
  };
}
