/**
 * The MARTI config refuses a training pool or a held-out set larger than the distinct targets its operation range can
 * have (issue 19: trainTasks 100000 with 1–2 operations passed the form and failed only when the trainer built its
 * pool, where 2,415 exist). The bound is an upper bound: generateTasks never finds more.
 */
import { describe, expect, it } from 'vitest';
import { checkRunConfig } from '../../../engine/runs/config/configSchema';
import {
  DEFAULT_TASK_SPEC,
  TaskPoolExhaustedError,
  generateTasks,
  targetPoolBound,
} from '../../../engine/marti/tasks/generator';

const issuesOf = (config: Record<string, unknown>): string[] => {
  const checked = checkRunConfig({ algorithm: 'marti', ...config });
  return checked.success ? [] : checked.issues.map((i) => `${i.path}: ${i.message}`);
};

describe('MARTI task pool bound in the config check', () => {
  it('refuses trainTasks past the pool of 1–2 operation targets, naming the field and the bound', () => {
    const issues = issuesOf({ task: { trainTasks: 100_000, minOps: 1, maxOps: 2 } });
    expect(issues).toHaveLength(1);
    expect(issues[0]).toMatch(
      /^task\.trainTasks: at most \d+ distinct training targets of 1–2 operations exist .*raise task\.maxOps — 100000 asked for$/,
    );
    const bound = Number(/at most (\d+)/.exec(issues[0]!)![1]);
    expect(bound).toBeGreaterThan(2000);
    expect(bound).toBeLessThan(5000);
  });

  it("refuses eval.items past the held-out pool, and accepts the presets' sizes", () => {
    expect(issuesOf({ task: { trainTasks: 40, minOps: 1, maxOps: 1 }, eval: { items: 300 } }).join('\n')).toMatch(
      /^eval\.items: at most \d+ distinct held-out targets of 1–1 operations/,
    );
    expect(issuesOf({ task: { trainTasks: 2000, minOps: 1, maxOps: 2 }, eval: { items: 256 } })).toEqual([]);
    expect(issuesOf({ task: { trainTasks: 100_000 } })).toEqual([]); // 2–5 operations: far more targets than the field's maximum
  });

  it('is never below what generateTasks can find (1 operation: the whole pool)', () => {
    const spec = { ...DEFAULT_TASK_SPEC, minOps: 1, maxOps: 1 };
    let found = -1;
    try {
      generateTasks('train', 1, 1000, spec);
    } catch (e) {
      if (!(e instanceof TaskPoolExhaustedError)) throw e;
      found = e.found;
    }
    expect(found).toBeGreaterThan(0);
    expect(targetPoolBound('train', 1, 1)).toBeGreaterThanOrEqual(found);
    expect(targetPoolBound('train', 1, 2)).toBeGreaterThanOrEqual(2415); // generateTasks' count for seed 1, measured (~24 s)
  });
});
