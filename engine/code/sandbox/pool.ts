/**
 * Several sandboxed programs at once, at most `workers` at a time: each sandbox is its own process, so the pool only
 * bounds how many run (the machine's cores by default) and keeps the results in input order.
 */
import os from 'node:os';
import type { SandboxLimits } from './limits';
import type { Isolation } from './isolation';
import { runInSandbox, type SandboxRequest, type SandboxResult } from './sandbox';

export function defaultWorkers(): number {
  return Math.max(1, os.availableParallelism());
}

/** Runs `items` through `work` with at most `workers` in flight; `onDone` is told after each one. */
export async function mapBounded<T, R>(
  items: readonly T[],
  workers: number,
  work: (item: T, index: number) => Promise<R>,
  onDone?: (finished: number, total: number) => void,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  let finished = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]!, i);
      finished++;
      onDone?.(finished, items.length);
    }
  };
  await Promise.all(Array.from({ length: Math.min(Math.max(1, workers), items.length) }, lane));
  return out;
}

/** Every request in the sandbox, `workers` at a time, results in input order. */
export function runAll(
  iso: Isolation,
  limits: SandboxLimits,
  requests: readonly SandboxRequest[],
  workers = defaultWorkers(),
  onDone?: (finished: number, total: number) => void,
): Promise<SandboxResult[]> {
  return mapBounded(requests, workers, (r) => runInSandbox(iso, limits, r), onDone);
}
