import fs from 'node:fs';
import type { RunConfigInput } from '../../engine/runs/config/configSchema';

/** A seqgrpo config small enough that a step takes a few milliseconds. */
export function quickConfig(
  over: { steps?: number; checkpointEvery?: number; evalEvery?: number } = {},
): RunConfigInput {
  return {
    algorithm: 'seqgrpo',
    seed: 3,
    backend: 'wasm',
    model: { size: 'micro' },
    task: { kind: 'copy', symbols: 5, length: 3, groupSize: 8, promptsPerStep: 2 },
    rl: { lr: 3e-3 },
    budget: { steps: over.steps ?? 12 },
    eval: { every: over.evalEvery ?? 6, items: 8 },
    checkpoint: { every: over.checkpointEvery ?? 4 },
  };
}

/** metrics.jsonl lines without their wall-clock fields (time, timing.*), for comparing runs. */
export function metricLines(file: string): Record<string, number>[] {
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const { time: _t, ...rest } = JSON.parse(l) as Record<string, number>;
      return Object.fromEntries(Object.entries(rest).filter(([k]) => !k.startsWith('timing.')));
    });
}
