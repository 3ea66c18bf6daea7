/** Options several commands share. */
import { InvalidArgumentError, Option } from 'commander';
import { BACKENDS } from '../tensor/backend';
import type { NativeOptions } from '../tensor/native/status';
import { WORKER_SLOTS_ENV } from '../tensor/native/addon';

export const homeOption = () =>
  new Option('--home <dir>', 'the mars-lab home folder (default: $MARS_LAB_HOME, else ~/mars-lab)');

export const backendOption = () =>
  new Option('--backend <name>', 'force a TensorFlow.js backend instead of the automatic choice').choices([
    ...BACKENDS,
  ]);

/** Repeatable `--set path=value` config overrides, collected in order. */
export const setOption = (example: string) =>
  new Option('--set <path=value>', `override a config field, e.g. --set ${example} (repeatable)`)
    .argParser((v: string, prev: string[] = []) => [...prev, v])
    .default([]);

/** A count flag's parser: a whole number from 1 up. */
export function positiveInt(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1) throw new InvalidArgumentError('expected a positive integer');
  return Number(v);
}

/** `--port N`'s parser: 0 to 65535 (0: the system picks a free port). */
export function portNumber(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) > 65535) {
    throw new InvalidArgumentError('expected a port number (0 picks a free one)');
  }
  return Number(v);
}

/** A count flag's parser: a whole number from 1 to 256. */
function oneTo256(v: string): number {
  if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 256) {
    throw new InvalidArgumentError('expected a whole number from 1 to 256');
  }
  return Number(v);
}

/** `--blas-threads N`: OpenBLAS threads of this process's native matrix products (issue 16). */
export const blasThreadsOption = () =>
  new Option(
    '--blas-threads <n>',
    "BLAS threads of the native matrix products (over MARS_LAB_BLAS_THREADS and the run config's blasThreads; default: every core for a run alone, its share beside others)",
  ).argParser(oneTo256);

/** What initBackend is asked for: the flag when given, else the run config's blasThreads (the environment sits between). */
export function blasThreadsFor(
  flag: number | undefined,
  config?: { blasThreads?: number },
): NativeOptions['blasThreads'] {
  if (flag !== undefined) return { threads: flag, from: 'flag' };
  return config?.blasThreads !== undefined ? { threads: config.blasThreads, from: 'config' } : undefined;
}

/**
 * `--worker-slots N`: this process is one of N side by side (the host's worker slots, a local study's parallel runs),
 * so its default BLAS threads are cores / N (engine/tensor/native/addon.ts defaultBlasThreads). Set before the backend starts.
 */
export const workerSlotsOption = () =>
  new Option(
    '--worker-slots <n>',
    'how many processes share the cores with this one (default BLAS threads: cores / N)',
  ).argParser(oneTo256);

/** Applies --worker-slots for this process and the processes it starts. */
export function applyWorkerSlots(slots: number | undefined): void {
  if (slots !== undefined) process.env[WORKER_SLOTS_ENV] = String(slots);
}
