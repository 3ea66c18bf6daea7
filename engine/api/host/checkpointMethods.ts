/**
 * The host's methods for checkpoints: one scored on its run's held-out items, two compared on the same items. Each
 * runs in a `run-worker` process (workerLaunch.ts) on a checkpoint folder checked to be complete and inside the
 * folders a window may name; the answers' numbers are made JSON-safe here.
 */
import path from 'node:path';
import { RUN_FILES } from '../../runs/folder/home';
import { isCompleteCheckpoint, listCheckpoints } from '../../runs/folder/runFolder';
import { UserError } from '../../base/userError';
import type { ApiResponse } from '../contract/contract';
import { workerComparisonSchema, workerEvalSchema, workerResult } from '../workers/runLauncher';
import type { ApiHandlers } from './host';
import type { HostContext } from './hostContext';
import { checkCheckpointDir } from './hostGuards';
import { jsonSafeNumbers } from './jsonValues';

type CheckpointRef = { runId: string; step: number };

function evalOut(value: unknown, ref: CheckpointRef): ApiResponse<'evaluateCheckpoint'> {
  const r = value as {
    checkpoint: string;
    identity: Record<string, string | number | boolean>;
    metrics: Record<string, number>;
    items: ApiResponse<'evaluateCheckpoint'>['items'];
    cached: boolean;
  };
  return {
    checkpoint: r.checkpoint,
    runId: ref.runId,
    step: ref.step,
    identity: r.identity,
    metrics: jsonSafeNumbers(r.metrics),
    items: r.items,
    cached: r.cached,
  };
}

export function createCheckpointMethods(
  ctx: HostContext,
): Pick<ApiHandlers, 'evaluateCheckpoint' | 'compareCheckpoints'> {
  const { home, roots, dirOf, launchWorker } = ctx;

  const checkpointDir = (ref: CheckpointRef): string => {
    const dir = path.join(dirOf(ref.runId), RUN_FILES.checkpoints, String(ref.step));
    if (!isCompleteCheckpoint(dir)) {
      const have = listCheckpoints(dirOf(ref.runId)).map((c) => c.step);
      throw new UserError(
        `run ${ref.runId} has no checkpoint at step ${ref.step} (it has: ${have.join(', ') || 'none'})`,
      );
    }
    // checkpoints/<step> may be a symbolic link out of the home (a copied-in run): follow it before a worker reads it.
    checkCheckpointDir(dir, roots, `run ${ref.runId} step ${ref.step}`);
    return dir;
  };

  return {
    async evaluateCheckpoint(ref) {
      const read = await launchWorker(
        { kind: 'evaluate', home, checkpoint: checkpointDir(ref) },
        workerResult(home, workerEvalSchema),
      );
      return evalOut(read(), ref);
    },

    async compareCheckpoints({ a, b }) {
      const read = await launchWorker(
        { kind: 'compare', home, a: checkpointDir(a), b: checkpointDir(b) },
        workerResult(home, workerComparisonSchema),
      );
      const c = read() as Omit<ApiResponse<'compareCheckpoints'>, 'a' | 'b' | 'metrics'> & {
        a: unknown;
        b: unknown;
        metrics: { name: string; a: number; b: number; diff: number }[];
      };
      const finite = (v: number): number | null => (Number.isFinite(v) ? v : null);
      return {
        identity: c.identity,
        a: evalOut(c.a, a),
        b: evalOut(c.b, b),
        metrics: c.metrics.map((m) => ({ name: m.name, a: finite(m.a), b: finite(m.b), diff: finite(m.diff) })),
        flippedToWrong: c.flippedToWrong,
        flippedToRight: c.flippedToRight,
        mcnemar: c.mcnemar,
        scoreDiff: c.scoreDiff,
      };
    },
  };
}
