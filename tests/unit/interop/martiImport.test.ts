/**
 * `import marti`: llm_logs generated to MARTI's format (trainerFormats.ts writeMartiCall, as generate_fn_async writes
 * them) become search trees: calls cut into trees of --nodes per prompt folder, parents inferred from the code a
 * refinement's prompt quotes, scores from the evaluation CSVs where they cover a tree, advantages recomputed per tree.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { importMarti, pythonBlock, treeScores } from '../../../engine/interop/import/marti';
import { trajectoryLineSchema } from '../../../engine/records';
import { readJsonl } from '../../../engine/runs/folder/jsonl';
import { readRunMeta } from '../../../engine/runs/folder/runFolder';
import { openRunIndex } from '../../../engine/runs/summary/runIndex';
import { martiCodePrompt, writeMartiCall, writeMartiScores } from './trainerFormats';

let tmp: string;
let home: string;
let save: string;
beforeEach(() => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mars-marti-'));
  home = path.join(tmp, 'home');
  save = path.join(tmp, 'outputs', 'workflow', 'group_norm-Qwen3-8B-CODE-multi_agent_mcts');
});
afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

interface Node {
  id: number;
  parentId: number | null;
  depth: number;
  agent: string | null;
  score: number | null;
  advantage: number | null;
  program: string | null;
  logProbs?: number[];
}
type Tree = {
  step: number;
  treeId: string;
  taskId: string;
  agents: string[];
  nodes: Node[];
  advantageRecomputed: boolean;
};

const code = (body: string) => `Here is my solution.\n\`\`\`python\n${body}\n\`\`\``;

/** One search of three calls on `problem`: a GEN from the root by agent 0, a refinement of it by agent 1, a GEN by 1. */
function search(promptId: number, problem: string, second: number) {
  const s = (ms: number) => `20260401_1200${String(second).padStart(2, '0')}_${String(ms).padStart(3, '0')}`;
  const a = 'def f(x):\n    return x + 1';
  const b = 'def f(x):\n    return x + 2';
  writeMartiCall(save, promptId, {
    agentId: '0',
    messages: martiCodePrompt(problem),
    actionText: code(a),
    actionTokens: [1, 2, 3],
    actionLogProbs: [-0.1, -0.2, -0.3],
    stamp: s(100),
  });
  writeMartiCall(save, promptId, {
    agentId: '1',
    messages: martiCodePrompt(problem, a),
    actionText: code(b),
    actionTokens: [4, 5],
    actionLogProbs: [-1, -2],
    stamp: s(200),
  });
  writeMartiCall(save, promptId, {
    agentId: '1',
    messages: martiCodePrompt(problem),
    actionText: 'I am not sure — no code.',
    actionTokens: [6],
    actionLogProbs: null,
    stamp: s(300),
  });
}

