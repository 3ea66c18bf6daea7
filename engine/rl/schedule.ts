/**
 * Learning-rate schedules for the optimiser step (docs/algorithms.md §4 `lr`). Steps are 0-based: step s is the
 * (s+1)-th parameter update.
 */

export type LrSchedule =
  | { kind: 'constant'; lr: number }
  /** lr·(s+1)/warmupSteps for s < warmupSteps, then lr. The first step is not 0, so no update is wasted. */
  | { kind: 'linearWarmup'; lr: number; warmupSteps: number }
  /** The same warmup, then a half cosine from lr down to minLr at totalSteps, and minLr after that. */
  | { kind: 'cosine'; lr: number; minLr: number; warmupSteps: number; totalSteps: number };

function checkNonNegInt(what: string, x: number): void {
  if (!Number.isInteger(x) || x < 0) throw new Error(`lr schedule: ${what} must be an integer ≥ 0, got ${x}.`);
}

/** Throws, naming the field, when a schedule cannot be followed. */
export function validateSchedule(s: LrSchedule): void {
  if (!(s.lr >= 0) || !Number.isFinite(s.lr)) {
    throw new Error(`lr schedule: lr must be a finite number ≥ 0, got ${s.lr}.`);
  }
  if (s.kind === 'constant') return;
  checkNonNegInt('warmupSteps', s.warmupSteps);
  if (s.kind === 'linearWarmup') return;
  if (s.kind !== 'cosine') throw new Error(`lr schedule: unknown kind '${(s as { kind: string }).kind}'.`);
  if (!(s.minLr >= 0 && s.minLr <= s.lr)) throw new Error(`lr schedule: minLr must be in [0, lr], got ${s.minLr}.`);
  checkNonNegInt('totalSteps', s.totalSteps);
  if (s.totalSteps < s.warmupSteps) {
    throw new Error(`lr schedule: totalSteps (${s.totalSteps}) must be ≥ warmupSteps (${s.warmupSteps}).`);
  }
}

/** The learning rate for 0-based update `step`. */
export function lrAt(s: LrSchedule, step: number): number {
  checkNonNegInt('step', step);
  if (s.kind === 'constant') return s.lr;
  if (step < s.warmupSteps) return (s.lr * (step + 1)) / s.warmupSteps;
  if (s.kind === 'linearWarmup') return s.lr;
  const span = s.totalSteps - s.warmupSteps;
  const progress = span === 0 ? 1 : Math.min(1, (step - s.warmupSteps) / span);
  return s.minLr + (s.lr - s.minLr) * 0.5 * (1 + Math.cos(Math.PI * progress));
}
