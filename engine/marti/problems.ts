/**
 * The problems a MARTI config names (docs/algorithms.md §3.8, §3.9): the task generator's spec from `task.*`, the
 * training pool and the held-out problems (generated, or the first eval.items of a user's task file), cached per
 * seed, size and spec. Shared by the trainer and the evaluation, so neither imports the other for its problems.
 */
import { UserError } from '../base/userError';
import type { MartiConfig } from './configSchema';
import {
  DEFAULT_TASK_SPEC,
  TaskPoolExhaustedError,
  generateTasks,
  type MartiTask,
  type TaskSpec,
} from './tasks/generator';
import { loadMartiTaskFile } from './tasks/taskFile';

export function taskSpec(cfg: MartiConfig): TaskSpec {
  const t = cfg.task;
  return {
    ...DEFAULT_TASK_SPEC,
    minOps: t.minOps,
    maxOps: t.maxOps,
    publicTests: t.publicTests,
    privateTests: t.privateTests,
    vagueShare: t.vagueShare,
  };
}

const taskCache = new Map<string, MartiTask[]>();
/** `n` generated problems of `split` (train: the training pool; heldout: evaluation), cached. */
export function tasksOf(cfg: MartiConfig, split: 'train' | 'heldout', n: number): MartiTask[] {
  const key = `${split}:${cfg.task.taskSeed}:${n}:${JSON.stringify(taskSpec(cfg))}`;
  let ts = taskCache.get(key);
  if (!ts) {
    try {
      ts = generateTasks(split, cfg.task.taskSeed, n, taskSpec(cfg));
    } catch (e) {
      if (!(e instanceof TaskPoolExhaustedError)) throw e;
      const field = split === 'train' ? 'task.trainTasks' : 'eval.items';
      throw new UserError(`${field}: ${e.message} (task.maxOps)`);
    }
    taskCache.set(key, ts);
  }
  return ts;
}
/** The held-out problems: generated, or the first eval.items of a user's task file (task.file). */
export const heldoutTasks = (cfg: MartiConfig) =>
  cfg.task.file
    ? loadMartiTaskFile(cfg.task.file).tasks.slice(0, cfg.eval.items)
    : tasksOf(cfg, 'heldout', cfg.eval.items);
