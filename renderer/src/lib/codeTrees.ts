/**
 * A tree of Python programs as `mars-lab code tree` writes it (engine/records/codeTree.ts, read by the host's
 * getCodeTrees) in the form the tree view draws (a MARTI tree record: TreeView.svelte), so code trees get the same
 * drawing, timeline and keyboard as the toy language's; what only Python nodes have (each test's outcome, the reply,
 * the status) stays on the line and is drawn by components/code/CodeNodeDetail.svelte. The root stands for the
 * problem; a node's public and private results are its tests (the code search has no hidden split: its verifier is
 * the evaluation's tests, pythonTrees.ts). A martipy run's tree (a `code.tree` record of its trajectories.jsonl) is the
 * same line with each node's advantage and the step that grew it: the tree view shows both.
 */
import { martiTreeRoot } from '../../../engine/pure/martiTreeRoot';
import type { CodeTreeLine, CodeTreeNode } from '../../../engine/records/codeTree';
import type { MartiNode, MartiTreeRecord } from './trajectories';

export type { CodeTreeLine, CodeTreeNode };

/** A line whose nodes may carry their GRPO advantage (a martipy run's `code.tree` record); a folder's lines have none. */
export type CodeTreeLineOrRecord = Omit<CodeTreeLine, 'nodes'> & { nodes: (CodeTreeNode & { advantage?: number })[] };

/** One line of the problem: HumanEval's docstring's first sentence (with the function's name), MBPP's statement. */
export function problemTitle(line: Pick<CodeTreeLine, 'task_id' | 'prompt' | 'entry_point'>): string {
  const prompt = line.prompt ?? '';
  const doc = (/("""|''')\s*([\s\S]*?)\1/.exec(prompt)?.[2] ?? prompt).split(/>>>|\bExample|\bFor example/)[0]!;
  const first =
    doc
      .split(/\n\s*\n/)[0]!
      .replace(/\s+/g, ' ')
      .trim()
      .split(/(?<=\.)\s/)[0] ?? '';
  const text = first.length > 100 ? `${first.slice(0, 99)}…` : first;
  if (!text) return line.task_id;
  return line.entry_point ? `${line.entry_point}: ${text}` : text;
}

function outcome(n: CodeTreeNode): MartiNode['public'] {
  if (!n.tests) return null;
  const passed = n.tests.filter((t) => t.passed).length;
  return { passed, total: n.tests.length, score: n.score };
}

function nodeOf(n: CodeTreeNode & { advantage?: number }): MartiNode {
  return {
    id: n.id,
    parentId: n.parent,
    depth: n.depth,
    agent: n.agent,
    paramId: null,
    prompt: n.prompt,
    completion: n.reply,
    program: n.program,
    feedback: n.feedback,
    parseError: n.program === null ? n.reason : null,
    finish: n.finish,
    public: outcome(n),
    private: outcome(n),
    score: n.score,
    genObservation: null,
    expansion: null,
    advantage: n.advantage ?? null,
    shapedReward: null,
    trained: false,
    tokens: n.reply_tokens,
  };
}

/** The root stands for the problem: no prompt, no score. */
const ROOT: MartiNode = martiTreeRoot(null, null);

/**
 * The tree view's record of one problem's tree (`mode`: the search, plain or tplus); `step`: the training step that grew
 * it (a martipy run's), which the tree view names instead of an origin.
 */
export function codeTreeRecord(line: CodeTreeLineOrRecord, search: string, step = 0): MartiTreeRecord {
  const nodes = line.nodes.map(nodeOf);
  const passed: number[] = line.nodes.map((n) => (n.passed ? 1 : 0));
  const agents = [...new Set(line.nodes.map((n) => n.agent))];
  return {
    kind: 'marti.tree',
    version: 1,
    step,
    mode: search,
    treeId: line.task_id,
    taskId: line.task_id,
    statement: problemTitle(line),
    target: '',
    publicTests: [],
    agents: agents.length ? agents : ['policy'],
    metrics: {
      nodes: nodes.length,
      pass1: passed.length ? passed[0]! : null,
      passN: passed.length ? Math.max(...passed) : null,
      avgPass1: passed.length ? passed.reduce((a, b) => a + b, 0) / passed.length : null,
      gap: null,
    },
    agentShares: {},
    nodes: [ROOT, ...nodes],
  };
}

/** The node a refinement refines, when both have a program (a diff needs two). */
export function parentProgram(line: CodeTreeLine, node: CodeTreeNode): string | null {
  if (node.parent === 0 || node.program === null) return null;
  return line.nodes.find((n) => n.id === node.parent)?.program ?? null;
}
