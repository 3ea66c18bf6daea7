/**
 * The MARTI trainer's live view of a step (StepHooks.live): after every search round it reports each tree as it
 * stands. Each report holds every tree of the step; a reported tree is a prefix of the step's final tree in expansion
 * order (its nodes are the final tree's first nodes, with the same parents, agents, programs, results and selection
 * traces); reports grow by one node per tree per round; and watching changes nothing the step computes.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { parseRunConfig } from '../../../engine/runs/config/configSchema';
import type { MartiConfig } from '../../../engine/marti/configSchema';
import { createMartiTrainer } from '../../../engine/marti/trainer';
import { useBackend } from '../../helpers/backends';

beforeAll(() => useBackend('wasm'));

function config(over: Record<string, unknown> = {}): MartiConfig {
  return parseRunConfig({
    algorithm: 'marti',
    seed: 11,
    backend: 'wasm',
    model: { size: 'micro' },
    task: { trainTasks: 12, maxProgramTokens: 10 },
    marti: { configuration: 'heterogeneous', problemsPerStep: 3, nodesPerTree: 5, trainBatch: 4, ...over },
    rl: { klCoef: 0 },
    eval: { items: 2 },
  }) as MartiConfig;
}

interface NodeRec {
  id: number;
  parentId: number | null;
  [field: string]: unknown;
}
interface TreeRec {
  treeId: string;
  taskId: string;
  live?: boolean;
  budget?: number;
  nodes: NodeRec[];
}

/** The fields a node has from the moment it is added (posteriors, advantage and trained change or come later). */
const FIXED = [
  'id',
  'parentId',
  'depth',
  'agent',
  'paramId',
  'prompt',
  'completion',
  'program',
  'feedback',
  'parseError',
  'finish',
  'public',
  'private',
  'score',
  'genObservation',
  'expansion',
  'tokens',
] as const;
const fixed = (n: NodeRec) => Object.fromEntries(FIXED.map((k) => [k, n[k]]));

describe('MARTI live trees', () => {
  it('reports every tree after every round, each a growing prefix of its final tree in expansion order', async () => {
    const cfg = config();
    const tr = await createMartiTrainer(cfg);
    const reports: TreeRec[][] = [];
    try {
      for (let step = 1; step <= 2; step++) {
        reports.length = 0;
        // copied as the run loop does (it writes them to live.json at once)
        const out = await tr.trainStep({
          live: (records) => reports.push(JSON.parse(JSON.stringify(records)) as TreeRec[]),
        });
        const finals = JSON.parse(JSON.stringify(out.trajectories)) as TreeRec[];
        expect(finals).toHaveLength(3);
        // one report per round; every tree gains one node per round, so there are as many rounds as nodes per tree
        expect(reports).toHaveLength(cfg.marti.nodesPerTree);
        reports.forEach((report, r) => {
          expect(report.map((t) => t.treeId)).toEqual(finals.map((t) => t.treeId));
          report.forEach((tree, i) => {
            const final = finals[i]!;
            expect(tree.live).toBe(true);
            expect(tree.budget).toBe(cfg.marti.nodesPerTree);
            expect(tree.taskId).toBe(final.taskId);
            // the root and the first r + 1 expansions, in expansion order
            expect(tree.nodes.map((n) => n.id)).toEqual(Array.from({ length: r + 2 }, (_, k) => k));
            expect(tree.nodes.map(fixed)).toEqual(final.nodes.slice(0, r + 2).map(fixed));
            // not trained yet: no advantages in a live tree
            expect(tree.nodes.every((n) => n['advantage'] === null && n['trained'] === false)).toBe(true);
          });
        });
        // the last report holds every node of the final trees
        expect(reports.at(-1)!.map((t) => t.nodes.length)).toEqual(finals.map((t) => t.nodes.length));
      }
    } finally {
      tr.dispose();
    }
  });

  it('watching changes nothing: the same steps with and without the hook give the same trees and metrics', async () => {
    const strip = (m: Record<string, number>) =>
      Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('timing.')));
    const [watched, plain] = [await createMartiTrainer(config()), await createMartiTrainer(config())];
    try {
      let reports = 0;
      for (let step = 1; step <= 2; step++) {
        const a = await watched.trainStep({ live: () => reports++ });
        const b = await plain.trainStep();
        expect(JSON.stringify(a.trajectories)).toBe(JSON.stringify(b.trajectories));
        expect(strip(a.metrics)).toEqual(strip(b.metrics));
        expect(b.metrics['timing.liveMs']).toBe(0);
      }
      expect(reports).toBe(2 * 5);
    } finally {
      watched.dispose();
      plain.dispose();
    }
  });
});