describe('import marti', () => {
  it("cuts each prompt folder's calls into trees of --nodes (one per step) and infers parents from quoted code", async () => {
    search(0, 'Add one to x.', 1);
    search(1, 'Add two to x.', 2);
    search(0, 'Double x.', 3); // the next step reuses prompt folder 0 with another problem
    search(1, 'Halve x.', 4);
    const r = await importMarti({ home, dir: save, nodesPerTree: 3 });
    expect(r.records).toBe(12);
    expect(r.steps).toBe(2);
    const trees = readJsonl<Tree>(path.join(r.dir, 'trajectories.jsonl')).records;
    expect(trees.map((t) => [t.step, t.treeId])).toEqual([
      [1, '0#1'],
      [1, '1#1'],
      [2, '0#2'],
      [2, '1#2'],
    ]);
    const t = trees[0]!;
    expect(t.agents).toEqual(['0', '1']);
    expect(t.nodes.map((n) => [n.id, n.parentId, n.depth, n.agent])).toEqual([
      [0, null, 0, null],
      [1, 0, 1, '0'],
      [2, 1, 2, '1'], // its prompt quotes node 1's code: a refinement of node 1
      [3, 0, 1, '1'],
    ]);
    expect(t.nodes[1]!.program).toBe('def f(x):\n    return x + 1');
    // the action's log-probabilities are the last of rollout_log_probs (the prompt's positions are 0.0)
    expect(t.nodes[1]!.logProbs).toEqual([-0.1, -0.2, -0.3]);
    expect(t.nodes[3]!.logProbs).toEqual([]);
    // the same problem at another step is the same task; another problem in the same folder is not
    expect(new Set(trees.map((x) => x.taskId)).size).toBe(4);
    // MARTI writes no scores in training: unknown, and so are the advantages
    expect(t.nodes.slice(1).every((n) => n.score === null && n.advantage === null)).toBe(true);
    // a tree with unknown scores is still a record the views read (score and pass@k null)
    for (const tree of trees) expect(trajectoryLineSchema.safeParse(tree).error).toBeUndefined();
    const meta = readRunMeta(r.dir) as ReturnType<typeof readRunMeta> & { imported: Record<string, unknown> };
    expect(meta.algorithm).toBe('marti');
    expect(meta.imported['advantages']).toMatchObject({ recomputed: true, method: 'group_norm', eps: 1e-9 });
    expect(
      openRunIndex(home)
        .list()
        .find((x) => x.id === r.id)?.steps,
    ).toBe(2);
  });

  it("takes scores from MARTI's evaluation CSVs where they cover a tree, and recomputes group_norm advantages", async () => {
    search(0, 'Add one to x.', 1);
    search(1, 'Add two to x.', 2);
    writeMartiScores(save, 'public', [
      [0, 0, 0],
      [0, 1, 1],
      [0, 2, 0],
    ]);
    writeMartiScores(save, 'private', [
      [0, 0, 0],
      [0, 1, 0.8],
      [0, 2, 0],
    ]);
    const r = await importMarti({ home, dir: save });
    const trees = readJsonl<Tree>(path.join(r.dir, 'trajectories.jsonl')).records;
    const nodes = trees[0]!.nodes.slice(1);
    expect(nodes.map((n) => n.score)).toEqual([0, 1, 0]);
    // (r − mean) / (std + 1e-9), torch.std: mean 1/3, std √(1/3)
    const std = Math.sqrt(((1 / 3) ** 2 * 2 + (2 / 3) ** 2) / 2);
    expect(nodes[1]!.advantage).toBeCloseTo((1 - 1 / 3) / (std + 1e-9), 9);
    expect(nodes[0]!.advantage).toBeCloseTo(-1 / 3 / (std + 1e-9), 9);
    expect(trees[0]!.advantageRecomputed).toBe(true);
    // folder 1 has no rows: unknown
    expect(trees[1]!.nodes.slice(1).every((n) => n.score === null)).toBe(true);
    // pass@1: the private score of the best node by public score (node 1: 0.8); a tree with every score fits the record
    expect((trees[0] as unknown as { metrics: object }).metrics).toEqual({
      nodes: 3,
      pass1: 0.8,
      passN: 0.8,
      avgPass1: 0.8,
      gap: 0,
    });
    expect(trajectoryLineSchema.safeParse(trees[0]).success).toBe(true);
    const metrics = readJsonl<Record<string, number>>(path.join(r.dir, 'metrics.jsonl')).records;
    expect(metrics[0]!['reward']).toBeCloseTo(1 / 3, 12);
  });

  it('without --nodes, a folder holding several searches is one tree, and a warning says to pass --nodes', async () => {
    search(0, 'Add one to x.', 1);
    search(0, 'Double x.', 3);
    const warnings: string[] = [];
    const r = await importMarti({ home, dir: save, onWarning: (w) => warnings.push(w) });
    expect(r.steps).toBe(1);
    expect(warnings).toEqual([expect.stringMatching(/^0: calls on 2 different prompts made one tree: pass --nodes N/)]);
    const [tree] = readJsonl<Tree>(path.join(r.dir, 'trajectories.jsonl')).records;
    expect(tree!.nodes.map((x) => x.depth)).toEqual([0, 1, 2, 1, 1, 2, 1]);
  });

  it('a damaged call file is one warning naming it; the other calls are imported', async () => {
    search(0, 'Add one to x.', 1);
    const bad = path.join(save, '0', 'llm_logs', 'log_20260401_120001_150_0.txt');
    fs.writeFileSync(bad, '{\n    "agent_id": "0",\n    "result": {\n        "request": {');
    const warnings: string[] = [];
    const r = await importMarti({ home, dir: save, onWarning: (w) => warnings.push(w) });
    expect(warnings).toEqual([expect.stringMatching(/^0\/llm_logs\/log_20260401_120001_150_0\.txt:1: not JSON/)]);
    expect(r.records).toBe(3);
  });

  it("scores a tree as MARTI's get_coverage_and_passk does (ties in public score: the later node)", () => {
    expect(treeScores([1, 0.5, 1], [0.2, 0.9, 0.6])).toEqual({
      pass1: 0.6,
      passN: 0.9,
      avgPass1: 0.4,
      gap: 0.30000000000000004,
    });
    expect(treeScores([0, 0.5], [0.1, 0.3])).toEqual({ pass1: 0.3, passN: 0.3, avgPass1: 0.3, gap: 0 });
    expect(treeScores([1, null], [1, 1]).pass1).toBeNull();
  });

  it("finds a python block as MARTI's parse_python_code does", () => {
    expect(pythonBlock('x\n```python\na = 1\n\tb = 2\n```\ny')).toBe('a = 1\n    b = 2');
    expect(pythonBlock('no code')).toBeNull();
  });
});
