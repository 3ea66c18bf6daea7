/**
 * Every metric a short real run of each algorithm logs (training lines and the evaluation's eval.* keys) has a
 * declaration in engine/pure/metricCatalog.ts: a description, a unit and a dashboard panel. A metric added to a trainer
 * without a declaration fails here. Also: the default dashboard puts reward and the held-out score first, and draws
 * per-agent and per-family series on one chart each.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig, type RunConfigInput } from '../../../engine/runs/config/configSchema';
import { HEADLINE_METRICS } from '../../../engine/runs/summary/headlineMetric';
import { dashboard, describeMetric, metricCatalog } from '../../../engine/pure/metricCatalog';
import { runFilePaths } from '../../../engine/runs/folder/runFolder';
import { startRun } from '../../../engine/runs/runLoop';
import { useBackend } from '../../helpers/backends';
import { quickConfig } from '../../helpers/runFixtures';

let home: string;
beforeAll(async () => {
  await useBackend('wasm');
  home = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-lab-catalog-'));
});
afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

/** The metric names (not step, time) of every line of a real run of `config`. */
async function loggedNames(config: RunConfigInput): Promise<string[]> {
  const outcome = await startRun(home, parseRunConfig(config));
  expect(outcome.status).toBe('finished');
  const names = new Set<string>();
  for (const line of fs.readFileSync(runFilePaths(outcome.dir).metrics, 'utf8').split('\n').filter(Boolean)) {
    for (const key of Object.keys(JSON.parse(line) as object)) if (key !== 'step' && key !== 'time') names.add(key);
  }
  return [...names].sort();
}

const undeclared = (algorithm: string, names: string[]) => names.filter((n) => !describeMetric(algorithm, n));

const marti = (configuration: string): RunConfigInput =>
  ({
    algorithm: 'marti',
    seed: 7,
    backend: 'wasm',
    model: { size: 'micro' },
    task: { trainTasks: 10, maxProgramTokens: 8 },
    marti: {
      configuration,
      problemsPerStep: 2,
      nodesPerTree: 3,
      trainBatch: 2,
      evalNodes: 2,
      tplus: { enabled: true, nodes: 3 },
    },
    rl: { lr: 1e-2, klCoef: 1e-3 },
    budget: { steps: 1 },
    eval: { every: 1, items: 2 },
    checkpoint: { every: 1 },
  }) as RunConfigInput;

describe('metric catalog', () => {
  it('declares every metric of a seqgrpo run (with a KL reference)', async () => {
    const names = await loggedNames({
      ...quickConfig({ steps: 2, evalEvery: 2 }),
      rl: { lr: 3e-3, klCoef: 1e-3 },
    });
    expect(names).toContain('eval.accuracy');
    expect(names).toContain('kl');
    expect(undeclared('seqgrpo', names)).toEqual([]);
  }, 120_000);

  it('declares every metric of a MARS run', async () => {
    const names = await loggedNames({
      algorithm: 'mars',
      seed: 5,
      backend: 'wasm',
      model: { size: 'micro' },
      task: { questionsPerStep: 2, groupSize: 3, trainWorlds: 2, evalWorlds: 1 },
      mars: { maxTurns: 2, sys2TurnMax: 12, sys1ResponseMax: 8, sys1Params: 'separate' },
      rl: { lr: 1e-2 },
      budget: { steps: 1 },
      eval: { every: 1, items: 20 },
      checkpoint: { every: 1 },
    });
    expect(names).toContain('eval.exactMatch');
    expect(names.some((n) => n.startsWith('eval.exactMatch.'))).toBe(true);
    expect(undeclared('mars', names)).toEqual([]);
    const panels = dashboard('mars', names);
    expect(panels[0]!.id).toBe('headline');
    expect(panels[0]!.charts.slice(0, 2).map((c) => c.key)).toEqual(['reward', 'eval.exactMatch']);
    const family = panels.find((p) => p.id === 'families')!.charts.find((c) => c.key === 'eval.exactMatch.<family>')!;
    expect(family.names.length).toBe(names.filter((n) => n.startsWith('eval.exactMatch.')).length);
    expect(family.members.every((m) => typeof m === 'string')).toBe(true);
  }, 180_000);

  it('declares every metric of heterogeneous and homogeneous MARTI runs; per-agent series share a chart', async () => {
    const hetero = await loggedNames(marti('heterogeneous'));
    expect(hetero.some((n) => n.startsWith('agentReward.'))).toBe(true);
    expect(hetero.some((n) => n.startsWith('eval.tplus.div.'))).toBe(true);
    expect(undeclared('marti', hetero)).toEqual([]);
    const agents = dashboard('marti', hetero).find((p) => p.id === 'agents')!;
    const reward = agents.charts.find((c) => c.key === 'agentReward.<agent>')!;
    expect(reward.names.length).toBeGreaterThan(1);
    expect(
      dashboard('marti', hetero)[0]!
        .charts.slice(0, 2)
        .map((c) => c.key),
    ).toEqual(['reward', 'eval.pass1']);

    const homo = await loggedNames(marti('homogeneous'));
    expect(undeclared('marti', homo)).toEqual([]);
  }, 300_000);

  it("puts each algorithm's headline metric right after reward in the first panel", () => {
    for (const [algorithm, headline] of Object.entries(HEADLINE_METRICS)) {
      const names = metricCatalog(algorithm)
        .map((d) => d.name)
        .filter((n) => !n.includes('<'));
      expect(
        dashboard(algorithm, names)[0]!
          .charts.slice(0, 2)
          .map((c) => c.key),
      ).toEqual(['reward', headline.key]);
    }
  });

  it('an undeclared metric goes to the "other" panel, named as not declared', () => {
    const panels = dashboard('seqgrpo', ['reward', 'mystery']);
    expect(panels.map((p) => p.id)).toEqual(['headline', 'other']);
    expect(panels[1]!.charts[0]!.description).toMatch(/not declared/);
  });
});
