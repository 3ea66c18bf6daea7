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

/** The file's contents, or null when there is none (between steps) or it cannot be read. */
export function readLiveTrajectories(file: string): LiveTrajectories | null {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    return null;
  }
  try {
    const v = JSON.parse(text) as Partial<LiveTrajectories>;
    if (typeof v.step !== 'number' || !Array.isArray(v.records)) return null;
    return { step: v.step, time: typeof v.time === 'number' ? v.time : 0, records: v.records };
  } catch {
    return null;
  }
}
