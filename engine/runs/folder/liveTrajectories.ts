/**
 * live.json: the trajectories of the step in flight, for windows that watch a run grow (MARTI's search trees, node by
 * node). The run loop replaces the file whenever the trainer reports progress and removes it when the step's final
 * records are in trajectories.jsonl, so it never holds a finished step and trajectories.jsonl stays the only record of
 * one. Nothing reads it to train, evaluate or resume: a crash may leave one behind, which the next start removes.
 *
 * It is replaced by rename without fsync: a torn or lost live.json costs a window one update, nothing else.
 */
import fs from 'node:fs';
import { RECORD_VERSION } from '../../records/version';
import { MAX_RECORD_DEPTH, readHomeText, valueNestedDeeper } from './homeFile';
import { replaceFile } from './runFolder';

export interface LiveTrajectories {
  /** The step in flight (the step its records will be written under). */
  step: number;
  /** Seconds since the epoch, when the file was written. */
  time: number;
  /** The step's trajectories as they stand, in the form trajectories.jsonl holds them (each with `step`). */
  records: unknown[];
}

export function writeLiveTrajectories(file: string, live: LiveTrajectories): void {
  replaceFile(file, JSON.stringify({ version: RECORD_VERSION, ...live }), { durable: false });
}

export function clearLiveTrajectories(file: string): void {
  fs.rmSync(file, { force: true });
}

/** The largest live.json read: a MARTI step's trees in flight are a few MB. */
export const MAX_LIVE_BYTES = 64 << 20;

/**
 * The file's contents, or null when there is none (between steps) or it cannot be read (not a regular file, a link
 * out of the run's folder, larger than MAX_LIVE_BYTES, not JSON). A record nested deeper than any the engine writes is
 * left out and counted in `skipped`, so the valid records beside it still reach the windows.
 */
export function readLiveTrajectories(file: string): (LiveTrajectories & { skipped: number }) | null {
  let text: string | null;
  try {
    text = readHomeText(file, MAX_LIVE_BYTES);
  } catch {
    return null;
  }
  if (text === null) return null;
  try {
    // V8's JSON.parse takes any depth without recursion; the walks after it would not, hence the filter below.
    const v = JSON.parse(text) as Partial<LiveTrajectories>;
    if (typeof v !== 'object' || v === null || typeof v.step !== 'number' || !Array.isArray(v.records)) return null;
    const records = v.records.filter((r) => !valueNestedDeeper(r, MAX_RECORD_DEPTH));
    return {
      step: v.step,
      time: typeof v.time === 'number' ? v.time : 0,
      records,
      skipped: v.records.length - records.length,
    };
  } catch {
    return null;
  }
}
