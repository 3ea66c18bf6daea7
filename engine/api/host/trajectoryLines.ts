/**
 * The byte offsets and steps of each run's trajectories.jsonl lines (engine/runs/trajectories/trajectoryIndex.ts), kept
 * in memory for the runs read most recently: a file of gigabytes is indexed once and then only its new lines are read.
 */
import path from 'node:path';
import { RUN_FILES } from '../../runs/folder/home';
import { checkHomeFile } from '../../runs/folder/homeFile';
import { updateTrajectoryIndex, type TrajectoryIndex } from '../../runs/trajectories/trajectoryIndex';

/** Runs whose trajectories.jsonl index the host keeps in memory (engine/runs/trajectories/trajectoryIndex.ts). */
const TRAJECTORY_INDEXES_KEPT = 16;

export interface TrajectoryLines {
  /** A run's index, brought up to date with its file. */
  lines(runId: string): TrajectoryIndex;
  /** A resume cut trajectories.jsonl back: its index is built again on the next request. */
  forget(runId: string): void;
}

export function keptTrajectoryLines(dirOf: (runId: string) => string): TrajectoryLines {
  /** Per run, the byte offsets and steps of trajectories.jsonl's lines (engine/runs/trajectories/trajectoryIndex.ts). */
  const trajectoryIndexes = new Map<string, TrajectoryIndex>();
  return {
    lines(runId) {
      const file = path.join(dirOf(runId), RUN_FILES.trajectories);
      // A FIFO would block the host in open(), a link out of the run's folder read elsewhere: refused (homeFile.ts).
      checkHomeFile(file);
      const index = updateTrajectoryIndex(file, trajectoryIndexes.get(runId));
      // the most recently read runs' indexes are kept (a few MB each for a file of gigabytes)
      trajectoryIndexes.delete(runId);
      trajectoryIndexes.set(runId, index);
      if (trajectoryIndexes.size > TRAJECTORY_INDEXES_KEPT) {
        trajectoryIndexes.delete(trajectoryIndexes.keys().next().value!);
      }
      return index;
    },
    forget(runId) {
      trajectoryIndexes.delete(runId);
    },
  };
}
